#include "core/record.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <istream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/check_line_fast.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/record_json.h"
#include "core/safe_text.h"
#include "core/strict_json.h"
#include "core/text_compare.h"
#include "core/unique_ids.h"

namespace driftgate {

namespace {

using Json = nlohmann::ordered_json;

// The header's tolerance object: the bytes of the check lines' one writer
// (core/check_line.h), as a member of the header's DOM.
Json tolerance_json(const Tolerance& tolerance) {
  std::string text;
  append_tolerance_json(text, tolerance);
  return Json::parse(text);
}

Json tolerance_override_json(const ToleranceOverride& entry) {
  Json json = Json::object();
  for (const auto& [key, value] :
       {std::pair{"target", &entry.target}, {"output", &entry.output}, {"dtype", &entry.dtype}}) {
    if (!value->empty()) {
      json[key] = *value;
    }
  }
  if (entry.rule) {
    json["rule"] = to_string(*entry.rule);
  }
  for (const auto& [key, value] : {std::pair{"atol", &entry.atol}, {"rtol", &entry.rtol}, {"k", &entry.k}}) {
    if (*value) {
      json[key] = **value;
    }
  }
  json["origin"] = entry.origin;
  return json;
}

ToleranceOverride parse_tolerance_override(const Json& json) {
  const JsonFields fields(json);
  if (!json.is_object()) {
    throw Error("a tolerances entry must be an object, got " + json.dump());
  }
  ToleranceOverride entry;
  for (const auto& [key, value] :
       {std::pair{"target", &entry.target}, {"output", &entry.output}, {"dtype", &entry.dtype}}) {
    if (fields.has(key)) {
      *value = fields.text(key);
    }
  }
  if (fields.has("rule")) {
    entry.rule = parse_tolerance_rule(fields.text("rule"));
  }
  for (const auto& [key, value] : {std::pair{"atol", &entry.atol}, {"rtol", &entry.rtol}, {"k", &entry.k}}) {
    if (fields.has(key)) {
      *value = fields.number(key);
    }
  }
  entry.origin = fields.text("origin");
  return entry;
}

Json environment_json(const Environment& environment) {
  Json keyed = Json::object();
  for (const auto& [name, value] : environment.keyed) {
    keyed[name] = value;
  }
  Json info = Json::object();
  for (const auto& [name, value] : environment.info) {
    info[name] = value;
  }
  return Json{{"keyed", keyed}, {"info", info}};
}

Environment parse_environment(const Json& json) {
  const JsonFields fields(json);
  Environment environment;
  for (const auto& [name, value] : fields.get("keyed").items()) {
    environment.keyed[name] = value.get<std::string>();
  }
  for (const auto& [name, value] : fields.get("info").items()) {
    environment.info[name] = value.get<std::string>();
  }
  return environment;
}

RunHeader parse_header(const Json& json) {
  const JsonFields fields(json);
  RunHeader header;
  header.schema = fields.small_integer("schema");
  if (header.schema != k_record_schema_version) {
    throw Error("record schema " + std::to_string(header.schema) + " is not supported (this driftgate reads " +
                std::to_string(k_record_schema_version) + "); re-run with this driftgate version");
  }
  header.tool_version = fields.text("tool_version");
  const Json& commit = fields.get("commit");
  header.commit.sha = JsonFields(commit).text("sha");
  header.commit.branch = JsonFields(commit).text("branch");
  header.commit.dirty = JsonFields(commit).boolean("dirty");
  header.environment = parse_environment(fields.get("environment"));
  if (fields.has("shard")) {
    const Json& shard = json["shard"];
    header.shard.index = JsonFields(shard).small_integer("index");
    header.shard.count = JsonFields(shard).small_integer("count");
    if (header.shard.count < 1 || header.shard.index < 0 || header.shard.index >= header.shard.count) {
      throw Error("shard " + std::to_string(header.shard.index) + "/" + std::to_string(header.shard.count) +
                  " is out of range (index must be 0..count-1)");
    }
  }
  std::string key = fields.text("env_key");
  if (key != header.environment.key()) {
    throw Error("env_key " + key + " does not match the environment it describes (" + header.environment.key() +
                "); the file was edited by hand or is corrupt");
  }
  for (const auto& item : fields.get("experiments")) {
    ExperimentHeader experiment;
    experiment.name = JsonFields(item).text("name");
    experiment.config_path = JsonFields(item).text("config_path");
    experiment.config_hash = JsonFields(item).text("config_hash");
    experiment.model_path = JsonFields(item).text("model_path");
    experiment.model_hash = JsonFields(item).text("model_hash");
    experiment.inputs = JsonFields(item).strings("inputs");
    experiment.reference = JsonFields(item).text("reference");
    experiment.targets = JsonFields(item).strings("targets");
    experiment.tolerance = tolerance_from_json(JsonFields(item).get("tolerance"));
    experiment.tolerance_origin = JsonFields(item).text("tolerance_origin");
    if (item.contains("tolerances")) {
      for (const auto& entry : JsonFields(item).get("tolerances")) {
        experiment.tolerance_overrides.push_back(parse_tolerance_override(entry));
      }
    }
    if (item.contains("input_args")) {
      for (const auto& entry : JsonFields(item).get("input_args")) {
        InputArgumentsRecord input;
        input.input = JsonFields(entry).text("input");
        require_printable(input.input, "input name");
        for (const auto& arg : JsonFields(entry).get("args")) {
          const JsonFields arg_fields(arg);
          InputArgumentRecord record;
          record.name = arg_fields.text("name");
          record.dtype = arg_fields.text("dtype");
          record.shape = arg_fields.integers("shape");
          record.source = arg_fields.text("source");
          record.path = arg_fields.has("path") ? arg_fields.text("path") : "";
          record.hash = arg_fields.has("hash") ? arg_fields.text("hash") : "";
          require_printable(record.name, "argument name");
          input.args.push_back(std::move(record));
        }
        experiment.input_args.push_back(std::move(input));
      }
    }
    require_printable(experiment.name, "experiment name");
    for (const auto& name : experiment.inputs) {
      require_printable(name, "input name");
    }
    require_printable(experiment.reference, "reference backend name");
    for (const auto& name : experiment.targets) {
      require_printable(name, "target backend name");
    }
    header.experiments.push_back(std::move(experiment));
  }
  return header;
}

RunSummary parse_summary(const Json& json) {
  const JsonFields fields(json);
  RunSummary summary;
  for (const auto& item : fields.get("experiments")) {
    ExperimentSummary experiment;
    experiment.name = JsonFields(item).text("name");
    require_printable(experiment.name, "experiment name");
    experiment.inputs = JsonFields(item).integer("inputs");
    experiment.targets = JsonFields(item).integer("targets");
    experiment.outputs = JsonFields(item).integer("outputs");
    experiment.expected_checks = JsonFields(item).integer("expected_checks");
    experiment.checks = JsonFields(item).integer("checks");
    summary.experiments.push_back(experiment);
  }
  summary.expected_checks = fields.integer("expected_checks");
  summary.checks = fields.integer("checks");
  for (const auto& [name, count] : fields.get("by_status").items()) {
    if (!count.is_number_integer()) {
      throw Error("field 'by_status' must map statuses to integers, got '" + name + "': " + count.dump());
    }
    summary.by_status[name] = count.get<int64_t>();
  }
  // Files written before a status existed (fail_task) do not list it: it counted 0.
  for (CheckStatus status : all_check_statuses()) {
    summary.by_status.emplace(to_string(status), 0);
  }
  return summary;
}

Json summary_json(const RunSummary& summary) {
  Json experiments = Json::array();
  for (const auto& experiment : summary.experiments) {
    experiments.push_back(Json{{"name", experiment.name},
                               {"inputs", experiment.inputs},
                               {"targets", experiment.targets},
                               {"outputs", experiment.outputs},
                               {"expected_checks", experiment.expected_checks},
                               {"checks", experiment.checks}});
  }
  Json by_status = Json::object();
  for (const auto& [name, count] : summary.by_status) {
    by_status[name] = count;
  }
  return Json{{"type", "summary"},
              {"expected_checks", summary.expected_checks},
              {"checks", summary.checks},
              {"by_status", by_status},
              {"experiments", experiments}};
}

}  // namespace

bool same_summary(const RunSummary& a, const RunSummary& b) {
  if (a.expected_checks != b.expected_checks || a.checks != b.checks || a.by_status != b.by_status ||
      a.experiments.size() != b.experiments.size()) {
    return false;
  }
  for (size_t i = 0; i < a.experiments.size(); ++i) {
    const auto& x = a.experiments[i];
    const auto& y = b.experiments[i];
    if (x.name != y.name || x.inputs != y.inputs || x.targets != y.targets || x.outputs != y.outputs ||
        x.expected_checks != y.expected_checks || x.checks != y.checks) {
      return false;
    }
  }
  return true;
}

RunSummary summarize_keys(const RunHeader& header, size_t count, const std::function<CheckKey(size_t)>& key_of) {
  RunSummary summary;
  // One pass over the checks (a run may hold millions): experiments by name, the
  // distinct outputs of each, counts by status.
  std::unordered_map<std::string_view, std::vector<size_t>> experiments_named;
  for (size_t i = 0; i < header.experiments.size(); ++i) {
    experiments_named[header.experiments[i].name].push_back(i);
  }
  std::vector<std::set<std::string_view>> outputs(header.experiments.size());
  std::vector<int64_t> counts(header.experiments.size(), 0);
  const std::vector<CheckStatus>& statuses = all_check_statuses();
  std::vector<int64_t> by_status(statuses.size(), 0);
  // Neighbouring checks mostly share their experiment and output: look them up only when they change.
  const std::vector<size_t>* last_named = nullptr;
  std::string_view last_experiment;
  std::string_view last_output;
  bool have_last = false;
  for (size_t c = 0; c < count; ++c) {
    CheckKey check = key_of(c);
    bool same_experiment = have_last && same_text(check.experiment, last_experiment);
    if (!same_experiment) {
      auto named = experiments_named.find(check.experiment);
      last_named = named == experiments_named.end() ? nullptr : &named->second;
      last_experiment = check.experiment;
      have_last = true;
    }
    if (last_named != nullptr) {
      bool same_output = same_experiment && same_text(check.output, last_output);
      for (size_t i : *last_named) {
        if (!same_output) {
          outputs[i].insert(check.output);
        }
        ++counts[i];
      }
      last_output = check.output;
    }
    for (size_t s = 0; s < statuses.size(); ++s) {
      if (statuses[s] == check.status) {
        ++by_status[s];
        break;
      }
    }
  }
  for (size_t s = 0; s < statuses.size(); ++s) {
    summary.by_status[to_string(statuses[s])] = by_status[s];
  }
  for (size_t i = 0; i < header.experiments.size(); ++i) {
    const ExperimentHeader& experiment = header.experiments[i];
    ExperimentSummary item;
    item.name = experiment.name;
    item.inputs = static_cast<int64_t>(experiment.inputs.size());
    item.targets = static_cast<int64_t>(experiment.targets.size());
    item.checks = counts[i];
    item.outputs = std::max<int64_t>(1, static_cast<int64_t>(outputs[i].size()));
    item.expected_checks = item.inputs * item.targets * item.outputs;
    summary.expected_checks += item.expected_checks;
    summary.experiments.push_back(item);
  }
  summary.checks = static_cast<int64_t>(count);
  return summary;
}

RunSummary summarize(const RunHeader& header, const std::vector<CheckRecord>& checks) {
  return summarize_keys(header, checks.size(), [&checks](size_t i) {
    return CheckKey{checks[i].experiment, checks[i].output, checks[i].status};
  });
}

RunSummary summarize(const RunHeader& header, const std::vector<const CheckRecord*>& checks) {
  return summarize_keys(header, checks.size(), [&checks](size_t i) {
    return CheckKey{checks[i]->experiment, checks[i]->output, checks[i]->status};
  });
}

std::string header_to_json_line(const RunHeader& header) {
  Json experiments = Json::array();
  for (const auto& experiment : header.experiments) {
    experiments.push_back(Json{{"name", experiment.name},
                               {"config_path", experiment.config_path},
                               {"config_hash", experiment.config_hash},
                               {"model_path", experiment.model_path},
                               {"model_hash", experiment.model_hash},
                               {"inputs", experiment.inputs},
                               {"reference", experiment.reference},
                               {"targets", experiment.targets},
                               {"tolerance", tolerance_json(experiment.tolerance)},
                               {"tolerance_origin", experiment.tolerance_origin}});
    if (!experiment.tolerance_overrides.empty()) {
      Json& overrides = experiments.back()["tolerances"] = Json::array();
      for (const ToleranceOverride& entry : experiment.tolerance_overrides) {
        overrides.push_back(tolerance_override_json(entry));
      }
    }
    if (!experiment.input_args.empty()) {
      Json& inputs = experiments.back()["input_args"] = Json::array();
      for (const InputArgumentsRecord& input : experiment.input_args) {
        Json args = Json::array();
        for (const InputArgumentRecord& arg : input.args) {
          Json item{{"name", arg.name}, {"dtype", arg.dtype}, {"shape", arg.shape}, {"source", arg.source}};
          if (!arg.path.empty()) {
            item["path"] = arg.path;
            item["hash"] = arg.hash;
          }
          args.push_back(std::move(item));
        }
        inputs.push_back(Json{{"input", input.input}, {"args", std::move(args)}});
      }
    }
  }
  Json json{
      {"type", "header"},
      {"schema", header.schema},
      {"tool_version", header.tool_version},
      {"commit", Json{{"sha", header.commit.sha}, {"branch", header.commit.branch}, {"dirty", header.commit.dirty}}},
      {"env_key", header.environment.key()},
      {"environment", environment_json(header.environment)},
      {"experiments", experiments}};
  if (header.shard.count > 1) {
    json["shard"] = Json{{"index", header.shard.index}, {"count", header.shard.count}};
  }
  return json.dump();
}

std::string summary_to_json_line(const RunSummary& summary) { return summary_json(summary).dump(); }

void write_run(std::ostream& out, const RunFile& run) {
  out << header_to_json_line(run.header) << '\n';
  std::string lines;
  for (const auto& check : run.checks) {
    lines += check_to_json_line(check);
    lines += '\n';
    if (lines.size() > (size_t{1} << 20)) {
      out << lines;
      lines.clear();
    }
  }
  out << lines;
  out << summary_to_json_line(run.summary) << '\n';
}

namespace {

// `size_hint`: the file's size in bytes when known (0 otherwise), to size the
// vector of checks once from the first check line instead of moving a million
// records through repeated growth.
RunFile parse_run_lines(std::istream& in, const std::string& name_for_messages, bool fast_checks,
                        size_t size_hint = 0) {
  RunFile run;
  bool have_header = false;
  bool have_summary = false;
  // Check ids seen so far, as indices into run.checks.
  auto id_of = [&run](size_t index) { return std::string_view(run.checks[index].id); };
  UniqueIds ids;
  CheckRecord fast_check;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    auto where = [&] { return name_for_messages + ":" + std::to_string(line_number) + ": "; };
    if (line.empty()) {
      continue;
    }
    try {
      // Most lines are checks the fast reader can vouch for; anything else (and every
      // malformed line) goes through the DOM reader below, which owns the errors.
      if (size_hint > 0 && have_header && run.checks.empty()) {
        // Reserved address space that is never written is never resident: err on the large side.
        run.checks.reserve(size_hint / (line.size() + 1) * 3 / 2 + 16);
        ids.reserve(size_hint / (line.size() + 1));
        size_hint = 0;
      }
      if (fast_checks && have_header && !have_summary && read_canonical_record(line, fast_check)) {
        run.checks.push_back(std::move(fast_check));
        if (!ids.insert(run.checks.size() - 1, id_of)) {
          throw Error("duplicate check id '" + run.checks.back().id + "'");
        }
        continue;
      }
      if (have_summary) {
        throw Error("a line after the summary; the summary must be the last line");
      }
      Json json = parse_json_strict(line);
      if (!json.is_object()) {
        throw Error("expected a JSON object");
      }
      std::string type = JsonFields(json).text("type");
      if (type == "header") {
        if (have_header) {
          throw Error("a second header; concatenated run files must be joined with `driftgate merge`");
        }
        run.header = parse_header(json);
        have_header = true;
      } else if (!have_header) {
        throw Error("the first line must be the run header (\"type\":\"header\"), got type '" + type + "'");
      } else if (type == "check") {
        run.checks.push_back(check_from_json(json));
        if (!ids.insert(run.checks.size() - 1, id_of)) {
          throw Error("duplicate check id '" + run.checks.back().id + "'");
        }
      } else if (type == "summary") {
        run.summary = parse_summary(json);
        have_summary = true;
      } else {
        throw Error("unknown line type '" + type + "' (expected header, check or summary)");
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error(where() + "not valid JSON (" + e.what() + "); the file is truncated or not a driftgate run");
    } catch (const Error& e) {
      throw Error(where() + e.what());
    }
  }
  if (!have_header) {
    throw Error(name_for_messages + ": empty or no header line; is this a driftgate run file?");
  }
  if (!have_summary) {
    throw Error(name_for_messages + ": no summary line; the run was interrupted or the file is truncated");
  }
  RunSummary derived = summarize(run.header, run.checks);
  if (!same_summary(derived, run.summary)) {
    throw Error(name_for_messages + ": the summary does not match the checks (" + std::to_string(run.summary.checks) +
                " claimed, " + std::to_string(derived.checks) + " present); the file was edited or is corrupt");
  }
  return run;
}

}  // namespace

RunFile parse_run(std::istream& in, const std::string& name_for_messages) {
  return parse_run_lines(in, name_for_messages, true);
}

RunFile parse_run_dom_only(std::istream& in, const std::string& name_for_messages) {
  return parse_run_lines(in, name_for_messages, false);
}

namespace {

Json parse_object_line(std::string_view line) {
  Json json = parse_json_strict(line);
  if (!json.is_object()) {
    throw Error("expected a JSON object");
  }
  return json;
}

}  // namespace

RunHeader parse_header_line(std::string_view line) {
  Json json = parse_object_line(line);
  if (JsonFields(json).text("type") != "header") {
    throw Error("not a header line");
  }
  return parse_header(json);
}

RunSummary parse_summary_line(std::string_view line) {
  Json json = parse_object_line(line);
  if (JsonFields(json).text("type") != "summary") {
    throw Error("not a summary line");
  }
  return parse_summary(json);
}

RunHeader read_run_header(const std::string& path) {
  InputFile file(path, k_run_file);
  std::istream& in = file.stream();
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) {
      continue;
    }
    // The same checks and messages as parse_run's first line.
    try {
      Json json = parse_json_strict(line);
      if (!json.is_object()) {
        throw Error("expected a JSON object");
      }
      std::string type = JsonFields(json).text("type");
      if (type != "header") {
        throw Error("the first line must be the run header (\"type\":\"header\"), got type '" + type + "'");
      }
      return parse_header(json);
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ":" + std::to_string(line_number) + ": not valid JSON (" + e.what() +
                  "); the file is truncated or not a driftgate run");
    } catch (const Error& e) {
      throw Error(path + ":" + std::to_string(line_number) + ": " + e.what());
    }
  }
  throw Error(path + ": empty or no header line; is this a driftgate run file?");
}

RunFile read_run_file(const std::string& path) { return read_run_file(path, k_run_file); }

RunFile read_run_file(const std::string& path, const InputKind& kind) {
  InputFile file(path, kind);
  return parse_run_lines(file.stream(), path, true, static_cast<size_t>(file.size()));
}

}  // namespace driftgate

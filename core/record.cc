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

#include "core/check_json.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/record_json.h"
#include "core/record_task.h"
#include "core/safe_text.h"
#include "core/strict_json.h"
#include "core/text_compare.h"
#include "core/unique_ids.h"

namespace driftgate {

namespace {

using Json = nlohmann::ordered_json;

struct StatusName {
  CheckStatus status;
  const char* name;
};

constexpr StatusName k_status_names[] = {
    {CheckStatus::k_pass, "pass"},
    {CheckStatus::k_fail_numeric, "fail_numeric"},
    {CheckStatus::k_fail_shape, "fail_shape"},
    {CheckStatus::k_fail_dtype, "fail_dtype"},
    {CheckStatus::k_fail_nonfinite, "fail_nonfinite"},
    {CheckStatus::k_fail_structure, "fail_structure"},
    {CheckStatus::k_fail_device, "fail_device"},
    {CheckStatus::k_unsupported, "unsupported"},
    {CheckStatus::k_crash_ref, "crash_ref"},
    {CheckStatus::k_crash_target, "crash_target"},
    {CheckStatus::k_timeout, "timeout"},
    {CheckStatus::k_ref_nondeterministic, "ref_nondeterministic"},
    {CheckStatus::k_skipped, "skipped"},
    {CheckStatus::k_fail_task, "fail_task"},
    {CheckStatus::k_nonfinite_output, "nonfinite_output"},
};

Json tolerance_json(const Tolerance& tolerance) {
  Json json{{"rule", to_string(tolerance.rule)}, {"atol", tolerance.atol}, {"rtol", tolerance.rtol}};
  if (tolerance.k > 0.0) {
    json["k"] = tolerance.k;
  }
  if (!tolerance.origin.empty()) {
    json["origin"] = tolerance.origin;
  }
  return json;
}

// k and origin are optional: records written before them have neither.
Tolerance parse_tolerance(const Json& json) {
  const JsonFields fields(json);
  Tolerance tolerance;
  tolerance.atol = fields.number("atol");
  tolerance.rtol = fields.number("rtol");
  tolerance.rule = parse_tolerance_rule(fields.text("rule"));
  if (fields.has("k")) {
    tolerance.k = fields.number("k");
  }
  if (fields.has("origin")) {
    tolerance.origin = fields.text("origin");
  }
  return tolerance;
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

OracleErrors parse_oracle(const Json& json) {
  const JsonFields fields(json);
  return OracleErrors{fields.number("reference_max_abs"), fields.number("target_max_abs"),
                      fields.number("reference_rmse"), fields.number("target_rmse")};
}

ObservedTensor parse_observed(const Json& json) {
  const JsonFields fields(json);
  return ObservedTensor{fields.text("device"), fields.text("dtype"), fields.text("memory_format"),
                        fields.integers("shape")};
}

Tier1Stats parse_stats(const Json& json) {
  const JsonFields fields(json);
  Tier1Stats stats;
  stats.numel = fields.integer("numel");
  stats.mismatches = fields.integer("mismatches");
  stats.mismatch_fraction = fields.number("mismatch_fraction");
  stats.max_abs = fields.number("max_abs");
  stats.max_abs_index = fields.integers("max_abs_index");
  stats.max_abs_reference = fields.number("max_abs_reference");
  stats.max_abs_target = fields.number("max_abs_target");
  stats.max_rel = fields.number("max_rel");
  stats.max_rel_index = fields.integers("max_rel_index");
  stats.rel_floor = fields.number("rel_floor");
  stats.max_abs_reference_value = fields.number("max_abs_reference_value");
  stats.nan_reference = fields.integer("nan_reference");
  stats.nan_target = fields.integer("nan_target");
  stats.inf_reference = fields.integer("inf_reference");
  stats.inf_target = fields.integer("inf_target");
  stats.min_atol = fields.number("min_atol");
  stats.min_rtol = fields.number("min_rtol");
  stats.mean_abs = fields.number("mean_abs");
  stats.p99_abs = fields.number("p99_abs");
  stats.rmse = fields.number("rmse");
  stats.cosine_similarity = fields.number("cosine_similarity");
  stats.max_ulp = fields.number("max_ulp");
  if (fields.has("oracle")) {
    stats.oracle = parse_oracle(json["oracle"]);
  }
  if (fields.has("reference_repeat_max_abs")) {
    stats.reference_repeat_max_abs = fields.number("reference_repeat_max_abs");
  }
  if (fields.has("target_repeat_max_abs")) {
    stats.target_repeat_max_abs = fields.number("target_repeat_max_abs");
  }
  return stats;
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
    experiment.tolerance = parse_tolerance(JsonFields(item).get("tolerance"));
    experiment.tolerance_origin = JsonFields(item).text("tolerance_origin");
    if (item.contains("tolerances")) {
      for (const auto& entry : JsonFields(item).get("tolerances")) {
        experiment.tolerance_overrides.push_back(parse_tolerance_override(entry));
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

CheckRecord parse_check(const Json& json) {
  const JsonFields fields(json);
  CheckRecord check;
  check.id = fields.text("id");
  check.experiment = fields.text("experiment");
  check.input = fields.text("input");
  check.reference = fields.text("reference");
  check.target = fields.text("target");
  check.output = fields.text("output");
  check.status = parse_check_status(fields.text("status"));
  check.message = fields.text("message");
  check.tolerance = parse_tolerance(fields.get("tolerance"));
  if (fields.has("observed_reference")) {
    check.observed_reference = parse_observed(json["observed_reference"]);
  }
  if (fields.has("observed_target")) {
    check.observed_target = parse_observed(json["observed_target"]);
  }
  if (fields.has("stats")) {
    check.stats = parse_stats(json["stats"]);
  }
  if (fields.has("localization")) {
    check.localization = localization_from_json(json["localization"]);
  }
  if (fields.has("task")) {
    check.task = task_result_from_json(json["task"]);
  }
  if (fields.has("mitigation")) {
    check.mitigation = mitigation_from_json(json["mitigation"]);
  }
  if (fields.has("messages")) {
    const Json& messages = json["messages"];
    if (!messages.is_array()) {
      throw Error("field 'messages' must be an array");
    }
    for (const Json& item : messages) {
      if (!item.is_object()) {
        throw Error("field 'messages' must hold objects");
      }
      BackendMessage message{JsonFields(item).text("backend"), JsonFields(item).text("text"),
                             JsonFields(item).integer("count")};
      if (message.count < 1) {
        throw Error("a message's count must be at least 1, got " + std::to_string(message.count));
      }
      require_printable(message.backend, "message backend");
      require_printable(message.text, "backend message");
      check.messages.push_back(std::move(message));
    }
  }
  const Json& timings = fields.get("timings_ms");
  check.reference_ms = JsonFields(timings).number("reference");
  check.target_ms = JsonFields(timings).number("target");
  // The interquartile ranges: both or neither (records written before they were measured).
  if (timings.contains("reference_iqr") || timings.contains("target_iqr")) {
    check.reference_iqr_ms = JsonFields(timings).number("reference_iqr");
    check.target_iqr_ms = JsonFields(timings).number("target_iqr");
  }
  // Each part in turn, so that the message names the one that holds the character.
  require_printable(check.experiment, "experiment name");
  require_printable(check.input, "input name");
  require_printable(check.reference, "reference backend name");
  require_printable(check.target, "target backend name");
  require_printable(check.output, "output name");
  require_printable(check.id, "check id");
  if (check.id != make_check_id(check.experiment, check.input, check.reference, check.target, check.output)) {
    throw Error("check id '" + check.id + "' does not match its parts");
  }
  return check;
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

const char* to_string(CheckStatus status) {
  for (const auto& entry : k_status_names) {
    if (entry.status == status) {
      return entry.name;
    }
  }
  return "unknown";
}

CheckStatus parse_check_status(const std::string& name) {
  for (const auto& entry : k_status_names) {
    if (name == entry.name) {
      return entry.status;
    }
  }
  throw Error("unknown check status '" + name + "'");
}

bool is_failure(CheckStatus status) { return status != CheckStatus::k_pass && status != CheckStatus::k_skipped; }

bool is_crash(CheckStatus status) {
  return status == CheckStatus::k_crash_ref || status == CheckStatus::k_crash_target ||
         status == CheckStatus::k_timeout;
}

const std::vector<CheckStatus>& all_check_statuses() {
  static const std::vector<CheckStatus> statuses = [] {
    std::vector<CheckStatus> all;
    for (const auto& entry : k_status_names) {
      all.push_back(entry.status);
    }
    return all;
  }();
  return statuses;
}

std::string make_check_id(const std::string& experiment, const std::string& input, const std::string& reference,
                          const std::string& target, const std::string& output) {
  return experiment + "/" + input + "/" + reference + "~" + target + "/" + output;
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
  std::vector<int64_t> by_status(std::size(k_status_names), 0);
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
    for (size_t s = 0; s < std::size(k_status_names); ++s) {
      if (k_status_names[s].status == check.status) {
        ++by_status[s];
        break;
      }
    }
  }
  for (size_t s = 0; s < std::size(k_status_names); ++s) {
    summary.by_status[k_status_names[s].name] = by_status[s];
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

std::string check_to_json_line(const CheckRecord& check) {
  // Written member by member (core/check_json.h): a run may hold millions of checks.
  std::string line;
  append_check_json_begin(line, check);
  if (check.localization) {
    line += ",\"localization\":" + localization_to_json(*check.localization);
  }
  if (check.task) {
    line += ",\"task\":" + task_result_to_json(*check.task).dump();
  }
  if (check.mitigation) {
    line += ",\"mitigation\":" + mitigation_to_json(*check.mitigation).dump();
  }
  if (!check.messages.empty()) {
    Json messages = Json::array();
    for (const BackendMessage& message : check.messages) {
      messages.push_back(Json{{"backend", message.backend}, {"text", message.text}, {"count", message.count}});
    }
    line += ",\"messages\":" + messages.dump();
  }
  append_check_json_end(line, check);
  return line;
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
        run.checks.push_back(parse_check(json));
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

CheckRecord parse_check_line(std::string_view line) {
  CheckRecord check;
  if (read_canonical_record(line, check)) {
    return check;
  }
  return parse_check_line_strict(line);
}

CheckRecord parse_check_line_strict(std::string_view line) {
  Json json = parse_object_line(line);
  if (JsonFields(json).text("type") != "check") {
    throw Error("not a check line");
  }
  return parse_check(json);
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

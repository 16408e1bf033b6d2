#include "core/check_line.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/check_line_fast.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/safe_text.h"
#include "core/strict_json.h"

namespace driftgate {

namespace {

using Json = OrderedJson;

constexpr EnumName<CheckStatus> k_status_names[] = {
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

// ---- writing: member by member, the bytes nlohmann's dump writes (core/record_json.h) ----

// `,"name":`; `{"name":` for an object's first member.
void put_key(std::string& out, const char* name, bool first = false) {
  out += first ? "{\"" : ",\"";
  out += name;
  out += "\":";
}

void put_integers(std::string& out, const std::vector<int64_t>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    put_json_integer(out, values[i]);
  }
  out += ']';
}

void put_text(std::string& out, const char* name, std::string_view text, bool first = false) {
  put_key(out, name, first);
  put_json_string(out, text);
}

void put_observed(std::string& out, const char* name, const ObservedTensor& observed) {
  put_key(out, name);
  put_text(out, "device", observed.device, true);
  put_text(out, "dtype", observed.dtype);
  put_text(out, "memory_format", observed.memory_format);
  put_key(out, "shape");
  put_integers(out, observed.shape);
  out += '}';
}

void put_oracle(std::string& out, const OracleErrors& oracle) {
  bool first = true;
  for (const OracleMember& member : k_oracle_members) {
    put_key(out, member.name, std::exchange(first, false));
    put_json_number(out, oracle.*member.field);
  }
  out += '}';
}

void put_stats(std::string& out, const Tier1Stats& stats) {
  out += ",\"stats\":";
  bool first = true;
  for (const StatsMember& member : k_stats_members) {
    using Kind = StatsMember::Kind;
    if ((member.kind == Kind::k_optional_number && !(stats.*member.optional_number)) ||
        (member.kind == Kind::k_oracle && !(stats.*member.oracle))) {
      continue;
    }
    put_key(out, member.name, std::exchange(first, false));
    switch (member.kind) {
      case Kind::k_integer:
        put_json_integer(out, stats.*member.integer);
        break;
      case Kind::k_number:
        put_json_number(out, stats.*member.number);
        break;
      case Kind::k_integers:
        put_integers(out, stats.*member.integers);
        break;
      case Kind::k_optional_number:
        put_json_number(out, *(stats.*member.optional_number));
        break;
      case Kind::k_oracle:
        put_oracle(out, *(stats.*member.oracle));
        break;
    }
  }
  out += '}';
}

Json task_result_json(const TaskResult& task) {
  Json metrics = Json::object();
  for (const auto& [name, value] : task.metrics) {
    metrics[name] = json_number(value);
  }
  return Json{{"kind", task.kind}, {"adapter", task.adapter}, {"metrics", metrics}, {"findings", task.findings}};
}

Json mitigation_json(const Mitigation& mitigation) {
  Json choices = Json::array();
  for (const MitigationChoice& choice : mitigation.choices) {
    choices.push_back(Json{{"restores", choice.restores},
                           {"fallbacks", choice.fallbacks},
                           {"float32_modules", choice.float32_modules},
                           {"backend", choice.backend},
                           {"latency_ms", json_number(choice.latency_ms)},
                           {"latency_iqr_ms", json_number(choice.latency_iqr_ms)},
                           {"reference_equivalent", choice.reference_equivalent}});
  }
  return Json{{"choices", choices},
              {"target_ms", json_number(mitigation.target_ms)},
              {"reference_ms", json_number(mitigation.reference_ms)},
              {"tried", mitigation.tried},
              {"selective_note", mitigation.selective_note},
              {"message", mitigation.message}};
}

Json messages_json(const std::vector<BackendMessage>& messages) {
  Json json = Json::array();
  for (const BackendMessage& message : messages) {
    json.push_back(Json{{"backend", message.backend}, {"text", message.text}, {"count", message.count}});
  }
  return json;
}

// ---- the strict reader: nlohmann's DOM, every member required and typed (core/record_json.h) ----

ObservedTensor observed_from_json(const Json& json) {
  const JsonFields fields(json);
  return ObservedTensor{fields.text("device"), fields.text("dtype"), fields.text("memory_format"),
                        fields.integers("shape")};
}

OracleErrors oracle_from_json(const Json& json) {
  const JsonFields fields(json);
  OracleErrors oracle;
  for (const OracleMember& member : k_oracle_members) {
    oracle.*member.field = fields.number(member.name);
  }
  return oracle;
}

Tier1Stats stats_from_json(const Json& json) {
  const JsonFields fields(json);
  Tier1Stats stats;
  for (const StatsMember& member : k_stats_members) {
    using Kind = StatsMember::Kind;
    if (member.optional() && !fields.has(member.name)) {
      continue;
    }
    switch (member.kind) {
      case Kind::k_integer:
        stats.*member.integer = fields.integer(member.name);
        break;
      case Kind::k_number:
        stats.*member.number = fields.number(member.name);
        break;
      case Kind::k_integers:
        stats.*member.integers = fields.integers(member.name);
        break;
      case Kind::k_optional_number:
        stats.*member.optional_number = fields.number(member.name);
        break;
      case Kind::k_oracle:
        stats.*member.oracle = oracle_from_json(fields.get(member.name));
        break;
    }
  }
  return stats;
}

TaskResult task_result_from_json(const Json& json) {
  JsonFields fields(json, "task: ");
  TaskResult task;
  task.kind = fields.text("kind");
  task.adapter = fields.text("adapter");
  const Json& metrics = fields.get("metrics");
  if (!metrics.is_object()) {
    fields.fail("field 'metrics' must be an object");
  }
  for (const auto& [name, value] : metrics.items()) {
    task.metrics[name] = JsonFields(metrics, "task: metrics: ").number(name.c_str());
  }
  task.findings = fields.strings("findings");
  return task;
}

// The members a mitigation object may hold: others are refused (a misspelt member
// would otherwise read as absent).
void require_members(const JsonFields& fields, const Json& json, std::initializer_list<const char*> names) {
  for (const auto& item : json.items()) {
    if (std::find_if(names.begin(), names.end(), [&](const char* name) { return item.key() == name; }) == names.end()) {
      fields.fail("unknown field '" + item.key() + "'");
    }
  }
}

std::string restores(const JsonFields& fields, bool allow_empty) {
  std::string value = fields.text("restores");
  if (value != "tier1" && value != "tier3" && !(allow_empty && value.empty())) {
    fields.fail("field 'restores' must be \"tier1\" or \"tier3\", got \"" + value + "\"");
  }
  return value;
}

// The shape written before choices: one fallback set (empty: none restored) and its latency.
Mitigation legacy_mitigation_from_json(const Json& json) {
  JsonFields fields(json, "mitigation: ");
  require_members(fields, json, {"fallbacks", "restores", "backend", "latency_ms", "target_ms", "tried", "message"});
  Mitigation mitigation;
  MitigationChoice choice;
  choice.fallbacks = fields.strings("fallbacks");
  choice.restores = restores(fields, choice.fallbacks.empty());
  choice.backend = fields.text("backend");
  choice.latency_ms = fields.number("latency_ms");
  if (!choice.fallbacks.empty()) {
    mitigation.choices.push_back(std::move(choice));
  }
  mitigation.target_ms = fields.number("target_ms");
  mitigation.tried = fields.count("tried");
  mitigation.message = fields.text("message");
  return mitigation;
}

Mitigation mitigation_from_json(const Json& json) {
  if (json.is_object() && !json.contains("choices") && json.contains("fallbacks")) {
    return legacy_mitigation_from_json(json);
  }
  if (!json.is_object()) {
    throw Error("mitigation must be an object");
  }
  JsonFields fields(json, "mitigation: ");
  require_members(fields, json, {"choices", "target_ms", "reference_ms", "tried", "selective_note", "message"});
  Mitigation mitigation;
  const Json& choices = fields.get("choices");
  if (!choices.is_array()) {
    fields.fail("field 'choices' must be an array of objects");
  }
  for (const Json& item : choices) {
    const std::string what = "mitigation choice " + std::to_string(mitigation.choices.size() + 1);
    if (!item.is_object()) {
      throw Error(what + " must be an object");
    }
    JsonFields choice_fields(item, what + ": ");
    require_members(choice_fields, item,
                    {"restores", "fallbacks", "float32_modules", "backend", "latency_ms", "latency_iqr_ms",
                     "reference_equivalent"});
    MitigationChoice choice;
    choice.restores = restores(choice_fields, false);
    choice.fallbacks = choice_fields.strings("fallbacks");
    choice.float32_modules = choice_fields.strings("float32_modules");
    choice.backend = choice_fields.text("backend");
    choice.latency_ms = choice_fields.number("latency_ms");
    choice.latency_iqr_ms = choice_fields.number("latency_iqr_ms");
    choice.reference_equivalent = choice_fields.boolean("reference_equivalent");
    mitigation.choices.push_back(std::move(choice));
  }
  mitigation.target_ms = fields.number("target_ms");
  mitigation.reference_ms = fields.number("reference_ms");
  mitigation.tried = fields.count("tried");
  mitigation.selective_note = fields.text("selective_note");
  mitigation.message = fields.text("message");
  return mitigation;
}

std::vector<BackendMessage> messages_from_json(const Json& messages) {
  if (!messages.is_array()) {
    throw Error("field 'messages' must be an array");
  }
  std::vector<BackendMessage> read;
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
    read.push_back(std::move(message));
  }
  return read;
}

// The member `name` read by `read`, or nothing when the object has none.
template <typename Read>
auto optional_member(const JsonFields& fields, const char* name, Read read) -> std::optional<decltype(read(Json()))> {
  if (!fields.has(name)) {
    return std::nullopt;
  }
  return read(fields.get(name));
}

}  // namespace

const char* to_string(CheckStatus status) { return enum_name(k_status_names, status); }

CheckStatus parse_check_status(const std::string& name) { return parse_enum(k_status_names, name, "check status"); }

bool is_failure(CheckStatus status) { return status != CheckStatus::k_pass && status != CheckStatus::k_skipped; }

bool is_crash(CheckStatus status) {
  return status == CheckStatus::k_crash_ref || status == CheckStatus::k_crash_target ||
         status == CheckStatus::k_timeout;
}

const std::vector<CheckStatus>& all_check_statuses() {
  static const std::vector<CheckStatus> statuses = enum_values(k_status_names);
  return statuses;
}

std::string make_check_id(const std::string& experiment, const std::string& input, const std::string& reference,
                          const std::string& target, const std::string& output) {
  return experiment + "/" + input + "/" + reference + "~" + target + "/" + output;
}

void append_tolerance_json(std::string& out, const Tolerance& tolerance) {
  put_text(out, "rule", to_string(tolerance.rule), true);
  put_key(out, "atol");
  put_json_double(out, tolerance.atol);
  put_key(out, "rtol");
  put_json_double(out, tolerance.rtol);
  if (tolerance.k > 0.0) {
    put_key(out, "k");
    put_json_double(out, tolerance.k);
  }
  if (!tolerance.origin.empty()) {
    put_text(out, "origin", tolerance.origin);
  }
  out += '}';
}

Tolerance tolerance_from_json(const Json& json) {
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

std::string check_to_json_line(const CheckRecord& check) {
  std::string line;
  line += k_check_line_prefix;
  put_json_string(line, check.id);
  put_text(line, "experiment", check.experiment);
  put_text(line, "input", check.input);
  put_text(line, "reference", check.reference);
  put_text(line, "target", check.target);
  put_text(line, "output", check.output);
  put_text(line, "status", to_string(check.status));
  put_text(line, "message", check.message);
  put_key(line, "tolerance");
  append_tolerance_json(line, check.tolerance);
  if (check.observed_reference) {
    put_observed(line, "observed_reference", *check.observed_reference);
  }
  if (check.observed_target) {
    put_observed(line, "observed_target", *check.observed_target);
  }
  if (check.stats) {
    put_stats(line, *check.stats);
  }
  if (check.localization) {
    line += ",\"localization\":" + localization_to_json(*check.localization);
  }
  if (check.task) {
    line += ",\"task\":" + task_result_json(*check.task).dump();
  }
  if (check.mitigation) {
    line += ",\"mitigation\":" + mitigation_json(*check.mitigation).dump();
  }
  if (!check.messages.empty()) {
    line += ",\"messages\":" + messages_json(check.messages).dump();
  }
  put_key(line, "timings_ms");
  put_key(line, "reference", true);
  put_json_number(line, check.reference_ms);
  put_key(line, "target");
  put_json_number(line, check.target_ms);
  put_key(line, "reference_iqr");
  put_json_number(line, check.reference_iqr_ms);
  put_key(line, "target_iqr");
  put_json_number(line, check.target_iqr_ms);
  line += "}}";
  return line;
}

CheckRecord check_from_json(const Json& json) {
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
  check.tolerance = tolerance_from_json(fields.get("tolerance"));
  check.observed_reference = optional_member(fields, "observed_reference", observed_from_json);
  check.observed_target = optional_member(fields, "observed_target", observed_from_json);
  check.stats = optional_member(fields, "stats", stats_from_json);
  check.localization = optional_member(fields, "localization", localization_from_json);
  check.task = optional_member(fields, "task", task_result_from_json);
  check.mitigation = optional_member(fields, "mitigation", mitigation_from_json);
  check.messages = optional_member(fields, "messages", messages_from_json).value_or(std::vector<BackendMessage>{});
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

CheckRecord parse_check_line_strict(std::string_view line) {
  Json json = parse_json_strict(line);
  if (!json.is_object()) {
    throw Error("expected a JSON object");
  }
  if (JsonFields(json).text("type") != "check") {
    throw Error("not a check line");
  }
  return check_from_json(json);
}

CheckRecord parse_check_line(std::string_view line) {
  CheckRecord check;
  if (read_canonical_record(line, check)) {
    return check;
  }
  return parse_check_line_strict(line);
}

}  // namespace driftgate

#include "core/record_task.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

#include "core/error.h"
#include "core/record_json.h"

namespace driftgate {
namespace {

using Json = OrderedJson;

}  // namespace

Json task_result_to_json(const TaskResult& task) {
  Json metrics = Json::object();
  for (const auto& [name, value] : task.metrics) {
    metrics[name] = json_number(value);
  }
  return Json{{"kind", task.kind}, {"adapter", task.adapter}, {"metrics", metrics}, {"findings", task.findings}};
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

Json mitigation_to_json(const Mitigation& mitigation) {
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

namespace {

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

}  // namespace

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

}  // namespace driftgate

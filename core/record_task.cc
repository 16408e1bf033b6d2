#include "core/record_task.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

#include "core/error.h"

namespace driftgate {
namespace {

using Json = nlohmann::ordered_json;

// JSON has no NaN or infinity: strings, as in the rest of the record.
Json number(double value) {
  if (std::isnan(value)) {
    return "nan";
  }
  if (std::isinf(value)) {
    return value > 0 ? "inf" : "-inf";
  }
  return value;
}

double to_number(const Json& value, const std::string& name) {
  if (value.is_number()) {
    return value.get<double>();
  }
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text == "nan") {
      return std::nan("");
    }
    if (text == "inf" || text == "-inf") {
      return text == "inf" ? INFINITY : -INFINITY;
    }
  }
  throw Error("field '" + name + "' must be a number, got " + value.dump());
}

const Json& field(const Json& json, const char* name) {
  auto it = json.find(name);
  if (it == json.end()) {
    throw Error(std::string("missing field '") + name + "'");
  }
  return *it;
}

std::string text(const Json& json, const char* name) {
  const Json& value = field(json, name);
  if (!value.is_string()) {
    throw Error(std::string("field '") + name + "' must be a string");
  }
  return value.get<std::string>();
}

std::vector<std::string> strings(const Json& json, const char* name) {
  const Json& value = field(json, name);
  std::vector<std::string> items;
  if (!value.is_array()) {
    throw Error(std::string("field '") + name + "' must be an array of strings");
  }
  for (const auto& item : value) {
    if (!item.is_string()) {
      throw Error(std::string("field '") + name + "' must be an array of strings");
    }
    items.push_back(item.get<std::string>());
  }
  return items;
}

}  // namespace

Json task_result_to_json(const TaskResult& task) {
  Json metrics = Json::object();
  for (const auto& [name, value] : task.metrics) {
    metrics[name] = number(value);
  }
  return Json{{"kind", task.kind}, {"adapter", task.adapter}, {"metrics", metrics}, {"findings", task.findings}};
}

TaskResult task_result_from_json(const Json& json) {
  TaskResult task;
  task.kind = text(json, "kind");
  task.adapter = text(json, "adapter");
  const Json& metrics = field(json, "metrics");
  if (!metrics.is_object()) {
    throw Error("field 'metrics' must be an object");
  }
  for (const auto& [name, value] : metrics.items()) {
    task.metrics[name] = to_number(value, name);
  }
  task.findings = strings(json, "findings");
  return task;
}

Json mitigation_to_json(const Mitigation& mitigation) {
  Json choices = Json::array();
  for (const MitigationChoice& choice : mitigation.choices) {
    choices.push_back(Json{{"restores", choice.restores},
                           {"fallbacks", choice.fallbacks},
                           {"float32_modules", choice.float32_modules},
                           {"backend", choice.backend},
                           {"latency_ms", number(choice.latency_ms)},
                           {"latency_iqr_ms", number(choice.latency_iqr_ms)},
                           {"reference_equivalent", choice.reference_equivalent}});
  }
  return Json{{"choices", choices},
              {"target_ms", number(mitigation.target_ms)},
              {"reference_ms", number(mitigation.reference_ms)},
              {"tried", mitigation.tried},
              {"selective_note", mitigation.selective_note},
              {"message", mitigation.message}};
}

namespace {

void require_members(const Json& json, const std::string& what, std::initializer_list<const char*> names) {
  if (!json.is_object()) {
    throw Error(what + " must be an object");
  }
  for (const auto& item : json.items()) {
    if (std::find_if(names.begin(), names.end(), [&](const char* name) { return item.key() == name; }) == names.end()) {
      throw Error(what + ": unknown field '" + item.key() + "'");
    }
  }
}

int64_t count(const Json& json, const char* name) {
  const Json& value = field(json, name);
  if (!value.is_number_integer() || value.get<int64_t>() < 0) {
    throw Error(std::string("field '") + name + "' must be an integer of at least 0");
  }
  return value.get<int64_t>();
}

std::string restores(const Json& json, bool allow_empty) {
  std::string value = text(json, "restores");
  if (value != "tier1" && value != "tier3" && !(allow_empty && value.empty())) {
    throw Error("field 'restores' must be \"tier1\" or \"tier3\", got \"" + value + "\"");
  }
  return value;
}

// The shape written before choices: one fallback set (empty: none restored) and its latency.
Mitigation legacy_mitigation_from_json(const Json& json) {
  require_members(json, "mitigation",
                  {"fallbacks", "restores", "backend", "latency_ms", "target_ms", "tried", "message"});
  Mitigation mitigation;
  MitigationChoice choice;
  choice.fallbacks = strings(json, "fallbacks");
  choice.restores = restores(json, choice.fallbacks.empty());
  choice.backend = text(json, "backend");
  choice.latency_ms = to_number(field(json, "latency_ms"), "latency_ms");
  if (!choice.fallbacks.empty()) {
    mitigation.choices.push_back(std::move(choice));
  }
  mitigation.target_ms = to_number(field(json, "target_ms"), "target_ms");
  mitigation.tried = count(json, "tried");
  mitigation.message = text(json, "message");
  return mitigation;
}

}  // namespace

Mitigation mitigation_from_json(const Json& json) {
  if (json.is_object() && !json.contains("choices") && json.contains("fallbacks")) {
    return legacy_mitigation_from_json(json);
  }
  require_members(json, "mitigation", {"choices", "target_ms", "reference_ms", "tried", "selective_note", "message"});
  Mitigation mitigation;
  const Json& choices = field(json, "choices");
  if (!choices.is_array()) {
    throw Error("field 'choices' must be an array of objects");
  }
  for (const Json& item : choices) {
    const std::string what = "mitigation choice " + std::to_string(mitigation.choices.size() + 1);
    require_members(item, what,
                    {"restores", "fallbacks", "float32_modules", "backend", "latency_ms", "latency_iqr_ms",
                     "reference_equivalent"});
    try {
      MitigationChoice choice;
      choice.restores = restores(item, false);
      choice.fallbacks = strings(item, "fallbacks");
      choice.float32_modules = strings(item, "float32_modules");
      choice.backend = text(item, "backend");
      choice.latency_ms = to_number(field(item, "latency_ms"), "latency_ms");
      choice.latency_iqr_ms = to_number(field(item, "latency_iqr_ms"), "latency_iqr_ms");
      const Json& equivalent = field(item, "reference_equivalent");
      if (!equivalent.is_boolean()) {
        throw Error("field 'reference_equivalent' must be true or false");
      }
      choice.reference_equivalent = equivalent.get<bool>();
      mitigation.choices.push_back(std::move(choice));
    } catch (const Error& e) {
      throw Error(what + ": " + e.what());
    }
  }
  mitigation.target_ms = to_number(field(json, "target_ms"), "target_ms");
  mitigation.reference_ms = to_number(field(json, "reference_ms"), "reference_ms");
  mitigation.tried = count(json, "tried");
  mitigation.selective_note = text(json, "selective_note");
  mitigation.message = text(json, "message");
  return mitigation;
}

}  // namespace driftgate

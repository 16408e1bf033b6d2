#include "core/record_task.h"

#include <cmath>
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
  return Json{{"fallbacks", mitigation.fallbacks},
              {"restores", mitigation.restores},
              {"backend", mitigation.backend},
              {"latency_ms", number(mitigation.latency_ms)},
              {"target_ms", number(mitigation.target_ms)},
              {"tried", mitigation.tried},
              {"message", mitigation.message}};
}

Mitigation mitigation_from_json(const Json& json) {
  Mitigation mitigation;
  mitigation.fallbacks = strings(json, "fallbacks");
  mitigation.restores = text(json, "restores");
  mitigation.backend = text(json, "backend");
  mitigation.latency_ms = to_number(field(json, "latency_ms"), "latency_ms");
  mitigation.target_ms = to_number(field(json, "target_ms"), "target_ms");
  const Json& tried = field(json, "tried");
  if (!tried.is_number_integer()) {
    throw Error("field 'tried' must be an integer");
  }
  mitigation.tried = tried.get<int64_t>();
  mitigation.message = text(json, "message");
  return mitigation;
}

}  // namespace driftgate

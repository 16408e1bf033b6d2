// Reading answers from a forge's API, which may be anything: accessors that
// never throw on an unexpected shape (nlohmann's value() throws on non-objects)
// and give null or "" instead, for the caller to report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace driftgate {

// A member of a JSON object, or null when `object` is not an object or lacks it.
inline nlohmann::json json_field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) {
    return nlohmann::json();
  }
  auto it = object.find(key);
  return it == object.end() ? nlohmann::json() : *it;
}

// A string member, or "" when it is absent or not a string.
inline std::string json_string_field(const nlohmann::json& object, const char* key) {
  nlohmann::json value = json_field(object, key);
  return value.is_string() ? value.get<std::string>() : "";
}

// An integer id as text, or "" when `value` is not an integer.
inline std::string json_id_text(const nlohmann::json& value) {
  return value.is_number_integer() ? std::to_string(value.get<long long>()) : "";
}

}  // namespace driftgate

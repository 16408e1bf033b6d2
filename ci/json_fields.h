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

// A whole number from 1 to 2^31-1 (a pull or merge request number), or 0 when
// `value` is anything else: never truncated, so 4294967298 is not #2.
inline int json_positive_int(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    auto number = value.get<unsigned long long>();
    return number >= 1 && number <= 2147483647ULL ? static_cast<int>(number) : 0;
  }
  if (value.is_number_integer()) {
    auto number = value.get<long long>();
    return number >= 1 && number <= 2147483647LL ? static_cast<int>(number) : 0;
  }
  return 0;
}

// A non-negative integer id as text, or "" when `value` is anything else (a string,
// a fraction or a negative number: a wrapped id must not name another comment; 0 is
// what --dry-run's transport answers).
inline std::string json_id_text(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    return std::to_string(value.get<unsigned long long>());
  }
  if (value.is_number_integer()) {
    auto id = value.get<long long>();
    return id >= 0 ? std::to_string(id) : "";
  }
  return "";
}

}  // namespace driftgate

// The names an enum's values are written as, in configs, records and reports: one table
// per enum ({value, name}, in the order messages list them) and the lookups every such
// table needs, spelled once. Check statuses, tolerance rules, diff classes and every
// choice an experiment config offers (devices, dtypes, graph modes, ...) are such tables.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace driftgate {

template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;
};

// The name of `value` in `table`; "unknown" when it has none.
template <typename Enum, size_t N>
const char* enum_name(const EnumName<Enum> (&table)[N], Enum value) {
  for (const auto& entry : table) {
    if (entry.value == value) {
      return entry.name;
    }
  }
  return "unknown";
}

// The value named `name` in `table`, if one is.
template <typename Enum, size_t N>
std::optional<Enum> enum_value(const EnumName<Enum> (&table)[N], std::string_view name) {
  for (const auto& entry : table) {
    if (name == entry.name) {
      return entry.value;
    }
  }
  return std::nullopt;
}

// The value named `name` in `table`; driftgate::Error "unknown <what> '<name>'" when none is.
template <typename Enum, size_t N>
Enum parse_enum(const EnumName<Enum> (&table)[N], const std::string& name, const char* what) {
  if (std::optional<Enum> value = enum_value(table, name)) {
    return *value;
  }
  throw Error(std::string("unknown ") + what + " '" + name + "'");
}

// Every value of `table`, in its order.
template <typename Enum, size_t N>
std::vector<Enum> enum_values(const EnumName<Enum> (&table)[N]) {
  std::vector<Enum> values;
  for (const auto& entry : table) {
    values.push_back(entry.value);
  }
  return values;
}

// Every name of `table`, in its order (for messages and did-you-mean).
template <typename Enum, size_t N>
std::vector<std::string> enum_names(const EnumName<Enum> (&table)[N]) {
  std::vector<std::string> names;
  for (const auto& entry : table) {
    names.push_back(entry.name);
  }
  return names;
}

}  // namespace driftgate

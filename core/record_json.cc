#include "core/record_json.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace driftgate {

OrderedJson json_number(double value) {
  if (std::isnan(value)) {
    return "nan";
  }
  if (std::isinf(value)) {
    return value > 0 ? "inf" : "-inf";
  }
  return value;
}

double json_to_number(const OrderedJson& value, const std::string& what) {
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
  throw Error(what + " must be a number, got " + value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace));
}

JsonFields::JsonFields(const OrderedJson& object, std::string prefix) : m_object(object), m_prefix(std::move(prefix)) {
  if (!object.is_object()) {
    fail("expected a JSON object, got " + object.dump(-1, ' ', false, OrderedJson::error_handler_t::replace));
  }
}

void JsonFields::fail(const std::string& what) const { throw Error(m_prefix + what); }

bool JsonFields::has(const char* name) const { return m_object.contains(name); }

const OrderedJson& JsonFields::get(const char* name) const {
  auto it = m_object.find(name);
  if (it == m_object.end()) {
    fail(std::string("missing field '") + name + "'");
  }
  return *it;
}

std::string JsonFields::text(const char* name) const {
  const OrderedJson& value = get(name);
  if (!value.is_string()) {
    fail(std::string("field '") + name + "' must be a string");
  }
  return value.get<std::string>();
}

int64_t JsonFields::integer(const char* name) const {
  const OrderedJson& value = get(name);
  if (!value.is_number_integer()) {
    fail(std::string("field '") + name + "' must be an integer");
  }
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    fail(std::string("field '") + name + "' is " + value.dump() + ", out of range");
  }
  return value.get<int64_t>();
}

int JsonFields::small_integer(const char* name) const {
  int64_t value = integer(name);
  if (value < INT_MIN || value > INT_MAX) {
    fail(std::string("field '") + name + "' is " + std::to_string(value) + ", out of range");
  }
  return static_cast<int>(value);
}

int64_t JsonFields::count(const char* name) const {
  const OrderedJson& value = get(name);
  if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX) ||
      value.get<int64_t>() < 0) {
    fail(std::string("field '") + name + "' must be an integer of at least 0");
  }
  return value.get<int64_t>();
}

double JsonFields::number(const char* name) const {
  const OrderedJson& value = get(name);
  try {
    return json_to_number(value, std::string("field '") + name + "'");
  } catch (const Error& e) {
    fail(e.what());
  }
}

bool JsonFields::boolean(const char* name) const {
  const OrderedJson& value = get(name);
  if (!value.is_boolean()) {
    fail(std::string("field '") + name + "' must be true or false");
  }
  return value.get<bool>();
}

std::vector<std::string> JsonFields::strings(const char* name) const {
  const OrderedJson& value = get(name);
  if (!value.is_array() ||
      !std::all_of(value.begin(), value.end(), [](const auto& item) { return item.is_string(); })) {
    fail(std::string("field '") + name + "' must be an array of strings");
  }
  std::vector<std::string> items;
  items.reserve(value.size());
  for (const auto& item : value) {
    items.push_back(item.get<std::string>());
  }
  return items;
}

std::vector<int64_t> JsonFields::integers(const char* name) const {
  const OrderedJson& value = get(name);
  // get<int64_t>() of a float is a cast that overflows (undefined) past 2^63; an
  // unsigned one past 2^63 would wrap.
  auto fits = [](const OrderedJson& item) {
    return item.is_number_integer() && !(item.is_number_unsigned() && item.get<uint64_t>() > INT64_MAX);
  };
  if (!value.is_array() || !std::all_of(value.begin(), value.end(), fits)) {
    fail(std::string("field '") + name + "' must be an array of integers, got " +
         value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace));
  }
  std::vector<int64_t> items;
  items.reserve(value.size());
  for (const auto& item : value) {
    items.push_back(item.get<int64_t>());
  }
  return items;
}

void put_json_string(std::string& out, std::string_view text, bool replace) {
  bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte < 0x80 && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  // Escapes and UTF-8 checks exactly as the DOM dump makes them.
  out +=
      OrderedJson(std::string(text))
          .dump(-1, ' ', false, replace ? OrderedJson::error_handler_t::replace : OrderedJson::error_handler_t::strict);
}

void put_json_double(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buffer[64];
  char* end = nlohmann::detail::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

void put_json_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "\"nan\"";
  } else if (std::isinf(value)) {
    out += value > 0 ? "\"inf\"" : "\"-inf\"";
  } else {
    put_json_double(out, value);
  }
}

void put_json_integer(std::string& out, int64_t value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

}  // namespace driftgate

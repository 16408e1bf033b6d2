// The record's JSON conventions, spelled once. Every reader and writer of driftgate's
// JSON files (run and baseline lines, tier-2 profiles, task results, mitigations, the
// acceptance log, baseline proposals, the diff's report.json) uses these:
//   - JSON has no NaN or infinity: they are the strings "nan", "inf" and "-inf";
//   - a member is read by name, required and typed, and an error says which member
//     and what it must be ("missing field 'x'", "field 'x' must be a string"), after
//     the caller's prefix ("localization: ");
//   - written without a DOM, strings and numbers are the bytes nlohmann's dump writes.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace driftgate {

using OrderedJson = nlohmann::ordered_json;

// `value` as the record writes a number: NaN and infinities as strings.
OrderedJson json_number(double value);

// A number as the record writes it (a JSON number, or "nan", "inf", "-inf"); else
// Error("<what> must be a number, got <the value>").
double json_to_number(const OrderedJson& value, const std::string& what);

// The members of one JSON object, read by name. Every error starts with `prefix`.
class JsonFields {
 public:
  // Error("<prefix>expected a JSON object, got ...") when `object` is not one.
  explicit JsonFields(const OrderedJson& object, std::string prefix = "");

  bool has(const char* name) const;
  // The member; Error("<prefix>missing field 'name'") when absent.
  const OrderedJson& get(const char* name) const;
  std::string text(const char* name) const;
  // Within int64 (2^64-1 is refused, never wrapped to -1).
  int64_t integer(const char* name) const;
  // Within int (2^32 + 1 is refused, never truncated to 1).
  int small_integer(const char* name) const;
  // An integer of at least 0.
  int64_t count(const char* name) const;
  // json_to_number of the member.
  double number(const char* name) const;
  bool boolean(const char* name) const;
  std::vector<std::string> strings(const char* name) const;
  std::vector<int64_t> integers(const char* name) const;

  [[noreturn]] void fail(const std::string& what) const;

 private:
  const OrderedJson& m_object;
  std::string m_prefix;
};

// ---- writing without a DOM: the bytes OrderedJson(value).dump() writes ----

// Printable ASCII as it is; anything else escaped as nlohmann escapes it. `replace`:
// invalid UTF-8 becomes U+FFFD (report.json, the acceptance log); otherwise it throws
// as dump() does.
void put_json_string(std::string& out, std::string_view text, bool replace = false);
// A finite double as dump() writes it (shortest round trip, "1e-05", "-0.0"); null
// when not finite.
void put_json_double(std::string& out, double value);
// put_json_double, with NaN and infinities as the strings json_number makes.
void put_json_number(std::string& out, double value);
void put_json_integer(std::string& out, int64_t value);

}  // namespace driftgate

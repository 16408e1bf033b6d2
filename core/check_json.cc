#include "core/check_json.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/error.h"

namespace driftgate {

namespace {

// ---- writing ----------------------------------------------------------------

// A string nlohmann would copy unchanged: printable ASCII without '"' and '\'.
bool plain_ascii(const std::string& text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
      return false;
    }
  }
  return true;
}

void put_string(std::string& out, const std::string& text) {
  if (plain_ascii(text)) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += nlohmann::ordered_json(text).dump();  // escapes and UTF-8 checks exactly as the DOM dump
}

void put_key(std::string& out, const char* key) {
  out += '"';
  out += key;
  out += "\":";
}

void put_integer(std::string& out, int64_t value) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

// A double as nlohmann dumps a number_float: Grisu2 via its own to_chars; null when not finite.
void put_raw_double(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buffer[64];
  char* end = nlohmann::detail::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, end);
}

// record.cc's number(): NaN and infinities as strings.
void put_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "\"nan\"";
  } else if (std::isinf(value)) {
    out += value > 0 ? "\"inf\"" : "\"-inf\"";
  } else {
    put_raw_double(out, value);
  }
}

void put_integers(std::string& out, const std::vector<int64_t>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    put_integer(out, values[i]);
  }
  out += ']';
}

void put_observed(std::string& out, const char* key, const ObservedTensor& observed) {
  out += ',';
  put_key(out, key);
  out += "{\"device\":";
  put_string(out, observed.device);
  out += ",\"dtype\":";
  put_string(out, observed.dtype);
  out += ",\"memory_format\":";
  put_string(out, observed.memory_format);
  out += ",\"shape\":";
  put_integers(out, observed.shape);
  out += '}';
}

void put_field(std::string& out, const char* key, double value) {
  out += ',';
  put_key(out, key);
  put_number(out, value);
}

void put_field(std::string& out, const char* key, int64_t value) {
  out += ',';
  put_key(out, key);
  put_integer(out, value);
}

void put_stats(std::string& out, const Tier1Stats& stats) {
  out += ",\"stats\":{\"numel\":";
  put_integer(out, stats.numel);
  put_field(out, "mismatches", stats.mismatches);
  put_field(out, "mismatch_fraction", stats.mismatch_fraction);
  put_field(out, "max_abs", stats.max_abs);
  out += ",\"max_abs_index\":";
  put_integers(out, stats.max_abs_index);
  put_field(out, "max_abs_reference", stats.max_abs_reference);
  put_field(out, "max_abs_target", stats.max_abs_target);
  put_field(out, "max_rel", stats.max_rel);
  out += ",\"max_rel_index\":";
  put_integers(out, stats.max_rel_index);
  put_field(out, "rel_floor", stats.rel_floor);
  put_field(out, "max_abs_reference_value", stats.max_abs_reference_value);
  put_field(out, "nan_reference", stats.nan_reference);
  put_field(out, "nan_target", stats.nan_target);
  put_field(out, "inf_reference", stats.inf_reference);
  put_field(out, "inf_target", stats.inf_target);
  put_field(out, "min_atol", stats.min_atol);
  put_field(out, "min_rtol", stats.min_rtol);
  put_field(out, "mean_abs", stats.mean_abs);
  put_field(out, "p99_abs", stats.p99_abs);
  put_field(out, "rmse", stats.rmse);
  put_field(out, "cosine_similarity", stats.cosine_similarity);
  put_field(out, "max_ulp", stats.max_ulp);
  if (stats.oracle) {
    out += ",\"oracle\":{\"reference_max_abs\":";
    put_number(out, stats.oracle->reference_max_abs);
    put_field(out, "target_max_abs", stats.oracle->target_max_abs);
    put_field(out, "reference_rmse", stats.oracle->reference_rmse);
    put_field(out, "target_rmse", stats.oracle->target_rmse);
    out += '}';
  }
  if (stats.reference_repeat_max_abs) {
    put_field(out, "reference_repeat_max_abs", *stats.reference_repeat_max_abs);
  }
  if (stats.target_repeat_max_abs) {
    put_field(out, "target_repeat_max_abs", *stats.target_repeat_max_abs);
  }
  out += '}';
}

// ---- reading ----------------------------------------------------------------

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// Each reader returns false where the strict reader might decide otherwise.

bool read_text(element value, std::string& out) {
  std::string_view view;
  if (value.get_string().get(view) != simdjson::SUCCESS) {
    return false;
  }
  out.assign(view.data(), view.size());
  return true;
}

// nlohmann's is_number_integer also holds for unsigned values above INT64_MAX,
// which get<int64_t> wraps: leave those to it.
bool read_integer(element value, int64_t& out) {
  return value.type() == element_type::INT64 && value.get_int64().get(out) == simdjson::SUCCESS;
}

bool read_number(element value, double& out) {
  switch (value.type()) {
    case element_type::STRING: {
      std::string_view text = value.get_string().value_unsafe();
      if (text == "nan") {
        out = std::nan("");
      } else if (text == "inf") {
        out = INFINITY;
      } else if (text == "-inf") {
        out = -INFINITY;
      } else {
        return false;
      }
      return true;
    }
    case element_type::INT64:
      out = static_cast<double>(value.get_int64().value_unsafe());
      return true;
    case element_type::UINT64:
      out = static_cast<double>(value.get_uint64().value_unsafe());
      return true;
    case element_type::DOUBLE:
      out = value.get_double().value_unsafe();
      // nlohmann reads "-0" as the integer 0: a negative zero may be either spelling.
      return !(out == 0.0 && std::signbit(out));
    default:
      return false;
  }
}

bool read_integers(element value, std::vector<int64_t>& out) {
  simdjson::dom::array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) {
    return false;
  }
  out.clear();
  for (element item : items) {
    int64_t number = 0;
    if (!read_integer(item, number)) {
      return false;
    }
    out.push_back(number);
  }
  return true;
}

// Visits the fields of `value` (an object), calling `visit(index, field_value)` for
// each name in `names`; false on a non-object, an unknown or repeated name, a
// missing required one (bit set in `required`), or a visit that fails.
template <size_t N, typename Visit>
bool read_object(element value, const std::string_view (&names)[N], uint32_t required, Visit&& visit) {
  static_assert(N < 32, "a bitmask of seen fields");
  object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return false;
  }
  uint32_t seen = 0;
  for (auto field : fields) {
    size_t i = 0;
    while (i < N && field.key != names[i]) {
      ++i;
    }
    uint32_t bit = uint32_t{1} << i;
    // An unknown name may be a field this codec does not know (yet): the strict
    // reader reads or ignores it. nlohmann keeps the last of duplicated keys: let it decide.
    if (i == N || (seen & bit) != 0 || !visit(i, field.value)) {
      return false;
    }
    seen |= bit;
  }
  return (seen & required) == required;
}

constexpr uint32_t all_of(size_t n) { return n >= 32 ? ~uint32_t{0} : (uint32_t{1} << n) - 1; }

bool read_tolerance(element value, Tolerance& tolerance) {
  // k and origin are optional (records before them have neither).
  static constexpr std::string_view k_names[] = {"atol", "rtol", "rule", "k", "origin"};
  tolerance.k = 0.0;
  tolerance.origin.clear();
  return read_object(value, k_names, all_of(3), [&](size_t i, element field) {
    if (i == 0) {
      return read_number(field, tolerance.atol);
    }
    if (i == 1) {
      return read_number(field, tolerance.rtol);
    }
    if (i == 3) {
      return read_number(field, tolerance.k);
    }
    if (i == 4) {
      return read_text(field, tolerance.origin);
    }
    std::string name;
    if (!read_text(field, name)) {
      return false;
    }
    for (const auto& known : tolerance_rule_names()) {
      if (name == known) {
        tolerance.rule = parse_tolerance_rule(name);
        return true;
      }
    }
    return false;
  });
}

bool read_observed(element value, std::optional<ObservedTensor>& out) {
  static constexpr std::string_view k_names[] = {"device", "dtype", "memory_format", "shape"};
  ObservedTensor& observed = out.emplace();
  return read_object(value, k_names, all_of(4), [&](size_t i, element field) {
    switch (i) {
      case 0:
        return read_text(field, observed.device);
      case 1:
        return read_text(field, observed.dtype);
      case 2:
        return read_text(field, observed.memory_format);
      default:
        return read_integers(field, observed.shape);
    }
  });
}

bool read_oracle(element value, std::optional<OracleErrors>& out) {
  static constexpr std::string_view k_names[] = {"reference_max_abs", "target_max_abs", "reference_rmse",
                                                 "target_rmse"};
  OracleErrors& oracle = out.emplace();
  double* targets[] = {&oracle.reference_max_abs, &oracle.target_max_abs, &oracle.reference_rmse, &oracle.target_rmse};
  return read_object(value, k_names, all_of(4),
                     [&](size_t i, element field) { return read_number(field, *targets[i]); });
}

bool read_stats(element value, std::optional<Tier1Stats>& out) {
  static constexpr std::string_view k_names[] = {"numel",
                                                 "mismatches",
                                                 "mismatch_fraction",
                                                 "max_abs",
                                                 "max_abs_index",
                                                 "max_abs_reference",
                                                 "max_abs_target",
                                                 "max_rel",
                                                 "max_rel_index",
                                                 "rel_floor",
                                                 "max_abs_reference_value",
                                                 "nan_reference",
                                                 "nan_target",
                                                 "inf_reference",
                                                 "inf_target",
                                                 "min_atol",
                                                 "min_rtol",
                                                 "mean_abs",
                                                 "p99_abs",
                                                 "rmse",
                                                 "cosine_similarity",
                                                 "max_ulp",
                                                 "oracle",
                                                 "reference_repeat_max_abs",
                                                 "target_repeat_max_abs"};
  Tier1Stats& stats = out.emplace();
  int64_t* integers[] = {&stats.numel,      &stats.mismatches,    &stats.nan_reference,
                         &stats.nan_target, &stats.inf_reference, &stats.inf_target};
  double* numbers[] = {&stats.mismatch_fraction,
                       &stats.max_abs,
                       &stats.max_abs_reference,
                       &stats.max_abs_target,
                       &stats.max_rel,
                       &stats.rel_floor,
                       &stats.max_abs_reference_value,
                       &stats.min_atol,
                       &stats.min_rtol,
                       &stats.mean_abs,
                       &stats.p99_abs,
                       &stats.rmse,
                       &stats.cosine_similarity,
                       &stats.max_ulp};
  return read_object(value, k_names, all_of(22), [&](size_t i, element field) {
    switch (i) {
      case 0:
        return read_integer(field, *integers[0]);
      case 1:
        return read_integer(field, *integers[1]);
      case 2:
        return read_number(field, *numbers[0]);
      case 3:
        return read_number(field, *numbers[1]);
      case 4:
        return read_integers(field, stats.max_abs_index);
      case 5:
      case 6:
      case 7:
        return read_number(field, *numbers[i - 3]);
      case 8:
        return read_integers(field, stats.max_rel_index);
      case 9:
      case 10:
        return read_number(field, *numbers[i - 4]);
      case 11:
      case 12:
      case 13:
      case 14:
        return read_integer(field, *integers[i - 9]);
      case 22:
        return read_oracle(field, stats.oracle);
      case 23:
        return read_number(field, stats.reference_repeat_max_abs.emplace());
      case 24:
        return read_number(field, stats.target_repeat_max_abs.emplace());
      default:  // 15..21: min_atol .. max_ulp
        return read_number(field, *numbers[i - 8]);
    }
  });
}

bool read_status(element value, CheckStatus& status) {
  std::string name;
  if (!read_text(value, name)) {
    return false;
  }
  for (CheckStatus known : all_check_statuses()) {
    if (name == to_string(known)) {
      status = known;
      return true;
    }
  }
  return false;
}

bool read_timings(element value, CheckRecord& check) {
  static constexpr std::string_view k_names[] = {"reference", "target", "reference_iqr", "target_iqr"};
  double* values[] = {&check.reference_ms, &check.target_ms, &check.reference_iqr_ms, &check.target_iqr_ms};
  return read_object(value, k_names, all_of(2),
                     [&](size_t i, element field) { return read_number(field, *values[i]); });
}

bool read_check(element value, CheckRecord& check) {
  static constexpr std::string_view k_names[] = {
      "type",   "id",      "experiment", "input",      "reference",          "target",          "output",
      "status", "message", "tolerance",  "timings_ms", "observed_reference", "observed_target", "stats"};
  std::string* texts[] = {&check.id, &check.experiment, &check.input, &check.reference, &check.target, &check.output};
  bool ok = read_object(value, k_names, all_of(11), [&](size_t i, element field) {
    switch (i) {
      case 0: {
        std::string_view type;
        return field.get_string().get(type) == simdjson::SUCCESS && type == "check";
      }
      case 7:
        return read_status(field, check.status);
      case 8:
        return read_text(field, check.message);
      case 9:
        return read_tolerance(field, check.tolerance);
      case 10:
        return read_timings(field, check);
      case 11:
        return read_observed(field, check.observed_reference);
      case 12:
        return read_observed(field, check.observed_target);
      case 13:
        return read_stats(field, check.stats);
      default:  // 1..6: id and its parts
        return read_text(field, *texts[i - 1]);
    }
  });
  return ok && check.id == make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
}

}  // namespace

void append_check_json_begin(std::string& out, const CheckRecord& check) {
  out += "{\"type\":\"check\",\"id\":";
  put_string(out, check.id);
  out += ",\"experiment\":";
  put_string(out, check.experiment);
  out += ",\"input\":";
  put_string(out, check.input);
  out += ",\"reference\":";
  put_string(out, check.reference);
  out += ",\"target\":";
  put_string(out, check.target);
  out += ",\"output\":";
  put_string(out, check.output);
  out += ",\"status\":";
  put_string(out, to_string(check.status));
  out += ",\"message\":";
  put_string(out, check.message);
  out += ",\"tolerance\":{\"rule\":";
  put_string(out, to_string(check.tolerance.rule));
  out += ",\"atol\":";
  put_raw_double(out, check.tolerance.atol);
  out += ",\"rtol\":";
  put_raw_double(out, check.tolerance.rtol);
  if (check.tolerance.k > 0.0) {
    out += ",\"k\":";
    put_raw_double(out, check.tolerance.k);
  }
  if (!check.tolerance.origin.empty()) {
    out += ",\"origin\":";
    put_string(out, check.tolerance.origin);
  }
  out += '}';
  if (check.observed_reference) {
    put_observed(out, "observed_reference", *check.observed_reference);
  }
  if (check.observed_target) {
    put_observed(out, "observed_target", *check.observed_target);
  }
  if (check.stats) {
    put_stats(out, *check.stats);
  }
}

void append_check_json_end(std::string& out, const CheckRecord& check) {
  out += ",\"timings_ms\":{\"reference\":";
  put_number(out, check.reference_ms);
  put_field(out, "target", check.target_ms);
  put_field(out, "reference_iqr", check.reference_iqr_ms);
  put_field(out, "target_iqr", check.target_iqr_ms);
  out += "}}";
}

struct CheckLineParser::Impl {
  simdjson::dom::parser parser;
};

CheckLineParser::CheckLineParser() : m_impl(std::make_unique<Impl>()) {}

CheckLineParser::~CheckLineParser() = default;

bool CheckLineParser::parse(std::string_view line, CheckRecord& check) {
  // Escapes (\u surrogates above all) are where JSON parsers differ most, and DEL or any
  // non-ASCII byte may be a character ids must not hold (core/safe_text.h): leave them
  // all to the strict reader.
  if (std::any_of(line.begin(), line.end(),
                  [](char c) { return c == '\\' || static_cast<unsigned char>(c) >= 0x7F; })) {
    return false;
  }
  element document;
  if (m_impl->parser.parse(line.data(), line.size()).get(document) != simdjson::SUCCESS) {
    return false;
  }
  check = CheckRecord{};
  return read_check(document, check);
}

}  // namespace driftgate

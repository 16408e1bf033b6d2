#include "core/tolerance.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace driftgate {
namespace {

constexpr std::pair<ToleranceRule, const char*> k_rule_names[] = {
    {ToleranceRule::k_assert_close, "assert_close"},
    {ToleranceRule::k_polygraphy, "polygraphy"},
    {ToleranceRule::k_normwise, "normwise"},
    {ToleranceRule::k_oracle, "oracle"},
};

struct DtypePrecision {
  const char* dtype;
  double rtol;
  double atol;
};

// torch/testing/_comparison.py (PyTorch 1.13), _DTYPE_PRECISIONS: (rtol, atol).
constexpr DtypePrecision k_precisions[] = {
    {"float16", 1e-3, 1e-5}, {"bfloat16", 1.6e-2, 1e-5},  {"float32", 1.3e-6, 1e-5},
    {"float64", 1e-7, 1e-7}, {"complex64", 1.3e-6, 1e-5}, {"complex128", 1e-7, 1e-7},
};

DtypePrecision precision_of(const std::string& dtype) {
  for (const auto& entry : k_precisions) {
    if (dtype == entry.dtype) {
      return entry;
    }
  }
  return DtypePrecision{"", 0.0, 0.0};
}

}  // namespace

const char* to_string(ToleranceRule rule) {
  for (const auto& [value, name] : k_rule_names) {
    if (value == rule) {
      return name;
    }
  }
  return "unknown";
}

ToleranceRule parse_tolerance_rule(const std::string& name) {
  for (const auto& [value, rule_name] : k_rule_names) {
    if (name == rule_name) {
      return value;
    }
  }
  throw Error("unknown tolerance rule '" + name + "'");
}

const std::vector<std::string>& tolerance_rule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& entry : k_rule_names) {
      all.push_back(entry.second);
    }
    return all;
  }();
  return names;
}

Tolerance assert_close_defaults(const std::string& reference_dtype, const std::string& target_dtype) {
  DtypePrecision a = precision_of(reference_dtype);
  DtypePrecision b = precision_of(target_dtype);
  Tolerance tolerance;
  tolerance.atol = std::max(a.atol, b.atol);
  tolerance.rtol = std::max(a.rtol, b.rtol);
  tolerance.rule = ToleranceRule::k_assert_close;
  return tolerance;
}

double oracle_multiplier(const std::string& target_dtype) {
  return target_dtype == "float16" || target_dtype == "bfloat16" ? 3.0 : 2.0;
}

}  // namespace driftgate

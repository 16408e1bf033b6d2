#include "core/tolerance.h"

#include <algorithm>

namespace driftgate {
namespace {

struct DtypePrecision {
  const char* dtype;
  double rtol;
  double atol;
};

// torch/testing/_comparison.py (PyTorch 1.13), _DTYPE_PRECISIONS: (rtol, atol).
constexpr DtypePrecision k_precisions[] = {
    {"float16", 1e-3, 1e-5},
    {"bfloat16", 1.6e-2, 1e-5},
    {"float32", 1.3e-6, 1e-5},
    {"float64", 1e-7, 1e-7},
    {"complex64", 1.3e-6, 1e-5},
    {"complex128", 1e-7, 1e-7},
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

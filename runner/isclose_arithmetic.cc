// torch.isclose's arithmetic (see runner/isclose_arithmetic.h). The float operations below
// are the ones torch's CPU kernels perform; the build is ISO C++ without -march, so GCC
// neither contracts them into fused multiply-adds nor keeps extended precision.
#include "runner/isclose_arithmetic.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>

namespace driftgate {
namespace {

// A float32 result rounded to the grid's 16-bit dtype, as torch stores it.
float to_16(float value, IscloseArithmetic::Grid grid) {
  return grid == IscloseArithmetic::Grid::k_bfloat16 ? static_cast<float>(c10::BFloat16(value))
                                                     : static_cast<float>(c10::Half(value));
}

}  // namespace

IscloseArithmetic IscloseArithmetic::for_pair(at::ScalarType reference, at::ScalarType target,
                                              bool promote_to_float64) {
  const at::ScalarType common = c10::promoteTypes(reference, target);
  if (c10::isComplexType(common)) {
    return IscloseArithmetic(Grid::k_double);  // compared as (real, imaginary) pairs
  }
  if (!c10::isFloatingType(common)) {
    return IscloseArithmetic(Grid::k_float, true);  // integers and bool: isclose converts to float32
  }
  if (promote_to_float64) {
    return IscloseArithmetic(Grid::k_double);
  }
  switch (common) {
    case at::kFloat:
      return IscloseArithmetic(Grid::k_float);
    case at::kBFloat16:
      return IscloseArithmetic(Grid::k_bfloat16);
    case at::kHalf:
      return IscloseArithmetic(Grid::k_half);
    default:
      return IscloseArithmetic(Grid::k_double);
  }
}

double IscloseArithmetic::to_grid(double value) const {
  switch (m_grid) {
    case Grid::k_double:
      return value;
    case Grid::k_float:
      return static_cast<float>(value);
    case Grid::k_bfloat16:
    case Grid::k_half:
      return to_16(static_cast<float>(value), m_grid);
  }
  return value;
}

double IscloseArithmetic::relative_step() const {
  switch (m_grid) {
    case Grid::k_double:
      return 0x1p-50;
    case Grid::k_float:
      return 0x1p-21;
    case Grid::k_bfloat16:
      return 0x1p-6;
    case Grid::k_half:
      return 0x1p-8;
  }
  return 0x1p-6;
}

double IscloseArithmetic::actual_error(double actual, double expected) const {
  switch (m_grid) {
    case Grid::k_double:
      return std::abs(actual - expected);
    case Grid::k_float:
      return std::abs(static_cast<float>(actual) - static_cast<float>(expected));
    case Grid::k_bfloat16:
    case Grid::k_half: {
      const float a = static_cast<float>(to_grid(actual));
      const float b = static_cast<float>(to_grid(expected));
      return std::abs(to_16(a - b, m_grid));
    }
  }
  return std::abs(actual - expected);
}

bool IscloseArithmetic::close(double actual, double expected, double atol, double rtol) const {
  const double b = to_grid(expected);
  if (m_integral ? actual == expected : to_grid(actual) == b) {
    return true;
  }
  if (atol == 0.0 && rtol == 0.0) {
    return false;  // isclose's short cut: zero tolerances ask for equality
  }
  const double error = actual_error(actual, expected);
  double allowed = 0.0;
  switch (m_grid) {
    case Grid::k_double:
      allowed = atol + std::abs(rtol * b);
      break;
    case Grid::k_float: {
      const float product = static_cast<float>(rtol) * static_cast<float>(b);
      allowed = static_cast<float>(atol) + std::abs(product);
      break;
    }
    case Grid::k_bfloat16:
    case Grid::k_half: {
      // mul takes the scalar at float32 (its reduced-float path); add takes it converted to
      // the tensor's dtype, like any CPU scalar operand.
      const float product = std::abs(to_16(static_cast<float>(b) * static_cast<float>(rtol), m_grid));
      const float atol_16 = to_16(static_cast<float>(atol), m_grid);
      allowed = to_16(product + atol_16, m_grid);
      break;
    }
  }
  return std::isfinite(error) && error <= allowed;
}

}  // namespace driftgate

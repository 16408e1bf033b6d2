// torch.isclose's test, |actual - expected| <= atol + |rtol * expected|, computed with the
// roundings torch computes it with, so that tier 1's verdicts, mismatch counts and smallest
// passing tolerances are the ones torch.testing.assert_close gives on the same two tensors.
//
// assert_close first promotes the pair to a common dtype, then calls torch.isclose, whose
// three element-wise operations each round to that dtype:
//   LibTorch 1.13: floating pairs to float64, integer pairs to int64 (isclose then converts
//                  integers to float32, the default dtype);
//   LibTorch 2.x:  torch.promote_types of the two dtypes (float32 for a bfloat16 target
//                  against a float32 reference; bfloat16 for two bfloat16 tensors), integers
//                  again to float32.
// Measured against torch.isclose itself (tests/runner/isclose_arithmetic_test.cc): in
// bfloat16 and float16 each operation computes in float32 and rounds to the dtype; rtol
// enters the product as a float32, atol enters the sum already rounded to the dtype.
#pragma once

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace driftgate {

class IscloseArithmetic {
 public:
  // The dtype whose rounding every operation takes.
  enum class Grid { k_double, k_float, k_bfloat16, k_half };

  // `integral`: the pair's common dtype is an integer one (or bool), which isclose compares
  // for equality as integers before converting both to the float32 grid.
  explicit IscloseArithmetic(Grid grid, bool integral = false) : m_grid(grid), m_integral(integral) {}

  // What assert_close computes in for this (reference, target) pair: the 1.13 rule where
  // `promote_to_float64`, the 2.x rule otherwise (see above).
  static IscloseArithmetic for_pair(at::ScalarType reference, at::ScalarType target, bool promote_to_float64);

  Grid grid() const { return m_grid; }

  // torch.isclose(actual, expected, rtol, atol) for two values given exactly as doubles: equal
  // values are close; zero tolerances ask for equality; otherwise the error must be finite
  // and at most the allowed error. (NaN and infinities are the caller's business.)
  bool close(double actual, double expected, double atol, double rtol) const;

  // |actual - expected| as isclose computes it (in the grid, after converting both into it).
  double actual_error(double actual, double expected) const;

  // The smallest non-negative double t for which passes(i, t) holds for every i in
  // `elements`, passes being monotone in t; infinity when no finite t does. `estimate` (an
  // approximation from double arithmetic) is where the search starts; the answer is exact
  // whatever the estimate. Used for the smallest passing atol and rtol.
  template <typename Passes>
  double smallest_passing(const std::vector<int64_t>& elements, double estimate, Passes passes) const;

 private:
  double to_grid(double value) const;  // a value converted into the grid, as torch converts it
  double relative_step() const;        // four of the grid's ulps, relative: how far an estimate can be off

  Grid m_grid;
  bool m_integral;
};

template <typename Passes>
double IscloseArithmetic::smallest_passing(const std::vector<int64_t>& elements, double estimate, Passes passes) const {
  auto failing_at = [&passes](const std::vector<int64_t>& from, double t) {
    std::vector<int64_t> failing;
    for (int64_t i : from) {
      if (!passes(i, t)) {
        failing.push_back(i);
      }
    }
    return failing;
  };
  const double infinity = std::numeric_limits<double>::infinity();
  const double tiny = std::numeric_limits<double>::denorm_min();
  double start = (estimate >= 0.0 && estimate < infinity) ? estimate : 0.0;
  // An upper bound that passes: grow from the estimate, re-checking only the elements that
  // still fail (the others pass at every larger t).
  double high = start;
  std::vector<int64_t> over = failing_at(elements, high);
  for (double step = std::max(high * relative_step(), tiny); !over.empty(); step *= 2.0) {
    high += step;
    if (high == infinity) {
      return infinity;
    }
    over = failing_at(over, high);
  }
  // A lower bound that fails somewhere; only the elements that fail there can decide.
  std::vector<int64_t> deciding;
  double low = high;
  for (double step = std::max(high * relative_step(), tiny); deciding.empty(); step *= 2.0) {
    if (low == 0.0) {
      return 0.0;
    }
    low = std::max(low - step, 0.0);
    deciding = failing_at(elements, low);
    if (deciding.empty()) {
      high = low;
    }
  }
  // Bisection over the bit patterns of non-negative doubles, which order as the values do.
  auto bits = [](double value) {
    int64_t pattern = 0;
    std::memcpy(&pattern, &value, sizeof pattern);
    return pattern;
  };
  auto value_of = [](int64_t pattern) {
    double value = 0.0;
    std::memcpy(&value, &pattern, sizeof value);
    return value;
  };
  int64_t low_bits = bits(low);
  int64_t high_bits = bits(high);
  while (high_bits - low_bits > 1) {
    const int64_t middle = low_bits + (high_bits - low_bits) / 2;
    if (failing_at(deciding, value_of(middle)).empty()) {
      high_bits = middle;
    } else {
      low_bits = middle;
    }
  }
  return value_of(high_bits);
}

}  // namespace driftgate

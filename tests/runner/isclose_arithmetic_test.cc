// runner/isclose_arithmetic.h against the function it models, the linked LibTorch's own
// at::isclose, on random and boundary values of every grid's dtype; and tier 1's smallest
// passing tolerances against at::isclose on the pair promoted as this LibTorch line's
// assert_close promotes it (float64 under 1.13, the common dtype under 2.x).
#include "runner/isclose_arithmetic.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "runner/tier1.h"
#include "runner/torch_compat.h"

namespace driftgate {
namespace {

struct GridCase {
  IscloseArithmetic::Grid grid;
  at::ScalarType dtype;  // the tensors' dtype at::isclose runs on
  const char* name;
};

const GridCase k_grids[] = {
    {IscloseArithmetic::Grid::k_double, at::kDouble, "float64"},
    {IscloseArithmetic::Grid::k_float, at::kFloat, "float32"},
    {IscloseArithmetic::Grid::k_bfloat16, at::kBFloat16, "bfloat16"},
    {IscloseArithmetic::Grid::k_half, at::kHalf, "float16"},
    {IscloseArithmetic::Grid::k_float, at::kLong, "int64"},  // isclose converts integers to float32
};

// Tolerances on and around the boundary of element i, where the roundings decide: the double
// estimates of the smallest passing atol and rtol and their neighbours, plus round values.
std::vector<std::pair<double, double>> tolerances_near(double a, double b, std::mt19937_64& random) {
  const double diff = std::abs(a - b);
  const double scale = std::abs(b);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double rtol = std::pow(10.0, -1.0 - 5.0 * unit(random));
  std::vector<std::pair<double, double>> result = {{0.0, 0.0}, {1e-5, 1.3e-6}, {1e-3, 1.6e-2}, {0.0, rtol}};
  const double atol = std::max(diff - rtol * scale, 0.0);
  for (double nudge : {1.0, 1.0 + 1e-7, 1.0 - 1e-7, 1.0 + 4e-3, 1.0 - 4e-3}) {
    result.emplace_back(atol * nudge, rtol);
    result.emplace_back(std::nextafter(atol * nudge, 1.0), rtol);
    if (scale > 0.0) {
      const double atol2 = diff * unit(random);
      result.emplace_back(atol2, std::max((diff - atol2) / scale, 0.0) * nudge);
    }
  }
  return result;
}

TEST(IscloseArithmetic, AgreesWithAtIscloseOnEveryGrid) {
  std::mt19937_64 random(20261206);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (const GridCase& grid : k_grids) {
    if (torch_compat::k_assert_close_in_float64 && c10::elementSize(grid.dtype) == 2) {
      // LibTorch 1.13's assert_close promotes to float64 and never computes in a 16-bit
      // dtype, and its 16-bit kernels round the scalars differently from 2.x's (measured).
      continue;
    }
    const IscloseArithmetic isclose(grid.grid, grid.dtype == at::kLong);
    int64_t checked = 0;
    int64_t close_count = 0;
    for (int trial = 0; trial < 250; ++trial) {
      // Values of the dtype: random magnitudes, targets a relative 1e-1..1e-7 away (for
      // integers: up to 2^30, a few units away, so float32's rounding of them matters).
      const int64_t n = 64;
      at::Tensor expected;
      at::Tensor actual;
      if (grid.dtype == at::kLong) {
        expected = at::randint(-(int64_t{1} << 30), int64_t{1} << 30, {n}, at::kLong);
        actual = expected + at::randint(-300, 300, {n}, at::kLong);
      } else {
        const double magnitude = std::pow(10.0, -4.0 + 8.0 * unit(random));
        expected = (at::randn({n}, at::kDouble) * magnitude).to(grid.dtype);
        const double spread = std::pow(10.0, -1.0 - 6.0 * unit(random));
        actual = (expected.to(at::kDouble) * (1.0 + at::randn({n}, at::kDouble) * spread)).to(grid.dtype);
        actual[0] = expected[0];  // equal values
        expected[1] = 0.0;        // a zero reference
      }
      const at::Tensor a = actual.to(at::kDouble);
      const at::Tensor b = expected.to(at::kDouble);
      for (int64_t i = 0; i < n; i += 7) {
        const double av = a[i].item<double>();
        const double bv = b[i].item<double>();
        for (const auto& [atol, rtol] : tolerances_near(av, bv, random)) {
          const bool torch_says =
              at::isclose(actual.slice(0, i, i + 1), expected.slice(0, i, i + 1), rtol, atol).item<bool>();
          ASSERT_EQ(isclose.close(av, bv, atol, rtol), torch_says)
              << grid.name << ": actual " << av << ", expected " << bv << ", atol " << atol << ", rtol " << rtol;
          ++checked;
          close_count += torch_says ? 1 : 0;
        }
      }
    }
    // Both answers must be common, or agreement would prove little.
    EXPECT_GT(close_count, 1000) << grid.name;
    EXPECT_GT(checked - close_count, 1000) << grid.name;
  }
}

TEST(IscloseArithmetic, ActualErrorIsTheDifferenceRoundedToTheGrid) {
  for (const GridCase& grid : k_grids) {
    if (grid.dtype == at::kLong || (torch_compat::k_assert_close_in_float64 && c10::elementSize(grid.dtype) == 2)) {
      continue;
    }
    const at::Tensor expected = (at::randn({200}, at::kDouble) * 1e3).to(grid.dtype);
    const at::Tensor actual = (at::randn({200}, at::kDouble) * 1e3).to(grid.dtype);
    const at::Tensor torch_error = (actual - expected).abs().to(at::kDouble);
    const IscloseArithmetic isclose(grid.grid);
    for (int64_t i = 0; i < 200; ++i) {
      ASSERT_EQ(isclose.actual_error(actual[i].item<double>(), expected[i].item<double>()),
                torch_error[i].item<double>())
          << grid.name;
    }
  }
}

// What assert_close computes isclose on for this pair under this LibTorch line.
std::pair<at::Tensor, at::Tensor> promoted(const at::Tensor& target, const at::Tensor& reference) {
  const at::ScalarType common = c10::promoteTypes(target.scalar_type(), reference.scalar_type());
  at::ScalarType type = common;
  if (torch_compat::k_assert_close_in_float64) {
    type = c10::isFloatingType(common) ? at::kDouble : at::kLong;
  }
  return {target.to(type), reference.to(type)};
}

bool torch_passes(const at::Tensor& target, const at::Tensor& reference, double atol, double rtol) {
  const auto [a, b] = promoted(target, reference);
  return at::isclose(a, b, rtol, atol).all().item<bool>();
}

TEST(IscloseArithmetic, SmallestPassingTolerancesAreExactAgainstAtIsclose) {
  struct PairCase {
    at::ScalarType reference;
    at::ScalarType target;
  };
  const PairCase pairs[] = {{at::kFloat, at::kFloat},   {at::kFloat, at::kBFloat16}, {at::kBFloat16, at::kBFloat16},
                            {at::kHalf, at::kHalf},     {at::kDouble, at::kFloat},   {at::kFloat, at::kHalf},
                            {at::kBFloat16, at::kHalf}, {at::kLong, at::kLong}};
  for (const PairCase& pair : pairs) {
    for (int trial = 0; trial < 12; ++trial) {
      at::Tensor reference;
      at::Tensor target;
      if (pair.reference == at::kLong) {
        reference = at::randint(-(int64_t{1} << 28), int64_t{1} << 28, {3, 50}, at::kLong);
        target = reference + at::randint(-40, 40, {3, 50}, at::kLong);
      } else {
        const at::Tensor base = at::randn({3, 50}, at::kDouble) * std::pow(10.0, trial % 5 - 2);
        reference = base.to(pair.reference);
        target = (base * (1.0 + at::randn({3, 50}, at::kDouble) * std::pow(10.0, -2 - trial % 4))).to(pair.target);
      }
      const std::string where = std::string(c10::toString(pair.reference)) + " reference, " +
                                c10::toString(pair.target) + " target, trial " + std::to_string(trial);
      for (const Tolerance& tolerance : {Tolerance{0.0, 1.3e-6}, Tolerance{1e-5, 0.0}, Tolerance{1e-4, 1e-3}}) {
        const Tier1Stats stats = compute_tier1_stats(reference, target, tolerance);
        ASSERT_TRUE(std::isfinite(stats.min_atol)) << where;
        EXPECT_TRUE(torch_passes(target, reference, stats.min_atol, tolerance.rtol)) << where;
        if (stats.min_atol > 0.0) {
          EXPECT_FALSE(torch_passes(target, reference, std::nextafter(stats.min_atol, 0.0), tolerance.rtol))
              << where << ": min_atol " << stats.min_atol << " is not the smallest";
        }
        if (std::isfinite(stats.min_rtol)) {
          EXPECT_TRUE(torch_passes(target, reference, tolerance.atol, stats.min_rtol)) << where;
          if (stats.min_rtol > 0.0) {
            EXPECT_FALSE(torch_passes(target, reference, tolerance.atol, std::nextafter(stats.min_rtol, 0.0)))
                << where << ": min_rtol " << stats.min_rtol << " is not the smallest";
          }
        }
        // The verdict at the configured tolerance is at::isclose's too.
        const auto [a, b] = promoted(target, reference);
        const int64_t torch_mismatches =
            a.numel() - at::isclose(a, b, tolerance.rtol, tolerance.atol).sum().item<int64_t>();
        EXPECT_EQ(stats.mismatches, torch_mismatches) << where;
      }
    }
  }
}

TEST(IscloseArithmetic, NoRtolHelpsAZeroReferenceAndNoAtolAnOverflowingDifference) {
  const at::Tensor reference = at::tensor({0.0, 1.0}, at::kFloat);
  const at::Tensor target = at::tensor({1e-3, 1.0}, at::kFloat);
  const Tier1Stats stats = compute_tier1_stats(reference, target, Tolerance{1e-4, 0.0});
  EXPECT_TRUE(std::isinf(stats.min_rtol));
  EXPECT_FALSE(torch_passes(target, reference, 1e-4, 1e300));
  // float32's difference of two finite values can overflow: isclose then never passes.
  const at::Tensor huge = at::tensor({3e38f}, at::kFloat);
  const Tier1Stats overflow = compute_tier1_stats(-huge, huge, Tolerance{0.0, 0.0});
  if (!torch_compat::k_assert_close_in_float64) {
    EXPECT_TRUE(std::isinf(overflow.min_atol));
    EXPECT_FALSE(torch_passes(huge, -huge, 1e308, 0.0));
  } else {
    EXPECT_TRUE(std::isfinite(overflow.min_atol));  // float64 holds 6e38
    EXPECT_TRUE(torch_passes(huge, -huge, overflow.min_atol, 0.0));
  }
}

}  // namespace
}  // namespace driftgate

// Tier-1 statistics of two same-shaped tensors (declared in runner/tier1.h): the
// element-wise error distribution, ULP distances in the reference's dtype, the
// minimum tolerances that would have passed, and the mismatch count of the rule.
#include <ATen/Functions.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "runner/isclose_arithmetic.h"
#include "runner/tier1.h"
#include "runner/torch_compat.h"

namespace driftgate {
namespace {

const double k_infinity = std::numeric_limits<double>::infinity();

std::string format_shape(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return text + "]";
}

// A position on the line of representable values of the reference's dtype:
// adjacent values differ by 1, +0 and -0 are both 0.
long double ulp_key(double value, at::ScalarType type) {
  switch (type) {
    case at::kDouble: {
      int64_t bits = 0;
      std::memcpy(&bits, &value, sizeof bits);
      return bits < 0 ? -static_cast<long double>(bits & std::numeric_limits<int64_t>::max())
                      : static_cast<long double>(bits);
    }
    case at::kFloat: {
      float narrow = static_cast<float>(value);
      int32_t bits = 0;
      std::memcpy(&bits, &narrow, sizeof bits);
      return bits < 0 ? -static_cast<long double>(bits & std::numeric_limits<int32_t>::max())
                      : static_cast<long double>(bits);
    }
    case at::kBFloat16:
    case at::kHalf: {
      float narrow = static_cast<float>(value);
      uint16_t raw = type == at::kBFloat16 ? c10::BFloat16(narrow).x : c10::Half(narrow).x;
      return (raw & 0x8000) != 0 ? -static_cast<long double>(raw & 0x7fff) : static_cast<long double>(raw);
    }
    default:
      return static_cast<long double>(value);  // integers: one step is 1
  }
}

// A dense float64 CPU copy; complex numbers as trailing (real, imaginary) pairs.
at::Tensor as_double(const at::Tensor& tensor) {
  at::Tensor dense = tensor.detach();
  if (dense.is_mkldnn() || dense.is_sparse()) {
    dense = dense.to_dense();
  }
  dense = dense.cpu();
  if (dense.is_complex()) {
    dense = at::view_as_real(dense.resolve_conj());
  }
  return dense.to(at::kDouble).contiguous();
}

bool element_fails(double a, double b, const Tolerance& tolerance, double normwise_limit,
                   const IscloseArithmetic& isclose) {
  const double diff = std::abs(a - b);
  switch (tolerance.rule) {
    case ToleranceRule::k_polygraphy:
      // Polygraphy: relative error |a-b|/|b|, infinite where b == 0 and a != b.
      return diff > tolerance.atol && diff > tolerance.rtol * std::abs(b);
    case ToleranceRule::k_normwise:
      return diff > normwise_limit;
    case ToleranceRule::k_assert_close:
    case ToleranceRule::k_oracle:
      break;
  }
  return !isclose.close(a, b, tolerance.atol, tolerance.rtol);
}

}  // namespace

std::vector<int64_t> unravel_index(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      index[d] = flat % shape[d];
      flat /= shape[d];
    }
  }
  return index;
}

Tier1Stats compute_tier1_stats(const at::Tensor& reference, const at::Tensor& target, const Tolerance& tolerance,
                               int64_t* nonfinite_mismatches, MismatchDetail* detail) {
  if (reference.sizes() != target.sizes()) {
    throw Error("tier 1 statistics need equal shapes, got " + format_shape(reference.sizes().vec()) + " and " +
                format_shape(target.sizes().vec()));
  }
  at::Tensor b_tensor = as_double(reference);
  at::Tensor a_tensor = as_double(target);
  const at::ScalarType ulp_type = reference.is_complex() ? at::kDouble : reference.scalar_type();
  const double* b = b_tensor.data_ptr<double>();
  const double* a = a_tensor.data_ptr<double>();
  const int64_t n = b_tensor.numel();
  const std::vector<int64_t> shape = b_tensor.sizes().vec();
  const IscloseArithmetic isclose = IscloseArithmetic::for_pair(reference.scalar_type(), target.scalar_type(),
                                                                torch_compat::k_assert_close_in_float64);
  // assert_close's message reports integer differences exactly (in int64), floating ones as
  // isclose computed them.
  const at::ScalarType common = c10::promoteTypes(reference.scalar_type(), target.scalar_type());
  const bool integral = !c10::isFloatingType(common) && !c10::isComplexType(common);

  Tier1Stats stats;
  stats.numel = n;
  for (int64_t i = 0; i < n; ++i) {
    stats.nan_reference += std::isnan(b[i]) ? 1 : 0;
    stats.inf_reference += std::isinf(b[i]) ? 1 : 0;
    stats.nan_target += std::isnan(a[i]) ? 1 : 0;
    stats.inf_target += std::isinf(a[i]) ? 1 : 0;
    if (std::isfinite(b[i])) {
      stats.max_abs_reference_value = std::max(stats.max_abs_reference_value, std::abs(b[i]));
    }
  }
  // Relative errors divide by max(|b|, rel_floor) so that reference values near
  // zero (where any absolute error is "infinitely" relative) do not dominate.
  stats.rel_floor =
      stats.max_abs_reference_value > 0.0 ? 1e-3 * stats.max_abs_reference_value : std::numeric_limits<double>::min();
  const double normwise_limit = tolerance.atol + tolerance.rtol * stats.max_abs_reference_value;
  MismatchDetail local_detail;
  MismatchDetail& worst = detail != nullptr ? *detail : local_detail;
  worst = MismatchDetail{};
  int64_t nonfinite = 0;
  int64_t max_abs_at = -1;
  int64_t max_rel_at = -1;
  int64_t finite = 0;
  double sum_abs = 0.0;
  double sum_squares = 0.0;
  double dot = 0.0;
  double norm_a = 0.0;
  double norm_b = 0.0;
  std::vector<double> diffs;
  diffs.reserve(static_cast<size_t>(n));
  std::vector<int64_t> finite_at;  // the elements a tolerance can make pass
  finite_at.reserve(static_cast<size_t>(n));
  double atol_estimate = 0.0;  // the smallest passing tolerances, estimated in double
  double rtol_estimate = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      bool same = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i];
      if (!same) {
        ++nonfinite;
        ++stats.mismatches;
      }
      continue;
    }
    const double diff = std::abs(a[i] - b[i]);
    const double scale = std::abs(b[i]);
    ++finite;
    finite_at.push_back(i);
    diffs.push_back(diff);
    sum_abs += diff;
    sum_squares += diff * diff;
    dot += a[i] * b[i];
    norm_a += a[i] * a[i];
    norm_b += b[i] * b[i];
    const double unfloored = diff == 0.0 ? 0.0 : (scale == 0.0 ? k_infinity : diff / scale);
    worst.max_rel_unfloored = std::max(worst.max_rel_unfloored, unfloored);
    if (element_fails(a[i], b[i], tolerance, normwise_limit, isclose)) {
      ++stats.mismatches;
      const double reported = integral ? diff : isclose.actual_error(a[i], b[i]);
      if (worst.abs_index.empty() || reported > worst.abs) {
        worst.abs = reported;
        worst.abs_index = unravel_index(i, shape);
        worst.abs_reference = b[i];
        worst.abs_target = a[i];
      }
      if (worst.rel_index.empty() || unfloored > worst.rel) {
        worst.rel = unfloored;
        worst.rel_index = unravel_index(i, shape);
      }
    }
    if (max_abs_at < 0 || diff > stats.max_abs) {
      stats.max_abs = diff;
      max_abs_at = i;
    }
    const double relative = diff / std::max(scale, stats.rel_floor);
    if (max_rel_at < 0 || relative > stats.max_rel) {
      stats.max_rel = relative;
      max_rel_at = i;
    }
    atol_estimate = std::max(atol_estimate, diff - tolerance.rtol * scale);
    if (diff > tolerance.atol && scale > 0.0) {
      rtol_estimate = std::max(rtol_estimate, (diff - tolerance.atol) / scale);
    }
    const long double ulps = std::abs(ulp_key(a[i], ulp_type) - ulp_key(b[i], ulp_type));
    stats.max_ulp = std::max(stats.max_ulp, static_cast<double>(ulps));
  }
  // The smallest atol (rtol) with which isclose, computed as torch computes it, passes every
  // finite element at the configured rtol (atol): found exactly, from the double estimates.
  stats.min_atol = isclose.smallest_passing(finite_at, atol_estimate, [&](int64_t i, double atol) {
    return isclose.close(a[i], b[i], atol, tolerance.rtol);
  });
  stats.min_rtol = isclose.smallest_passing(finite_at, rtol_estimate, [&](int64_t i, double rtol) {
    return isclose.close(a[i], b[i], tolerance.atol, rtol);
  });
  stats.mismatch_fraction = n > 0 ? static_cast<double>(stats.mismatches) / static_cast<double>(n) : 0.0;
  if (finite > 0) {
    stats.mean_abs = sum_abs / static_cast<double>(finite);
    stats.rmse = std::sqrt(sum_squares / static_cast<double>(finite));
    // Nearest rank: the smallest value with at least 99% of the elements at or below it.
    size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(finite)));
    rank = std::max<size_t>(rank, 1) - 1;
    std::nth_element(diffs.begin(), diffs.begin() + static_cast<std::ptrdiff_t>(rank), diffs.end());
    stats.p99_abs = diffs[rank];
  }
  if (norm_a == 0.0 && norm_b == 0.0) {
    stats.cosine_similarity = 1.0;
  } else if (norm_a == 0.0 || norm_b == 0.0) {
    stats.cosine_similarity = 0.0;
  } else {
    stats.cosine_similarity = dot / (std::sqrt(norm_a) * std::sqrt(norm_b));
  }
  if (max_abs_at >= 0) {
    stats.max_abs_index = unravel_index(max_abs_at, shape);
    stats.max_abs_reference = b[max_abs_at];
    stats.max_abs_target = a[max_abs_at];
  }
  if (max_rel_at >= 0) {
    stats.max_rel_index = unravel_index(max_rel_at, shape);
  }
  if (nonfinite_mismatches != nullptr) {
    *nonfinite_mismatches = nonfinite;
  }
  return stats;
}

OracleErrors compute_oracle_errors(const at::Tensor& reference, const at::Tensor& target, const at::Tensor& oracle) {
  at::Tensor o = as_double(oracle);
  auto errors_of = [&o](const at::Tensor& side, double& max_abs, double& rmse) {
    at::Tensor diff = (as_double(side) - o).abs();
    max_abs = diff.numel() > 0 ? diff.max().item<double>() : 0.0;
    rmse = diff.numel() > 0 ? diff.pow(2).mean().sqrt().item<double>() : 0.0;
  };
  OracleErrors errors;
  errors_of(reference, errors.reference_max_abs, errors.reference_rmse);
  errors_of(target, errors.target_max_abs, errors.target_rmse);
  return errors;
}

}  // namespace driftgate

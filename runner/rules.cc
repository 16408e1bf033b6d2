#include "runner/rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/tolerance.h"

namespace driftgate {
namespace {

std::string percent(int64_t part, int64_t whole) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", whole > 0 ? 100.0 * static_cast<double>(part) / whole : 0.0);
  return buffer;
}

std::string mismatched(const Tier1Stats& stats) {
  return "Mismatched elements: " + std::to_string(stats.mismatches) + " / " + std::to_string(stats.numel) + " (" +
         percent(stats.mismatches, stats.numel) + ")";
}

// assert_close's two "Greatest ... difference" lines, over mismatching elements only.
std::string greatest(const MismatchDetail& detail, double atol, double rtol) {
  return "Greatest absolute difference: " + format_value(detail.abs) + " at index " + format_index(detail.abs_index) +
         " (up to " + format_value(atol) + " allowed) · Greatest relative difference: " + format_value(detail.rel) +
         " at index " + format_index(detail.rel_index) + " (up to " + format_value(rtol) + " allowed) · at " +
         format_index(detail.abs_index) + " reference " + format_value(detail.abs_reference) + ", target " +
         format_value(detail.abs_target);
}

std::string minimum(const Tier1Stats& stats, const Tolerance& tolerance) {
  return "minimum required tolerance: atol " + format_value(stats.min_atol) + " at rtol " +
         format_value(tolerance.rtol) + ", or rtol " + format_value(stats.min_rtol) + " at atol " +
         format_value(tolerance.atol);
}

std::string oracle_failure(const Tier1Stats& stats, const Tolerance& tolerance, const std::string& target_dtype) {
  const OracleErrors& oracle = *stats.oracle;
  // k as configured (Tolerance::k); a tolerance without one (tests) takes PyTorch's per dtype.
  const double k = tolerance.k > 0.0 ? tolerance.k : oracle_multiplier(target_dtype);
  // A target at 10x the reference's error is flagged, or at k x where k was set above 10.
  const double flag_ratio = std::max(k_oracle_flag_ratio, k);
  const double floor = tolerance.atol / 10.0;
  const double allowed = k * oracle.reference_rmse + floor;
  const std::string errors = " · max |target - float64| " + format_value(oracle.target_max_abs) +
                             ", max |reference - float64| " + format_value(oracle.reference_max_abs);
  if (!(oracle.target_rmse <= allowed)) {
    return "oracle rule (PyTorch same()): the target's RMSE against float64 " + format_value(oracle.target_rmse) +
           " exceeds " + format_value(k) + " x the reference's " + format_value(oracle.reference_rmse) + " + atol/10 " +
           format_value(floor) + " = " + format_value(allowed) + errors;
  }
  if (oracle.target_rmse > 0.0 && oracle.target_rmse >= flag_ratio * oracle.reference_rmse) {
    std::string ratio =
        oracle.reference_rmse > 0.0 ? format_value(oracle.target_rmse / oracle.reference_rmse) + " x" : "infinitely";
    return "oracle rule (PyTorch same()): the target's RMSE against float64 " + format_value(oracle.target_rmse) +
           " is " + ratio + " the reference's " + format_value(oracle.reference_rmse) + " (" +
           format_value(flag_ratio) + " x or more is flagged even where atol/10 " + format_value(floor) +
           " would absorb it)" + errors;
  }
  return "";
}

}  // namespace

std::string format_value(double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

std::string format_index(const std::vector<int64_t>& index) {
  std::string text = "(";
  for (size_t i = 0; i < index.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(index[i]);
  }
  return text + (index.size() == 1 ? ",)" : ")");
}

std::string rule_failure(const Tier1Stats& stats, const MismatchDetail& detail, const Tolerance& tolerance,
                         const std::string& target_dtype) {
  switch (tolerance.rule) {
    case ToleranceRule::k_oracle:
      return stats.oracle ? oracle_failure(stats, tolerance, target_dtype) : "";
    case ToleranceRule::k_normwise: {
      if (stats.mismatches == 0) {
        return "";
      }
      const double limit = tolerance.atol + tolerance.rtol * stats.max_abs_reference_value;
      const double min_atol = std::max(0.0, stats.max_abs - tolerance.rtol * stats.max_abs_reference_value);
      const double min_rtol = stats.max_abs_reference_value > 0.0
                                  ? std::max(0.0, stats.max_abs - tolerance.atol) / stats.max_abs_reference_value
                                  : INFINITY;
      return "norm-wise rule (Eq. 1): max |a-b| " + format_value(stats.max_abs) + " > atol " +
             format_value(tolerance.atol) + " + rtol " + format_value(tolerance.rtol) + " x max |reference| " +
             format_value(stats.max_abs_reference_value) + " = " + format_value(limit) + " · " + mismatched(stats) +
             " · Greatest absolute difference: " + format_value(stats.max_abs) + " at index " +
             format_index(stats.max_abs_index) + " (reference " + format_value(stats.max_abs_reference) + ", target " +
             format_value(stats.max_abs_target) + ") · minimum required tolerance: atol " + format_value(min_atol) +
             " at rtol " + format_value(tolerance.rtol) + ", or rtol " + format_value(min_rtol) + " at atol " +
             format_value(tolerance.atol);
    }
    case ToleranceRule::k_polygraphy:
      if (stats.mismatches == 0) {
        return "";
      }
      return "Polygraphy elementwise rule (fail where |a-b| > atol and |a-b|/|b| > rtol): " + mismatched(stats) +
             " · " + greatest(detail, tolerance.atol, tolerance.rtol) +
             " · Minimum Required Tolerance: elemwise error | [abs=" + format_value(stats.max_abs) +
             "] OR [rel=" + format_value(detail.max_rel_unfloored) + "]";
    case ToleranceRule::k_assert_close:
      break;
  }
  if (stats.mismatches == 0) {
    return "";
  }
  return "Tensor-likes are not close! " + mismatched(stats) + " · " + greatest(detail, tolerance.atol, tolerance.rtol) +
         " · " + minimum(stats, tolerance);
}

}  // namespace driftgate

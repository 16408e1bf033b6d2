// Tier 1: element-wise closeness of one backend's outputs to the reference's.
//
// It exists because the paper's runner compared only what it understood and
// passed the rest: a dict output went through without a single comparison. Here
// an output of any nesting (tensor, tuple, list, dict, scalars, strings) is
// flattened into leaves with stable paths ("out", "out[0]", "out['boxes']"); the
// reference's leaves define the checks, and every leaf gets a verdict:
//   structure (missing key, other container, other length, a non-tensor leaf
//   that differs), then per tensor as PyTorch's assert_close orders it: shape,
//   dtype (only where the backend promised the reference's dtype), NaN masks and
//   infinity signs, then |a - b| <= atol + rtol * |b| with b the reference.
// Statistics are computed in float64 on the CPU whatever the outputs' dtype; the
// assert_close rule's verdicts and smallest passing tolerances in the arithmetic that
// this LibTorch line's assert_close uses (runner/isclose_arithmetic.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/experiment.h"
#include "core/record.h"
#include "runner/rules.h"

namespace driftgate {

// One leaf of an output with the containers around it, outermost first.
struct OutputLeaf {
  std::string path;   // "out", "out[0]", "out['boxes']", "out['a'][1]"
  c10::IValue value;  // a tensor, float, int, bool, str, None, or an empty container
  // (path of the container, its description): ("out", "dict with keys 'a', 'b'").
  std::vector<std::pair<std::string, std::string>> containers;
};

// Depth-first, tuple and list elements in order, dict entries by sorted key
// (ints numerically, strings lexicographically). Never empty: an empty
// container is itself a leaf.
std::vector<OutputLeaf> flatten_output(const c10::IValue& output);

struct CompareOptions {
  // The rule, and the atol/rtol unless tolerance_per_dtype.
  Tolerance tolerance;
  // atol/rtol were not configured: each leaf uses assert_close's defaults for its
  // two observed dtypes (core/tolerance.h).
  bool tolerance_per_dtype = false;
  // When set, each leaf's tolerance instead: (output path, observed reference dtype,
  // observed target dtype) -> the tolerance with its origins. The runner sets it to
  // resolve_tolerance for the target (per-target, per-output and per-dtype entries);
  // the two members above serve comparisons without a config (the reference's repeats, tests).
  std::function<Tolerance(const std::string&, const std::string&, const std::string&)> resolve_tolerance;
  // The float64 oracle's output for the same input, or null when it has none; then
  // `oracle_problem` says why, and the oracle rule fails the leaf as k_crash_ref.
  const c10::IValue* oracle = nullptr;
  std::string oracle_problem;
  // The reference and target specs ask for the same dtype, so a different
  // observed dtype is a failure (k_fail_dtype) rather than the point of the check.
  bool same_dtype_promised = true;
  // The devices the specs ask for; an output elsewhere makes the check k_fail_device.
  Device reference_device = Device::k_cpu;
  Device target_device = Device::k_cpu;
};

// The verdict on one reference leaf.
struct LeafComparison {
  std::string output;  // the reference leaf's path
  CheckStatus status = CheckStatus::k_pass;
  std::string message;  // empty on pass
  std::optional<ObservedTensor> observed_reference;
  std::optional<ObservedTensor> observed_target;
  std::optional<Tier1Stats> stats;  // present when both leaves are same-shaped tensors or floats
  Tolerance tolerance;              // the tolerance applied (per-dtype defaults resolved)
};

// One comparison per leaf of `reference`, in flatten_output's order.
std::vector<LeafComparison> compare_outputs(const c10::IValue& reference, const c10::IValue& target,
                                            const CompareOptions& options);

// The statistics of two same-shaped tensors (throws driftgate::Error otherwise),
// in runner/tier1_stats.cc. NaN at the same position in both, or the same
// infinity, counts as equal; every other non-finite difference is a mismatch and
// is also counted in `*nonfinite_mismatches` when given. Finite elements mismatch
// by `tolerance.rule` (assert_close's for the oracle rule). min_atol (min_rtol) is
// the smallest atol (rtol) with which `|a-b| <= atol + |rtol*b|`, computed as this
// LibTorch line's assert_close computes it, passes every finite element at the
// configured rtol (atol). `detail`, when given, receives the worst mismatch.
Tier1Stats compute_tier1_stats(const at::Tensor& reference, const at::Tensor& target, const Tolerance& tolerance,
                               int64_t* nonfinite_mismatches = nullptr, MismatchDetail* detail = nullptr);

// Both sides' error against the float64 oracle (same shapes required).
OracleErrors compute_oracle_errors(const at::Tensor& reference, const at::Tensor& target, const at::Tensor& oracle);

// The multi-dimensional position of flat index `flat` in `shape` (row-major).
std::vector<int64_t> unravel_index(int64_t flat, const std::vector<int64_t>& shape);

// What a tensor is: device ("cpu", "cuda:0"), dtype ("float32"), memory format
// ("contiguous", "channels_last", "strided", or "opaque" for oneDNN layouts), shape.
ObservedTensor observe_tensor(const at::Tensor& tensor);

// "float32", "bfloat16", "int64", ...
std::string dtype_name(at::ScalarType type);

// Run-to-run variance of one backend: for each numeric leaf of the first output,
// the largest |x_r - x_0| over the later repeats r (infinity when a repeat's
// shape or non-finite pattern differs). Empty for fewer than two repeats.
std::map<std::string, double> repeat_max_abs(const std::vector<c10::IValue>& repeats);

}  // namespace driftgate

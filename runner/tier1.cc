#include "runner/tier1.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/tolerance.h"

namespace driftgate {
namespace {

std::string format_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

std::string format_shape(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return text + "]";
}

std::string render_key(const c10::IValue& key) {
  if (key.isString()) {
    return "'" + key.toStringRef() + "'";
  }
  if (key.isInt()) {
    return std::to_string(key.toInt());
  }
  if (key.isBool()) {
    return key.toBool() ? "True" : "False";
  }
  if (key.isDouble()) {
    return format_number(key.toDouble());
  }
  return "<" + key.tagKind() + ">";
}

bool key_less(const c10::IValue& a, const c10::IValue& b) {
  if (a.isInt() && b.isInt()) {
    return a.toInt() < b.toInt();
  }
  return render_key(a) < render_key(b);
}

bool is_numeric_leaf(const c10::IValue& value) { return value.isTensor() || value.isDouble(); }

// The kind of a leaf, for structure messages.
std::string leaf_kind(const c10::IValue& value) {
  if (value.isTensor()) {
    return "tensor";
  }
  if (value.isDouble()) {
    return "float";
  }
  if (value.isInt()) {
    return "int";
  }
  if (value.isBool()) {
    return "bool";
  }
  if (value.isString()) {
    return "str";
  }
  if (value.isNone()) {
    return "None";
  }
  if (value.isTuple()) {
    return "empty tuple";
  }
  if (value.isList()) {
    return "empty list";
  }
  if (value.isGenericDict()) {
    return "empty dict";
  }
  return value.tagKind();
}

bool is_comparable_scalar(const c10::IValue& value) {
  return value.isInt() || value.isBool() || value.isString() || value.isNone() || value.isTuple() || value.isList() ||
         value.isGenericDict();
}

std::string render_scalar(const c10::IValue& value) {
  if (value.isString()) {
    return "'" + value.toStringRef() + "'";
  }
  if (value.isInt() || value.isBool()) {
    return render_key(value);
  }
  return leaf_kind(value);
}

void flatten_into(const c10::IValue& value, const std::string& path,
                  std::vector<std::pair<std::string, std::string>>& containers, std::vector<OutputLeaf>& leaves) {
  std::vector<std::pair<std::string, c10::IValue>> children;
  std::string description;
  if (value.isTuple()) {
    const auto& elements = value.toTupleRef().elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      children.emplace_back(path + "[" + std::to_string(i) + "]", elements[i]);
    }
    description = "tuple of " + std::to_string(elements.size());
  } else if (value.isList()) {
    auto elements = value.toListRef();
    for (size_t i = 0; i < elements.size(); ++i) {
      children.emplace_back(path + "[" + std::to_string(i) + "]", elements[i]);
    }
    description = "list of " + std::to_string(elements.size());
  } else if (value.isGenericDict()) {
    std::vector<std::pair<c10::IValue, c10::IValue>> entries;
    for (const auto& entry : value.toGenericDict()) {
      entries.emplace_back(entry.key(), entry.value());
    }
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return key_less(a.first, b.first); });
    description = "dict with keys ";
    for (size_t i = 0; i < entries.size(); ++i) {
      std::string key = render_key(entries[i].first);
      description += (i == 0 ? "" : ", ") + key;
      children.emplace_back(path + "[" + key + "]", entries[i].second);
    }
  }
  if (children.empty()) {
    leaves.push_back({path, value, containers});
    return;
  }
  containers.emplace_back(path, description);
  for (const auto& [child_path, child] : children) {
    flatten_into(child, child_path, containers, leaves);
  }
  containers.pop_back();
}

at::Tensor leaf_tensor(const c10::IValue& value) {
  if (value.isDouble()) {
    return at::scalar_tensor(value.toDouble(), at::kDouble);
  }
  return value.toTensor();
}

bool device_matches(const at::Tensor& tensor, Device device) {
  return device == Device::k_cuda ? tensor.is_cuda() : tensor.is_cpu();
}

// Structure check of one reference leaf against the target's leaves and containers.
std::string structure_problem(const OutputLeaf& leaf, const std::map<std::string, const OutputLeaf*>& target_leaves,
                              const std::map<std::string, std::string>& target_containers) {
  for (const auto& [path, description] : leaf.containers) {
    auto container = target_containers.find(path);
    if (container != target_containers.end()) {
      if (container->second != description) {
        return path + ": the reference's output is a " + description + ", the target's a " + container->second;
      }
      continue;
    }
    auto other = target_leaves.find(path);
    return path + ": the reference's output is a " + description + ", the target has " +
           (other == target_leaves.end() ? std::string("nothing there") : "a " + leaf_kind(other->second->value));
  }
  auto other = target_leaves.find(leaf.path);
  if (other == target_leaves.end()) {
    return leaf.path + ": the target's output has a container where the reference has a " + leaf_kind(leaf.value);
  }
  const c10::IValue& target = other->second->value;
  if (leaf_kind(target) != leaf_kind(leaf.value)) {
    return leaf.path + ": the reference's output is a " + leaf_kind(leaf.value) + ", the target's a " +
           leaf_kind(target);
  }
  if (is_comparable_scalar(leaf.value) && !(leaf.value == target)) {
    return leaf.path + ": the target's " + leaf_kind(target) + " " + render_scalar(target) +
           " differs from the reference's " + render_scalar(leaf.value);
  }
  return "";
}

// The tolerance of the leaf at `path` whose two sides have these dtypes (or kinds).
Tolerance leaf_tolerance(const CompareOptions& options, const std::string& path, const std::string& reference_dtype,
                         const std::string& target_dtype) {
  if (options.resolve_tolerance) {
    return options.resolve_tolerance(path, reference_dtype, target_dtype);
  }
  Tolerance tolerance = options.tolerance;
  if (options.tolerance_per_dtype) {
    const Tolerance defaults = assert_close_defaults(reference_dtype, target_dtype);
    tolerance.atol = defaults.atol;
    tolerance.rtol = defaults.rtol;
  }
  return tolerance;
}

// `oracle_value`: the oracle's leaf at `path` when it is a tensor of the reference's shape.
LeafComparison compare_numeric(const std::string& path, const c10::IValue& reference_value,
                               const c10::IValue& target_value, const c10::IValue* oracle_value,
                               const CompareOptions& options) {
  LeafComparison result;
  result.output = path;
  at::Tensor reference = leaf_tensor(reference_value);
  at::Tensor target = leaf_tensor(target_value);
  result.observed_reference = observe_tensor(reference);
  result.observed_target = observe_tensor(target);
  result.tolerance = leaf_tolerance(options, path, result.observed_reference->dtype, result.observed_target->dtype);
  if (!device_matches(target, options.target_device) || !device_matches(reference, options.reference_device)) {
    result.status = CheckStatus::k_fail_device;
    result.message = "driftgate refuses to label a check " + std::string(to_string(options.reference_device)) + " vs " +
                     to_string(options.target_device) +
                     " whose outputs did not come from those devices: the reference's output is on " +
                     result.observed_reference->device + ", the target's on " + result.observed_target->device;
    return result;
  }
  if (reference.sizes() != target.sizes()) {
    result.status = CheckStatus::k_fail_shape;
    result.message = "shape " + format_shape(result.observed_target->shape) + " differs from the reference's " +
                     format_shape(result.observed_reference->shape);
    return result;
  }
  int64_t nonfinite = 0;
  MismatchDetail detail;
  Tier1Stats stats = compute_tier1_stats(reference, target, result.tolerance, &nonfinite, &detail);
  if (oracle_value != nullptr) {
    stats.oracle = compute_oracle_errors(reference, target, leaf_tensor(*oracle_value));
  }
  result.stats = stats;
  if (options.same_dtype_promised && reference.scalar_type() != target.scalar_type()) {
    result.status = CheckStatus::k_fail_dtype;
    result.message = "dtype " + result.observed_target->dtype + " differs from the reference's " +
                     result.observed_reference->dtype + " although the backend asks for the same dtype";
    return result;
  }
  if (nonfinite > 0) {
    result.status = CheckStatus::k_fail_nonfinite;
    result.message = std::to_string(nonfinite) + " element(s) differ in NaN or infinity: the reference has " +
                     std::to_string(stats.nan_reference) + " NaN and " + std::to_string(stats.inf_reference) +
                     " inf, the target " + std::to_string(stats.nan_target) + " NaN and " +
                     std::to_string(stats.inf_target) + " inf";
    return result;
  }
  // NaN against NaN counts as equal (assert_close's equal_nan), which would let an output
  // that is NaN everywhere pass: such an output has its own status, never pass.
  if (stats.numel > 0 && stats.nan_reference + stats.inf_reference == stats.numel) {
    result.status = CheckStatus::k_nonfinite_output;
    result.message = "every element is NaN or infinite in the reference and the target alike (" +
                     std::to_string(stats.nan_reference) + " NaN, " + std::to_string(stats.inf_reference) + " inf of " +
                     std::to_string(stats.numel) +
                     "), so nothing was compared; check the model and its input (an all-NaN output means the "
                     "model is broken on it)";
    return result;
  }
  if (result.tolerance.rule == ToleranceRule::k_oracle && !stats.oracle) {
    result.status = CheckStatus::k_crash_ref;
    result.message =
        "the oracle rule needs the float64 oracle's output here, but " +
        (options.oracle_problem.empty() ? std::string("it has no matching tensor at ") + path : options.oracle_problem);
    return result;
  }
  std::string failure = rule_failure(stats, detail, result.tolerance, result.observed_target->dtype);
  if (!failure.empty()) {
    result.status = CheckStatus::k_fail_numeric;
    result.message = std::move(failure);
    if (!result.tolerance.origin.empty()) {
      // Where the values that failed it were set, as the gate policy names its own.
      result.message += " · tolerance from " + result.tolerance.origin;
    }
  }
  return result;
}

}  // namespace

std::vector<OutputLeaf> flatten_output(const c10::IValue& output) {
  std::vector<OutputLeaf> leaves;
  std::vector<std::pair<std::string, std::string>> containers;
  flatten_into(output, "out", containers, leaves);
  return leaves;
}

std::string dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kByte:
      return "uint8";
    case at::kChar:
      return "int8";
    case at::kShort:
      return "int16";
    case at::kInt:
      return "int32";
    case at::kLong:
      return "int64";
    case at::kBool:
      return "bool";
    case at::kComplexFloat:
      return "complex64";
    case at::kComplexDouble:
      return "complex128";
    default:
      return c10::toString(type);
  }
}

ObservedTensor observe_tensor(const at::Tensor& tensor) {
  ObservedTensor observed;
  observed.device = tensor.device().str();
  observed.dtype = dtype_name(tensor.scalar_type());
  observed.shape = tensor.sizes().vec();
  if (tensor.layout() != at::kStrided) {
    observed.memory_format = "opaque";
  } else if (tensor.is_contiguous()) {
    // A tensor that is both (a size-1 channel or spatial dimension) counts as contiguous.
    observed.memory_format = "contiguous";
  } else if ((tensor.dim() == 4 && tensor.is_contiguous(at::MemoryFormat::ChannelsLast)) ||
             (tensor.dim() == 5 && tensor.is_contiguous(at::MemoryFormat::ChannelsLast3d))) {
    observed.memory_format = "channels_last";
  } else {
    observed.memory_format = "strided";
  }
  return observed;
}

std::vector<LeafComparison> compare_outputs(const c10::IValue& reference, const c10::IValue& target,
                                            const CompareOptions& options) {
  std::vector<OutputLeaf> reference_leaves = flatten_output(reference);
  std::vector<OutputLeaf> target_leaf_list = flatten_output(target);
  std::map<std::string, const OutputLeaf*> target_leaves;
  std::map<std::string, std::string> target_containers;
  for (const OutputLeaf& leaf : target_leaf_list) {
    target_leaves.emplace(leaf.path, &leaf);
    for (const auto& [path, description] : leaf.containers) {
      target_containers.emplace(path, description);
    }
  }
  std::map<std::string, c10::IValue> oracle_leaves;
  if (options.oracle != nullptr) {
    for (OutputLeaf& leaf : flatten_output(*options.oracle)) {
      if (is_numeric_leaf(leaf.value)) {
        oracle_leaves.emplace(leaf.path, leaf.value);
      }
    }
  }
  std::vector<LeafComparison> results;
  for (const OutputLeaf& leaf : reference_leaves) {
    std::string problem = structure_problem(leaf, target_leaves, target_containers);
    if (!problem.empty()) {
      LeafComparison result;
      result.output = leaf.path;
      result.status = CheckStatus::k_fail_structure;
      result.message = problem;
      if (leaf.value.isTensor()) {
        result.observed_reference = observe_tensor(leaf.value.toTensor());
      }
      results.push_back(std::move(result));
      continue;
    }
    const c10::IValue& other = target_leaves.at(leaf.path)->value;
    if (is_numeric_leaf(leaf.value)) {
      const c10::IValue* oracle = nullptr;
      if (auto found = oracle_leaves.find(leaf.path);
          found != oracle_leaves.end() && leaf_tensor(found->second).sizes() == leaf_tensor(leaf.value).sizes()) {
        oracle = &found->second;
      }
      results.push_back(compare_numeric(leaf.path, leaf.value, other, oracle, options));
      continue;
    }
    LeafComparison result;
    result.output = leaf.path;
    result.tolerance = leaf_tolerance(options, leaf.path, leaf_kind(leaf.value), leaf_kind(other));
    if (!is_comparable_scalar(leaf.value)) {
      result.status = CheckStatus::k_unsupported;
      result.message = leaf.path + ": tier 1 cannot compare an output of kind " + leaf_kind(leaf.value);
    }
    results.push_back(std::move(result));
  }
  return results;
}

namespace {

// Whether two leaves hold the same bytes: dense CPU tensors of one dtype and shape.
// The usual case between repeats (the backends are bitwise deterministic), where the
// full statistics would only find max |a-b| = 0 and no nonfinite mismatch.
bool bitwise_equal(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes() || a.layout() != at::kStrided ||
      b.layout() != at::kStrided || !a.device().is_cpu() || !b.device().is_cpu() || a.is_mkldnn() || b.is_mkldnn() ||
      !a.is_contiguous() || !b.is_contiguous() || a.is_conj() != b.is_conj() || a.is_neg() != b.is_neg()) {
    return false;
  }
  const size_t bytes = static_cast<size_t>(a.numel()) * a.element_size();
  return bytes == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), bytes) == 0;
}

}  // namespace

std::map<std::string, double> repeat_max_abs(const std::vector<c10::IValue>& repeats) {
  std::map<std::string, double> result;
  if (repeats.size() < 2) {
    return result;
  }
  std::vector<OutputLeaf> first = flatten_output(repeats.front());
  for (size_t r = 1; r < repeats.size(); ++r) {
    std::map<std::string, c10::IValue> later;
    for (OutputLeaf& leaf : flatten_output(repeats[r])) {
      later.emplace(leaf.path, leaf.value);
    }
    for (const OutputLeaf& leaf : first) {
      if (!is_numeric_leaf(leaf.value)) {
        continue;
      }
      double& worst = result[leaf.path];
      auto other = later.find(leaf.path);
      if (other == later.end() || !is_numeric_leaf(other->second) ||
          leaf_tensor(leaf.value).sizes() != leaf_tensor(other->second).sizes()) {
        worst = std::numeric_limits<double>::infinity();
        continue;
      }
      const at::Tensor first_tensor = leaf_tensor(leaf.value);
      const at::Tensor later_tensor = leaf_tensor(other->second);
      if (bitwise_equal(first_tensor, later_tensor)) {
        worst = std::max(worst, 0.0);
        continue;
      }
      int64_t nonfinite = 0;
      Tier1Stats stats = compute_tier1_stats(first_tensor, later_tensor, Tolerance{}, &nonfinite);
      worst = std::max(worst, nonfinite > 0 ? std::numeric_limits<double>::infinity() : stats.max_abs);
    }
  }
  return result;
}

}  // namespace driftgate

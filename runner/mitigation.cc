#include "runner/mitigation.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <utility>

namespace driftgate {
namespace {

const char* const k_native_check = "task:detection[native]";
const char* const k_stable_check = "task:detection[stable]";
constexpr size_t k_max_set_size = 3;

bool mitigable(CheckStatus status) {
  return is_failure(status) && !is_crash(status) && status != CheckStatus::k_unsupported &&
         status != CheckStatus::k_ref_nondeterministic;
}

bool is_task_output(const std::string& output) { return output.rfind("task:", 0) == 0; }

bool contains(const std::vector<Fallback>& set, Fallback fallback) {
  return std::find(set.begin(), set.end(), fallback) != set.end();
}

std::string join(const std::vector<Fallback>& set) {
  std::string text;
  for (Fallback fallback : set) {
    text += (text.empty() ? "" : "+") + std::string(to_string(fallback));
  }
  return text;
}

// How one fallback set did on the failing inputs.
struct Outcome {
  bool tier1 = true;  // every judged check passes
  bool tier3 = true;  // every judged task check passes
  double latency_ms = 0.0;
};

// The variant's records as the fallback set judges them: with stable_nms the native
// NMS check is replaced by the stable one; without it, a stable check the config did
// not ask for is ignored.
Outcome judge(const std::vector<CheckRecord>& records, const std::string& variant, const std::vector<Fallback>& set,
              bool config_has_stable) {
  Outcome outcome;
  std::map<std::string, double> per_input_ms;
  bool any = false;
  for (const CheckRecord& record : records) {
    if (record.target != variant) {
      continue;
    }
    if ((record.output == k_native_check && contains(set, Fallback::k_stable_nms)) ||
        (record.output == k_stable_check && !config_has_stable && !contains(set, Fallback::k_stable_nms))) {
      continue;
    }
    any = true;
    const bool pass = record.status == CheckStatus::k_pass;
    outcome.tier1 = outcome.tier1 && pass;
    if (is_task_output(record.output)) {
      outcome.tier3 = outcome.tier3 && pass;
    }
    per_input_ms[record.input] = record.target_ms;
  }
  if (!any) {
    outcome.tier1 = outcome.tier3 = false;
  }
  for (const auto& [input, ms] : per_input_ms) {
    outcome.latency_ms += ms / static_cast<double>(per_input_ms.size());
  }
  return outcome;
}

std::string describe(const Mitigation& mitigation, const std::string& target) {
  char numbers[160];
  if (mitigation.fallbacks.empty()) {
    std::snprintf(numbers, sizeof numbers, "; tried %lld fallback set%s", static_cast<long long>(mitigation.tried),
                  mitigation.tried == 1 ? "" : "s");
    return "no fallback set restores agreement for " + target + numbers;
  }
  const double ratio = mitigation.target_ms > 0.0 ? mitigation.latency_ms / mitigation.target_ms : 0.0;
  std::snprintf(numbers, sizeof numbers, ": %.3g ms vs %.3g ms per forward (x%.2f, %+.3g ms); tried %lld set%s",
                mitigation.latency_ms, mitigation.target_ms, ratio, mitigation.latency_ms - mitigation.target_ms,
                static_cast<long long>(mitigation.tried), mitigation.tried == 1 ? "" : "s");
  std::string fallbacks;
  for (const std::string& name : mitigation.fallbacks) {
    fallbacks += (fallbacks.empty() ? "" : " + ") + name;
  }
  return fallbacks + " restores " + (mitigation.restores == "tier1" ? "tier-1" : "tier-3") + " agreement for " +
         target + numbers;
}

Mitigation search(const Experiment& experiment, const BackendSpec& target, const std::vector<CheckRecord>& failing,
                  const VariantRunner& run) {
  std::set<std::string> inputs;
  bool task_failed = false;
  bool native_failed = false;
  double target_ms = 0.0;
  std::map<std::string, double> per_input_ms;
  for (const CheckRecord& record : failing) {
    inputs.insert(record.input);
    task_failed = task_failed || is_task_output(record.output);
    native_failed = native_failed || record.output == k_native_check;
    per_input_ms[record.input] = record.target_ms;
  }
  for (const auto& [input, ms] : per_input_ms) {
    target_ms += ms / static_cast<double>(per_input_ms.size());
  }
  Mitigation best;
  best.target_ms = target_ms;
  const bool config_has_stable = experiment.task && std::find(experiment.task->nms.begin(), experiment.task->nms.end(),
                                                              NmsMode::k_stable) != experiment.task->nms.end();
  const std::vector<std::vector<Fallback>> sets =
      fallback_sets(applicable_fallbacks(target, native_failed), k_max_set_size);
  for (size_t size = 1; size <= k_max_set_size; ++size) {
    Experiment variant = experiment;
    variant.inputs.clear();
    for (const InputSpec& input : experiment.inputs) {
      if (inputs.count(input.name)) {
        variant.inputs.push_back(input);
      }
    }
    variant.targets.clear();
    std::vector<const std::vector<Fallback>*> tried;
    for (const auto& set : sets) {
      if (set.size() == size) {
        variant.targets.push_back(apply_fallbacks(target, set));
        tried.push_back(&set);
      }
    }
    if (tried.empty()) {
      break;
    }
    variant.oracle = experiment.tolerance.rule == ToleranceRule::k_oracle;
    if (native_failed && !config_has_stable) {
      variant.task->nms.push_back(NmsMode::k_stable);
    }
    const std::vector<CheckRecord> records = run(variant);
    best.tried += static_cast<int64_t>(tried.size());
    // Full (tier-1) agreement beats task-only agreement; then the lower latency.
    std::pair<int, double> best_key{2, std::numeric_limits<double>::infinity()};
    for (size_t i = 0; i < tried.size(); ++i) {
      std::vector<CheckRecord> judged;
      for (const CheckRecord& record : records) {
        if (inputs.count(record.input)) {
          judged.push_back(record);
        }
      }
      const Outcome outcome = judge(judged, variant.targets[i].name, *tried[i], config_has_stable);
      const bool restored = outcome.tier1 || (task_failed && outcome.tier3);
      const std::pair<int, double> key{outcome.tier1 ? 0 : 1, outcome.latency_ms};
      if (restored && key < best_key) {
        best_key = key;
        best.fallbacks.clear();
        for (Fallback fallback : *tried[i]) {
          best.fallbacks.push_back(to_string(fallback));
        }
        best.restores = outcome.tier1 ? "tier1" : "tier3";
        best.backend = variant.targets[i].name;
        best.latency_ms = outcome.latency_ms;
      }
    }
    if (!best.fallbacks.empty()) {
      break;
    }
  }
  best.message = describe(best, target.name);
  return best;
}

}  // namespace

const char* to_string(Fallback fallback) {
  switch (fallback) {
    case Fallback::k_fp32:
      return "fp32";
    case Fallback::k_onednn_off:
      return "onednn_off";
    case Fallback::k_contiguous:
      return "contiguous";
    case Fallback::k_eager:
      return "eager";
    case Fallback::k_stable_nms:
      return "stable_nms";
  }
  return "unknown";
}

std::vector<Fallback> applicable_fallbacks(const BackendSpec& target, bool native_nms_failed) {
  std::vector<Fallback> fallbacks;
  if (target.dtype != DType::k_float32 || target.autocast) {
    fallbacks.push_back(Fallback::k_fp32);
  }
  if (target.onednn) {
    fallbacks.push_back(Fallback::k_onednn_off);
  }
  if (target.memory_format == MemoryFormat::k_channels_last) {
    fallbacks.push_back(Fallback::k_contiguous);
  }
  if (target.graph != GraphMode::k_eager) {
    fallbacks.push_back(Fallback::k_eager);
  }
  if (native_nms_failed) {
    fallbacks.push_back(Fallback::k_stable_nms);
  }
  return fallbacks;
}

std::vector<std::vector<Fallback>> fallback_sets(const std::vector<Fallback>& fallbacks, size_t max_size) {
  std::vector<std::vector<Fallback>> sets;
  const size_t n = fallbacks.size();
  for (size_t size = 1; size <= std::min(max_size, n); ++size) {
    // Lexicographic combinations of `size` indices out of n.
    std::vector<size_t> index(size);
    for (size_t i = 0; i < size; ++i) {
      index[i] = i;
    }
    while (true) {
      std::vector<Fallback> set;
      for (size_t i : index) {
        set.push_back(fallbacks[i]);
      }
      sets.push_back(std::move(set));
      size_t position = size;
      while (position > 0 && index[position - 1] == n - size + position - 1) {
        --position;
      }
      if (position == 0) {
        break;
      }
      ++index[position - 1];
      for (size_t i = position; i < size; ++i) {
        index[i] = index[i - 1] + 1;
      }
    }
  }
  return sets;
}

BackendSpec apply_fallbacks(const BackendSpec& target, const std::vector<Fallback>& set) {
  BackendSpec spec = target;
  for (Fallback fallback : set) {
    switch (fallback) {
      case Fallback::k_fp32:
        spec.dtype = DType::k_float32;
        spec.autocast = false;
        break;
      case Fallback::k_onednn_off:
        spec.onednn = false;
        break;
      case Fallback::k_contiguous:
        spec.memory_format = MemoryFormat::k_contiguous;
        break;
      case Fallback::k_eager:
        spec.graph = GraphMode::k_eager;
        break;
      case Fallback::k_stable_nms:
        break;  // changes how the task is judged, not the backend
    }
  }
  spec.name = target.name + "+" + join(set);
  spec.description = target.description + " with fallbacks " + join(set);
  return spec;
}

void mitigate_failures(const Experiment& experiment, std::vector<CheckRecord>& records, const VariantRunner& run,
                       std::ostream& log) {
  for (const BackendSpec& target : experiment.targets) {
    std::vector<CheckRecord> failing;
    for (const CheckRecord& record : records) {
      if (record.target == target.name && mitigable(record.status)) {
        failing.push_back(record);
      }
    }
    if (failing.empty()) {
      continue;
    }
    const Mitigation mitigation = search(experiment, target, failing, run);
    log << "[" << experiment.name << "] mitigation: " << mitigation.message << "\n";
    for (CheckRecord& record : records) {
      if (record.target == target.name && mitigable(record.status)) {
        record.mitigation = mitigation;
      }
    }
  }
}

}  // namespace driftgate

// Tier 2 localization: where a target's drift starts, layer by layer.
//
// For one (input, target) it captures every activation of the reference, the
// float64 oracle and the target (runner/tier2_capture.h), aligns them
// (runner/tier2_align.h) and measures per layer the range-normalized error
//   delta_L = max |target - reference| / (max - min of the reference),
// calibrated by the noise floor n_L, the same metric for the fp32 reference against
// the oracle. A layer diverges when delta_L exceeds
//   threshold_L = max(k_noise_factor * n_L, the check's tolerance at this layer's scale)
// (the tolerance part is (atol + rtol * max|reference|) / range for element-wise rules,
// none for the oracle rule, which itself flags 10 x the reference's error). It reports
// the first divergent layer, CRADLE's rank R_L = (delta_L - max delta_pred) /
// (max delta_pred + eps) to tell where error starts from where it is only carried,
// and re-injects: runs the first divergent op alone on the target with the
// reference's inputs to it, which confirms (or not) that the op itself diverges.
//
// Memory stays bounded: the points are compared window by window (reference and one
// other backend's window held at once, sized by `budget_bytes`), never every
// activation of every backend together. Peak RSS is recorded.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>

#include "core/experiment.h"
#include "core/record.h"
#include "core/tier2_profile.h"
#include "runner/backend.h"

namespace driftgate {

inline constexpr double k_noise_factor = 10.0;
inline constexpr double k_rank_epsilon = 1e-7;

struct LocalizeOptions {
  Tolerance tolerance;                        // the check's, atol/rtol resolved
  int64_t budget_bytes = int64_t{256} << 20;  // activations held per backend per window
};

// Localizes `target` against `reference` on `input` (the raw input; each backend
// prepares its own). `oracle` may be null: then every noise floor is 0.
Localization localize(BackendInstance& reference, BackendInstance* oracle, BackendInstance& target,
                      const at::Tensor& input, const LocalizeOptions& options);

// What to localize: the experiment's backends by spec, loaded here.
struct LocalizeRequest {
  BackendSpec reference;
  std::optional<BackendSpec> oracle;  // absent when the experiment has oracle: false
  BackendSpec target;
  BackendSource source;
  // Load the target from this file instead of source.model_path (`explain
  // --target-model`): e.g. a re-exported or fine-tuned model against the original.
  std::string target_model_path;
  LocalizeOptions options;
};

// Loads the three instances and localizes. Throws driftgate::Error when a backend
// cannot load or is skipped, or a capture forward fails.
Localization localize_request(const LocalizeRequest& request, const at::Tensor& input);

// localize_request in a forked child (the default, as for the runner's forwards):
// a crash or a run past `timeout_s` comes back as a driftgate::Error saying so.
// Call only from a process that never entered a multi-threaded OpenMP region.
Localization localize_isolated(const LocalizeRequest& request, const at::Tensor& input, double timeout_s);

// Peak resident memory of this process in KiB (getrusage).
int64_t peak_rss_kib();

}  // namespace driftgate

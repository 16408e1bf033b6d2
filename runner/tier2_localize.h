// Tier 2 localization: where a target's drift starts, layer by layer.
//
// For one (input, target) it captures every activation of the reference, the
// float64 oracle and the target (runner/tier2_capture.h), pairs the values that are
// the same function of the input (runner/tier2_align.h) and measures per layer the
// range-normalized error
//   delta_L = max |target - reference| / (max - min of the reference),
// calibrated by the noise floor n_L, the same metric for the reference against the
// oracle (what its own rounding produces there). A layer diverges when delta_L exceeds
//   threshold_L = max(k_noise_factor * n_L * p, (atol + rtol * max|reference_L|) / range_L)
// where p = max(1, unit roundoff of the target's precision / the reference's): a
// bfloat16 target rounds 2^16 times coarser than a float32 reference, and 10 x the
// float32 floor would call every bfloat16 layer divergent. The second term is the
// check's tolerance at this layer's scale (whatever its rule): a layer within the
// tolerance the user chose is not divergent. One rule for `run` and `explain`
// (localize_request_for builds both requests). It reports the first divergent layer,
// CRADLE's rank R_L = (delta_L - max delta_pred) / (max delta_pred + eps) to tell where
// error starts from where it is only carried, and re-injects: runs the target's ops
// that compute the first divergent value (its fused group on a rewritten graph) alone,
// fed the reference's values before them, which confirms (or not) that they diverge.
//
// Memory stays bounded: the points are compared window by window (reference and one
// other backend's window held at once, sized by `budget_bytes`), never every
// activation of every backend together. Peak RSS is recorded.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

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
  // Re-inject this layer (a profile name, with or without its " (file:line)..." tail)
  // instead of the first divergent one (`explain --reinject`): e.g. an upstream layer as a
  // control, which must not reproduce a divergence that starts later.
  std::string reinject_at;
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
  // --target-model`): e.g. a re-exported or fine-tuned model against the original. For an
  // onnxruntime target, instead of source.onnx_model_path: another ONNX file.
  std::string target_model_path;
  LocalizeOptions options;
};

// The request that localizes `target` of `experiment` on the model `source` names:
// the experiment's reference, the runner's float64 oracle (none with oracle: false)
// and the tolerance the check is configured with. `run` and `explain` both build their
// requests here, so a check's profile is the same whichever command produced it.
LocalizeRequest localize_request_for(const Experiment& experiment, const BackendSpec& target,
                                     const BackendSource& source);

// Loads the three instances and localizes. Throws driftgate::Error when a backend
// cannot load or is skipped, or a capture forward fails.
Localization localize_request(const LocalizeRequest& request, const at::Tensor& input);

// localize_request in a forked child (the default, as for the runner's forwards):
// a crash or a run past `timeout_s` comes back as a driftgate::Error saying so.
// Call only from a process that never entered a multi-threaded OpenMP region.
Localization localize_isolated(const LocalizeRequest& request, const at::Tensor& input, double timeout_s);

// Tier 2 cannot see inside an AOTInductor package. Where another target fails the same input's
// same output the same way (max |a-b| within 25%) and tier 2 named a first divergent layer
// there, a package's localization note says so: that layer is the run's best lead (resnet18's
// aoti and channels_last targets under oneDNN 3.7 both miss by 0.357, from one 1x1 stride-2
// convolution). `per_target` holds one input's check records, per target.
void add_package_leads(std::vector<std::vector<CheckRecord>>& per_target);

// Peak resident memory of this process in KiB (getrusage).
int64_t peak_rss_kib();

}  // namespace driftgate

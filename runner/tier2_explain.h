// Tier 2 for one (experiment, input, target): what `driftgate explain` and the runner's
// automatic localization share. Torch-free header: app/cmd_explain.cc includes it.
#pragma once

#include <cstdint>
#include <string>

#include "core/experiment.h"
#include "core/tier2_profile.h"

namespace driftgate {

struct ExplainOptions {
  // Load the target from this TorchScript file instead of the experiment's model
  // (`explain --target-model`): e.g. a re-exported or fine-tuned model against the original.
  std::string target_model;
  // The ONNX Runtime worker (RunnerOptions::onnx_worker): "" for driftgate-ort beside driftgate.
  std::string onnx_worker;
  int threads = 1;                            // intra-op threads of backends that say threads: 0
  int64_t budget_bytes = int64_t{256} << 20;  // activations held per backend per window
  bool isolate = true;                        // localize in a forked child (timeout_s applies)
  std::string reinject_at;                    // re-inject this layer instead of the first divergent one
};

// Localizes `target` (one of the experiment's targets, by name) against the
// experiment's reference on input `input` (by name), with the float64 oracle as the
// noise floor when the experiment has one, and the experiment's tolerance (assert_close's
// per-dtype defaults when it sets none). Throws driftgate::Error on an unknown input or
// target, a missing model, a backend that cannot run here, or a failed capture.
Localization explain_check(const Experiment& experiment, const std::string& input, const std::string& target,
                           const ExplainOptions& options);

}  // namespace driftgate

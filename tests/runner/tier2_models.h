// A small hierarchical TorchScript model for the tier 2 tests, built in C++ (no
// Python), with one optional deliberately perturbed weight.
//
//   stem  = conv (3->8) -> relu_ (in place)
//   block1 = conv -> bn -> relu_ -> += input       (conv-bn: folded by freeze)
//   block2 = conv -> relu_ -> += input             (no bn: conv stays observable)
//   head  = mean over H, W -> linear (8->4)
// Every op sits in its own submodule, as in torchvision, so captured values are
// named by module path ("block2.conv/aten::conv2d#1").
#pragma once

#include <string>

namespace driftgate::testing {

// Saves the model to <dir>/<file>. `perturbed_parameter`, when not empty, names a
// parameter ("block2.conv.weight") that is multiplied by `scale` before saving.
std::string save_tier2_model(const std::string& dir, const std::string& file,
                             const std::string& perturbed_parameter = "", double scale = 1.0);

// A model with control flow, as torch.jit.script makes of Python's `if` and `for`:
//
//   positive = float(mean(x)) > self.threshold (0.0; a float, not a tensor: no layer)
//   stem  = conv (3->8) -> relu_
//   y = block(x) (conv -> bn -> relu_); if self.residual (a bool attribute, True): y += x
//                                              (a constant `if`, torchvision's use_res_connect:
//                                              freeze folds it; it reads x, returns y either way)
//   if positive: x = up(x) else: x = down(x)   (convs: which one runs depends on the input)
//   for _ in range(self.repeats) (3): x = step(x) (conv -> relu_: a prim::Loop, 3 runs;
//                                              freeze unrolls it, a constant trip count)
//   head  = mean over H, W -> linear (8->4)
//
// `threshold` moves the test (a large one sends every input to `down`); `same_branches`
// gives `up` and `down` the same weights, so which one runs does not change the output.
struct ControlFlowModel {
  std::string perturbed_parameter;
  double scale = 1.0;
  double threshold = 0.0;
  bool same_branches = false;
};
std::string save_control_flow_model(const std::string& dir, const std::string& file,
                                    const ControlFlowModel& options = {});

}  // namespace driftgate::testing

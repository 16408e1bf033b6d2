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

}  // namespace driftgate::testing

// Small TorchScript models and backend specs for the runner tests, built in C++
// (no Python): each test process writes its models into its own temp directory.
#pragma once

#include <string>

#include "core/experiment.h"
#include "core/record.h"

namespace driftgate::testing {

// A fresh directory for this test process: <tmp>/dg_runner_<name>_<pid>.
std::string fresh_dir(const std::string& name);

// conv2d(3 -> 4, 3x3, pad 1) -> batch_norm (eval, registered running stats) -> relu.
// Returns (features [N, 4, H, W], pooled [N, 4]): two output leaves, out[0] and out[1].
// Has a "training" attribute set to true, as a model saved in train mode would.
std::string save_conv_bn_model(const std::string& dir);

// Returns {'scores': a 1x1 conv of x, 'boxes': x * 2} (a Dict[str, Tensor]).
std::string save_dict_model(const std::string& dir);

// Returns x * w + 1, but raises (a TorchScript assert) "float64 is not supported" for
// float64 inputs (8-byte elements) and "batch of 2 is not supported" for a batch of 2.
std::string save_raising_model(const std::string& dir);

// A file that is not a TorchScript archive.
std::string save_broken_model(const std::string& dir);

// A model that misbehaves as `kind` says (issue 24's hostile models):
//   "in_place"   x.add_(1.0) on its input, then x * w: deterministic once each forward gets a fresh input
//   "all_nan"    x * w * nan: every element NaN
//   "random"     x + rand_like(x): other values on every forward
//   "growing"    x[:, :calls] with calls counted per instance: another shape on each forward
//   "two_inputs" forward(self, x, y): not callable with the one input driftgate feeds
std::string save_hostile_model(const std::string& dir, const std::string& kind);

// A backend spec with everything explicit; `configure` style helpers below.
BackendSpec backend(const std::string& name);
BackendSpec backend_with_dtype(const std::string& name, DType dtype);

// The commit the runner tests stamp on their runs.
extern const CommitInfo k_test_commit;

// An experiment `name` on `model` with its config file written into `dir`: reference
// cpu_fp32, atol = rtol = 1e-4, `repeats` forwards per backend; inputs and targets are
// the caller's.
Experiment make_experiment(const std::string& dir, const std::string& name, const std::string& model, int repeats);

// A random input spec of `shape` with `seed`.
InputSpec random_input(const std::string& name, std::vector<int64_t> shape, uint64_t seed);

}  // namespace driftgate::testing

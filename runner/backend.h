// A backend instance: one model, loaded on its own, set up as one BackendSpec says.
//
// It exists to make the paper's bug impossible: there, nn.Module.to() moved the
// reference model in place, so "reference vs target" compared a model with
// itself. Here every backend (the reference included) loads its own module with
// torch::jit::load, applies its dtype, memory format and graph mode to that copy
// only, and check_no_shared_storage() proves after loading that no tensor of a
// target shares memory with the reference. The kernel-library flag (oneDNN) and
// the intra-op thread count are process-global in LibTorch, so they are set right
// before each forward and restored right after.
//
// Every LibTorch failure leaves as driftgate::Error with its context:
// "<config>: backend '<name>': <stage> of '<model>' failed: <what LibTorch said>".
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/experiment.h"
#include "runner/aoti_package.h"
#include "runner/inputs.h"
#include "runner/onnx_worker.h"

namespace driftgate {

// Where an instance comes from: for loading and for error messages.
struct BackendSource {
  BackendSource() = default;
  BackendSource(std::string config, std::string model, int threads, std::string aoti_package = "",
                std::string onnx_model = "")
      : config_path(std::move(config)),
        model_path(std::move(model)),
        default_threads(threads),
        aoti_package_path(std::move(aoti_package)),
        onnx_model_path(std::move(onnx_model)) {}

  std::string config_path;        // the experiment's config, first in every message
  std::string model_path;         // the TorchScript file to load
  int default_threads = 1;        // used when the spec's threads is 0
  std::string aoti_package_path;  // the experiment's aoti_package: for backends of graph aoti
  std::string onnx_model_path;    // the experiment's onnx_model: for backends of graph onnxruntime
  // The ONNX Runtime worker that runs them (runner/onnx_worker.h; RunnerOptions::onnx_worker):
  // "" for driftgate-ort beside driftgate.
  std::string onnx_worker;
  // The runner bound the inputs to forward's schema itself (an experiment with `args:`
  // inputs: make_input with the schema), so load() checks only that forward exists;
  // otherwise load() refuses a forward that takes more than one tensor.
  bool arguments_checked = false;

  // The experiment's files, `threads` for backends that say threads: 0, and `onnx_worker`.
  static BackendSource of(const Experiment& experiment, int threads, const std::string& onnx_worker);
};

// The model file itself cannot be used: LibTorch's loader refuses it (a corrupt
// archive or pickle, a format this LibTorch does not read) or its forward does not take
// the one tensor driftgate feeds; or a backend's `float32_modules` does not fit the model
// (a name it does not have, a module forward never calls or calls other than through
// forward, one that returns other than one tensor). Unlike every other backend failure
// this is fixed in the model or the config, never by the backend's runtime, so the runner
// turns it into a config error (exit 2, no run file).
class ModelFileError : public Error {
 public:
  using Error::Error;
};

// One stage of an instance's life, named in errors.
enum class BackendStage { k_load, k_convert, k_freeze, k_optimize, k_optimize_mobile, k_forward };
const char* to_string(BackendStage stage);

class BackendInstance {
 public:
  // Loads and prepares the model for `spec`. A backend that cannot run in this
  // build or on this machine (CUDA without a GPU, float16 on the CPU) comes back
  // skipped, with the reason, and holds no module. Throws ModelFileError when the
  // file cannot be loaded or its forward takes other arguments than one tensor (or
  // a list of tensors), or when the spec's float32_modules do not fit the model;
  // driftgate::Error when converting it fails.
  static BackendInstance load(const BackendSpec& spec, const BackendSource& source);

  // Move-only: copying a torch::jit::Module copies a handle, not the model, and
  // two handles on one model are exactly the aliasing this class prevents.
  BackendInstance(BackendInstance&&) = default;
  BackendInstance& operator=(BackendInstance&&) = default;
  BackendInstance(const BackendInstance&) = delete;
  BackendInstance& operator=(const BackendInstance&) = delete;

  bool skipped() const { return !m_skip_reason.empty(); }
  const std::string& skip_reason() const { return m_skip_reason; }
  const BackendSpec& spec() const { return m_spec; }
  // The intra-op threads each forward runs with (the spec's, or the default).
  int threads() const { return m_threads; }

  // The input as this backend sees it: its device, and for a floating-point tensor only its
  // dtype and (4-D) memory format; integer and bool tensors keep theirs. Always a fresh
  // tensor, never `input` itself, so a model that changes its input in place (x.add_(1))
  // cannot change what the next forward or backend is given.
  at::Tensor prepare_input(const at::Tensor& input) const;
  // prepare_input on every tensor of `input` (a List[Tensor]'s items too); scalars as they are.
  ModelInput prepare_arguments(const ModelInput& input) const;

  // prepare_arguments, then forward() with the backend's oneDNN flag and thread
  // count, restored afterwards; no autograd. Throws driftgate::Error (stage
  // "forward") on any LibTorch error, including a `raise` in the model. An aoti or
  // onnxruntime backend takes one tensor.
  c10::IValue forward(const ModelInput& input);
  c10::IValue forward(const at::Tensor& input) { return forward(ModelInput{input}); }

  // `call` under the same settings as forward() (oneDNN flag, threads, autocast,
  // fuser, no autograd): tier 2's capture and re-injection forwards. Throws
  // driftgate::Error (stage "forward") on any LibTorch error.
  c10::IValue with_settings(const std::function<c10::IValue()>& call);

  // The storage of every tensor the instance holds: parameters, buffers, other
  // tensor attributes, and the constants of its forward graph (where a frozen
  // module keeps its weights). Null pointers (empty tensors) are left out.
  std::vector<const void*> storage_pointers() const;

  // The prepared module (for tests and for inspecting the graph). An aoti backend has none:
  // it runs its package; an onnxruntime backend neither: it runs the ONNX file (is_package()).
  const torch::jit::Module& module() const { return m_module; }
  bool is_package() const { return m_package != nullptr || m_onnx != nullptr; }
  // The ONNX Runtime worker of an onnxruntime backend (tier 2 asks it for the graph and marked
  // values); null for every other backend.
  OnnxWorker* onnx_worker() const { return m_onnx.get(); }

 private:
  BackendInstance(BackendSpec spec, BackendSource source);
  [[noreturn]] void fail(BackendStage stage, const std::exception& error) const;
  void apply_float32_modules();
  void apply_dtype();
  void apply_channels_last();
  void apply_graph_mode();
  void load_package();
  void start_onnx_worker();

  BackendSpec m_spec;
  BackendSource m_source;
  int m_threads = 1;
  std::string m_skip_reason;
  torch::jit::Module m_module;
  // Graph mode aoti: the AOTInductor package, run instead of a module.
  std::unique_ptr<AotiPackage> m_package;
  // Graph mode onnxruntime: the ONNX file in its ONNX Runtime worker, run instead of a module.
  std::unique_ptr<OnnxWorker> m_onnx;
};

// The file name in the source range of the aten::to casts that `float32_modules` inserts
// around the listed modules' calls: tier 2 treats them as conversions of one value
// (runner/tier2_capture.cc), as it does layout conversions.
inline constexpr const char* k_float32_modules_source = "driftgate_float32_modules_cast";

// forward's schema (arguments[0] is self), read from the model file loaded on the CPU, for
// the runner to bind an experiment's `args:` inputs before any forward. Throws
// ModelFileError as BackendInstance::load does, and when the module has no forward.
c10::FunctionSchema forward_schema(const BackendSource& source);

// The modules a backend may list under `float32_modules` for this model, as named_modules()
// names them, in the order forward first calls them: the coarsest modules forward calls
// (through prim::CallMethod "forward", or a traced model's "forward1", ...: a second call)
// that take tensors, return one tensor and are not containers (Sequential, ModuleList,
// ModuleDict: those are opened, as is any module that takes or returns something else);
// a module called more than once is listed once. Blocks, not leaves: a listed block runs
// whole in float32 (its residual additions and functional activations too). Finer modules
// may be given by hand. For the `--mitigate` search.
// Loads the model file itself (on the CPU: the call structure is the file's, whatever the
// spec's device, dtype or graph mode); throws ModelFileError as BackendInstance::load does.
std::vector<std::string> float32_module_candidates(const BackendSpec& spec, const BackendSource& source);

// Why `spec` cannot run in this build or on this machine (no CUDA, float16 on
// the CPU, the NNC fuser without LLVM), or "" when it can. Loads nothing.
std::string backend_skip_reason(const BackendSpec& spec);

// Throws driftgate::Error when any tensor storage of `target` is also one of
// `reference`'s: the guarantee that reference and target never alias. Skipped
// instances hold nothing and always pass.
void check_no_shared_storage(const BackendInstance& reference, const BackendInstance& target);

// The line of a LibTorch error message worth showing: the error itself, without
// the C++ backtrace or the TorchScript interpreter's traceback.
std::string torch_error_summary(const std::exception& error);

}  // namespace driftgate

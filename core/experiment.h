// An experiment: one YAML document that says which model to load, which inputs
// to feed it, which backend is the reference and which are the targets, and with
// which tolerances to compare them.
//
// Loading is strict: unknown keys, wrong types and unknown backend names are
// errors with "file:line:col: message" and a did-you-mean, never ignored (the
// paper's runner silently ignored its own tolerance key). The JSON Schema for
// editors is schema/experiment.schema.json. Torch-free: `driftgate` built
// without LibTorch can still validate configs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/input_spec.h"
#include "core/record.h"
#include "core/task_spec.h"

namespace YAML {
class Node;
}

namespace driftgate {

class YamlReader;

// Where a value came from, for messages: "configs/x.yaml:12:7".
struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based; 0 when not from a file
  int column = 0;  // 1-based
  std::string str() const;
};

enum class Device { k_cpu, k_cuda };
enum class DType { k_float32, k_float64, k_bfloat16, k_float16 };
enum class MemoryFormat { k_contiguous, k_channels_last };
// When tier 2 captures activations and localizes (`activations:`): for failing checks
// (the default), for every compared check, or never.
enum class Activations { k_on_failure, k_always, k_off };
const char* to_string(Activations activations);

enum class GraphMode {
  k_eager,        // the module as loaded
  k_frozen,       // torch::jit::freeze (inlines attributes, folds conv-bn)
  k_optimized,    // torch::jit::optimize_for_inference (freeze + oneDNN layout rewrites)
  k_xnnpack,      // torch::jit::optimizeForMobile (freeze, conv-bn folding, XNNPACK prepacked ops)
  k_fused,        // the NNC (TensorExpr) fuser; needs LibTorch built with LLVM, else skipped
  k_aoti,         // the experiment's AOTInductor package (aoti_package:), not the TorchScript file;
                  // LibTorch >= 2.6, else skipped. Float32, contiguous, CPU: as compiled
  k_onnxruntime,  // the experiment's ONNX file (onnx_model:) run by ONNX Runtime in its own process
                  // (driftgate-ort); skipped where the build has no ONNX Runtime. Float32, CPU
};

// ONNX Runtime's settings for a backend of graph onnxruntime.
enum class OnnxProvider { k_cpu, k_dnnl };  // its CPU execution provider or the oneDNN one
// Its graph optimization levels (ORT_DISABLE_ALL .. ORT_ENABLE_ALL): each fuses differently.
enum class OnnxOptimization { k_disable, k_basic, k_extended, k_all };

const char* to_string(Device device);
const char* to_string(DType dtype);
const char* to_string(MemoryFormat format);
const char* to_string(OnnxProvider provider);
const char* to_string(OnnxOptimization level);
const char* to_string(GraphMode mode);

// A named, fully explicit set of runtime settings. Every backend loads its own
// module instance; two backends never share one.
struct BackendSpec {
  std::string name;
  Device device = Device::k_cpu;
  DType dtype = DType::k_float32;
  MemoryFormat memory_format = MemoryFormat::k_contiguous;
  bool onednn = true;  // at::globalContext().setUserEnabledMkldnn during forward
  int threads = 0;     // at::set_num_threads during forward; 0: the run's --threads (default 1)
  GraphMode graph = GraphMode::k_eager;
  // Keep the module in float32 and run forward under autocast to `dtype`
  // (at::autocast::set_cpu_enabled + set_autocast_cpu_dtype), instead of casting
  // parameters and input. CPU autocast in LibTorch 1.13 supports bfloat16 only.
  bool autocast = false;
  // torch::jit::freeze's optimize_numerics: false keeps a frozen graph bit-identical
  // to eager (no conv-bn folding, no other numerics-changing rewrites).
  bool optimize_numerics = true;
  bool tf32 = false;  // CUDA only: allow TF32 in cuBLAS and cuDNN matmuls/convolutions
  // Selective fallback (`float32_modules:`): these submodules (qualified names as in
  // named_modules(), e.g. "classifier.3") of a model cast to a reduced `dtype` keep
  // their float32 parameters and run in float32, their inputs cast to float32 and their
  // floating-point outputs back to `dtype`. Empty: the whole model in `dtype`.
  std::vector<std::string> float32_modules;
  // Graph onnxruntime only (`provider:`, `optimization:`); threads are its intra-op threads.
  OnnxProvider onnx_provider = OnnxProvider::k_cpu;
  OnnxOptimization onnx_optimization = OnnxOptimization::k_all;
  std::string description;  // one line for --help and reports
};

// The backends every experiment may name without defining them:
// cpu_fp32 (the usual reference), onednn_off, channels_last, frozen, frozen_exact,
// optimized, xnnpack, nnc_fused, aoti, onnxruntime, onnxruntime_dnnl, threads_2, threads_4, cpu_fp64, cpu_bf16,
// cpu_bf16_autocast, cpu_fp16, cuda_fp32, cuda_tf32, cuda_fp16, cuda_bf16.
const std::vector<BackendSpec>& builtin_backends();

// The float64 oracle: a CPU float64 instance of its own, loaded like any backend.
BackendSpec oracle_backend();

struct Experiment {
  std::string name;
  std::string config_path;  // as given on the command line
  std::string model_path;   // resolved relative to the config file's directory
  // The same model compiled by AOTInductor (a .pt2 package, `aoti_package:`), for backends of
  // graph mode aoti; resolved like model_path, empty when not given. Not required to exist
  // when the config is read: only LibTorch >= 2.6 runs it (the runner checks it at load).
  std::string aoti_package_path;
  // The same model exported to ONNX (`onnx_model:`), for backends of graph onnxruntime;
  // resolved like model_path, empty when not given, checked by the runner at load (only a
  // build with ONNX Runtime runs it).
  std::string onnx_model_path;
  std::vector<InputSpec> inputs;
  BackendSpec reference;
  std::vector<BackendSpec> targets;
  // The rule and, when tolerance_per_dtype is false, the atol/rtol every check uses.
  Tolerance tolerance;
  // atol and rtol were omitted (the loader sets this): each check uses
  // assert_close's defaults for the dtypes of its two outputs (core/tolerance.h),
  // recorded with the check.
  bool tolerance_per_dtype = false;
  std::string tolerance_origin = "default";  // "configs/x.yaml:12:3" or "default"
  // `tolerances:` in file order. A check takes, value by value, the experiment's
  // tolerance, then the matching entries from the least to the most specific (target
  // over output over dtype; equally specific ones in file order): resolve_tolerance
  // (core/tolerance.h, which also reads `tolerance:` and `tolerances:`).
  std::vector<ToleranceOverride> tolerance_overrides;
  // Run the float64 oracle (a separately loaded float64 CPU instance) on every
  // input, so each check records both sides' error against it. The oracle rule needs it.
  bool oracle = true;
  int repeats = 2;  // forwards per (backend, input); >= 2 measures run-to-run variance
  // `latency:` how each backend's latency on an input is measured after its repeats:
  // forwards run untimed until `latency_warmup` have run in all (the repeats count:
  // TorchScript's profiling executor profiles the first call and optimizes on the
  // second), then `latency_runs` timed forwards give the median and interquartile range.
  int latency_warmup = 3;
  int latency_runs = 10;
  // Time limit for loading a backend and for one input's forwards (repeats, warm-up and
  // timed runs) in an isolated run; beyond it the check is recorded as timeout and the
  // run goes on.
  double timeout_s = 120.0;
  // Tier 2 (`activations:`): capture every activation and say where divergence starts.
  Activations activations = Activations::k_on_failure;
  // Tier 3 (`task:`): the task adapter and its tolerances; absent, no task checks.
  std::optional<TaskSpec> task;
};

// Loads and validates one experiment. Throws driftgate::Error with
// "<path>:<line>:<col>: <message>" on any problem.
Experiment load_experiment(const std::string& path);

// "" when `input` is one float32 tensor, which every feature takes; else what it is, for
// the errors of the features that take only that in this version (tier 2 and explain,
// --mitigate, float32_modules, aoti, onnxruntime): "input 'p' names forward's arguments
// under 'args'", "input 't' is one int64 tensor".
std::string input_feature_limit(const InputSpec& input);

// Same from text; `path` is used for messages and to resolve relative paths.
Experiment parse_experiment(const std::string& yaml_text, const std::string& path);

// A dtype's name at `node` (float32, float64, bfloat16, float16), with the reader's
// did-you-mean; for the readers of an experiment's sections (core/tolerance.h).
DType read_dtype(const YamlReader& reader, const YAML::Node& node);

}  // namespace driftgate

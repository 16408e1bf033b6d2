#include "runner/backend.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/passes/xnnpack_rewrite.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/tensorexpr/codegen.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/suggest.h"
#include "runner/blas_threads.h"
#include "runner/inputs.h"
#include "runner/torch_compat.h"
#include "runner/torchvision_ops.h"

// Exported by libtorch_cpu (torch/csrc/jit/codegen/fuser/interface.h), whose header
// Debian does not install: the switch behind Python's _jit_override_can_fuse_on_cpu.
namespace torch::jit {
TORCH_API bool canFuseOnCPU();
TORCH_API void overrideCanFuseOnCPU(bool value);
}  // namespace torch::jit

namespace driftgate {
namespace {

// Sets the process-global kernel-library flag and intra-op thread count for one
// scope and restores what was there before, even when the forward throws.
class SettingsGuard {
 public:
  SettingsGuard(bool onednn, int threads, bool tf32 = false)
      : m_onednn(at::globalContext().userEnabledMkldnn()),
        m_threads(at::get_num_threads()),
        m_blas_threads(blas_threads()),
        m_tf32_cublas(at::globalContext().allowTF32CuBLAS()),
        m_tf32_cudnn(at::globalContext().allowTF32CuDNN()) {
    at::globalContext().setUserEnabledMkldnn(onednn);
    at::globalContext().setAllowTF32CuBLAS(tf32);
    at::globalContext().setAllowTF32CuDNN(tf32);
    if (threads != m_threads) {
      at::set_num_threads(threads);
    }
    set_blas_threads(threads);  // OpenBLAS keeps its own pool (runner/blas_threads.h)
  }
  ~SettingsGuard() {
    at::globalContext().setUserEnabledMkldnn(m_onednn);
    at::globalContext().setAllowTF32CuBLAS(m_tf32_cublas);
    at::globalContext().setAllowTF32CuDNN(m_tf32_cudnn);
    if (at::get_num_threads() != m_threads) {
      at::set_num_threads(m_threads);
    }
    set_blas_threads(m_blas_threads);
  }
  SettingsGuard(const SettingsGuard&) = delete;
  SettingsGuard& operator=(const SettingsGuard&) = delete;

 private:
  bool m_onednn;
  int m_threads;
  int m_blas_threads;  // 0: the BLAS has no thread control
  bool m_tf32_cublas;
  bool m_tf32_cudnn;
};

// CPU autocast to `dtype` for one forward (nothing when `enabled` is false);
// restores the previous state and drops the cast cache afterwards.
class AutocastGuard {
 public:
  AutocastGuard(bool enabled, at::ScalarType dtype)
      : m_enabled(enabled),
        m_was_enabled(torch_compat::cpu_autocast_enabled()),
        m_dtype(torch_compat::cpu_autocast_dtype()) {
    if (m_enabled) {
      torch_compat::set_cpu_autocast_dtype(dtype);
      torch_compat::set_cpu_autocast_enabled(true);
    }
  }
  ~AutocastGuard() {
    if (m_enabled) {
      torch_compat::set_cpu_autocast_enabled(m_was_enabled);
      torch_compat::set_cpu_autocast_dtype(m_dtype);
      at::autocast::clear_cache();
    }
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool m_enabled;
  bool m_was_enabled;
  at::ScalarType m_dtype;
};

// The NNC fuser for one forward: TensorExpr fusion on, CPU fusion allowed.
class FuserGuard {
 public:
  explicit FuserGuard(bool enabled)
      : m_enabled(enabled),
        m_was_enabled(torch::jit::tensorExprFuserEnabled()),
        m_could_fuse_cpu(torch::jit::canFuseOnCPU()) {
    if (m_enabled) {
      torch::jit::setTensorExprFuserEnabled(true);
      torch::jit::overrideCanFuseOnCPU(true);
    }
  }
  ~FuserGuard() {
    if (m_enabled) {
      torch::jit::setTensorExprFuserEnabled(m_was_enabled);
      torch::jit::overrideCanFuseOnCPU(m_could_fuse_cpu);
    }
  }
  FuserGuard(const FuserGuard&) = delete;
  FuserGuard& operator=(const FuserGuard&) = delete;

 private:
  bool m_enabled;
  bool m_was_enabled;
  bool m_could_fuse_cpu;
};

// Whether this LibTorch has the NNC fuser's LLVM code generator. Without it, NNC
// falls back to its IR interpreter (seconds to minutes per forward), which no one
// ships: driftgate skips the backend instead.
bool has_llvm_codegen() {
  try {
    torch::jit::tensorexpr::RegisterCodeGenList::GetInstance().FindStmtFactoryMethod("llvm_codegen");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

at::ScalarType scalar_type(DType dtype) {
  switch (dtype) {
    case DType::k_float32:
      return at::kFloat;
    case DType::k_float64:
      return at::kDouble;
    case DType::k_bfloat16:
      return at::kBFloat16;
    case DType::k_float16:
      return at::kHalf;
  }
  return at::kFloat;
}

at::Device device_of(Device device) {
  return device == Device::k_cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
}

}  // namespace

std::string backend_skip_reason(const BackendSpec& spec) {
  if (spec.device == Device::k_cuda) {
    if (at::show_config().find("USE_CUDA=ON") == std::string::npos) {
      return "this LibTorch build has no CUDA (USE_CUDA=OFF); run this backend with a CUDA build "
             "of LibTorch on a machine with a GPU";
    }
    if (!at::hasCUDA()) {
      return "no GPU: this LibTorch build has CUDA but no CUDA device is visible";
    }
    return "";
  }
  if (spec.dtype == DType::k_float16) {
    return "LibTorch 1.13 has no float16 convolution on the CPU; use bfloat16 on the CPU or "
           "float16 on a CUDA backend";
  }
  if (spec.graph == GraphMode::k_aoti && !torch_compat::AotiLoader::k_available) {
    return std::string("AOTInductor packages need LibTorch 2.6 or newer; this is LibTorch ") + TORCH_VERSION +
           " (Debian 13's 2.6 runs them: bash tools/debian13.sh ...)";
  }
  if (spec.graph == GraphMode::k_onnxruntime && !onnx_worker_built()) {
    return "this driftgate was built without ONNX Runtime (its C++ API, libonnxruntime-dev, is in Debian 13, "
           "not Debian 12): bash tools/debian13.sh tools/build.sh builds one that runs it";
  }
  if (spec.graph == GraphMode::k_fused && !has_llvm_codegen()) {
    return "the NNC (TensorExpr) fuser is unavailable: this LibTorch build has no LLVM code generator "
           "(\"llvm_codegen\" is not registered), and NNC's interpreter fallback takes seconds to minutes "
           "per forward; use a LibTorch built with USE_LLVM";
  }
  return "";
}

namespace {

void collect_tensor_pointer(const at::Tensor& tensor, std::vector<const void*>& pointers) {
  if (!tensor.defined()) {
    return;
  }
  if (!tensor.has_storage()) {
    // Opaque tensors (oneDNN layouts after optimize_for_inference) own their
    // memory through their TensorImpl.
    pointers.push_back(tensor.unsafeGetTensorImpl());
    return;
  }
  const void* data = tensor.storage().data();
  if (data != nullptr) {
    pointers.push_back(data);
  }
}

void collect_graph_constants(const torch::jit::Block* block, std::vector<const void*>& pointers) {
  for (const torch::jit::Node* node : block->nodes()) {
    if (node->kind() == c10::prim::Constant && node->output()->type()->cast<c10::TensorType>()) {
      if (auto value = torch::jit::toIValue(node->output()); value && value->isTensor()) {
        collect_tensor_pointer(value->toTensor(), pointers);
      }
    }
    for (const torch::jit::Block* inner : node->blocks()) {
      collect_graph_constants(inner, pointers);
    }
  }
}

// Why the module's forward cannot take the one input driftgate feeds (a tensor, or
// a list of tensors for detection models), or "".
std::string forward_signature_problem(const torch::jit::Module& module) {
  auto forward = module.find_method("forward");  // c10::optional in LibTorch 1.13
  if (!forward) {
    return "the module has no forward method; driftgate calls forward(input)";
  }
  const auto& arguments = forward->function().getSchema().arguments();
  std::vector<std::string> required;
  for (size_t i = 1; i < arguments.size(); ++i) {  // arguments[0] is self
    if (!arguments[i].default_value()) {
      required.push_back(arguments[i].name());
    }
  }
  if (arguments.size() >= 2 && required.size() <= 1 && (required.empty() || required[0] == arguments[1].name())) {
    return "";
  }
  std::string names;
  for (const auto& name : required) {
    names += (names.empty() ? "" : ", ") + name;
  }
  return "forward takes " + std::to_string(required.size()) + " required inputs" +
         (names.empty() ? "" : " (" + names + ")") +
         "; an input without 'args' is one tensor (or one list of tensors): name forward's arguments under "
         "the input's 'args' (docs/configuration.md#inputs)";
}

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// The model file as LibTorch loads it; ModelFileError when it cannot.
torch::jit::Module load_model_file(const BackendSource& source, at::Device device) {
  try {
    register_torchvision_ops();  // detection models need torchvision::nms at load
    return torch::jit::load(source.model_path, device);
  } catch (const std::exception& e) {
    throw ModelFileError(source.config_path + ": model '" + source.model_path + "' cannot be loaded by LibTorch " +
                         TORCH_VERSION + ": " + torch_error_summary(e) +
                         "; re-export it with torch.jit.script or torch.jit.trace and torch.jit.save");
  }
}

// The submodule a graph value holds, as named_modules() spells it: `self_path` for the
// graph's `self`, one name more per prim::GetAttr of a submodule; nullopt for anything
// else (a module taken out of a list or dict at run time).
std::optional<std::string> module_path_of(const Value* value, const Value* self, const std::string& self_path) {
  if (value == self) {
    return self_path;
  }
  const Node* node = value->node();
  auto type = value->type()->cast<c10::ClassType>();
  if (node->kind() != c10::prim::GetAttr || !type || !type->is_module()) {
    return std::nullopt;
  }
  std::optional<std::string> owner = module_path_of(node->input(0), self, self_path);
  if (!owner) {
    return std::nullopt;
  }
  const std::string& name = node->s(c10::attr::name);
  return owner->empty() ? name : *owner + "." + name;
}

// Every prim::CallMethod of `block` and the blocks in it, in graph order.
void collect_method_calls(Block* block, std::vector<Node*>& calls) {
  for (Node* node : block->nodes()) {
    if (node->kind() == c10::prim::CallMethod) {
      calls.push_back(node);
    }
    for (Block* inner : node->blocks()) {
      collect_method_calls(inner, calls);
    }
  }
}

// forward, or the forward1, forward2, ... that torch.jit.trace makes of a module's second,
// third, ... call (each call traced on its own).
bool is_forward_method(const std::string& name) {
  return name.rfind("forward", 0) == 0 && std::all_of(name.begin() + 7, name.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) != 0;
         });
}

// The TorchScript function a prim::CallMethod calls, or null (an interface call).
torch::jit::GraphFunction* called_function(const Node* call) {
  auto type = call->input(0)->type()->cast<c10::ClassType>();
  torch::jit::Function* function = type ? type->findMethod(call->s(c10::attr::name)) : nullptr;
  return function != nullptr ? torch::jit::tryToGraphFunction(*function) : nullptr;
}

// "" when `function` returns one tensor, else what it returns ("Tuple[Tensor, Tensor]").
std::string non_tensor_return(const torch::jit::GraphFunction& function) {
  const auto& returns = function.getSchema().returns();
  if (returns.size() == 1 && returns[0].type()->cast<c10::TensorType>()) {
    return "";
  }
  std::string text;
  for (const auto& value : returns) {
    text += (text.empty() ? "" : ", ") + value.type()->annotation_str();
  }
  return text.empty() ? "nothing" : text;
}

// "Dict[str, Tensor]": the arguments of a module's forward other than tensors; "" for none.
std::string non_tensor_argument(const torch::jit::GraphFunction& function) {
  const auto& arguments = function.getSchema().arguments();
  std::string text;
  for (size_t i = 1; i < arguments.size(); ++i) {
    if (!arguments[i].type()->cast<c10::TensorType>()) {
      text += (text.empty() ? "" : ", ") + arguments[i].type()->annotation_str();
    }
  }
  return text;
}

// `value` cast to `dtype` when it holds a floating-point tensor, else `value` itself,
// inserted at the graph's insert point. Decided at run time: a loaded model's graphs type
// values as plain `Tensor`, without a dtype. Branch-free (prim::dtype, integer arithmetic on
// the dtype code, one aten::to) rather than a prim::If, because tier 2 re-runs a node from
// the nodes before it and re-runs no control flow (runner/tier2_capture.cc). aten::to
// returns its input itself when the dtype already is `dtype` (an integer tensor keeps its own).
// The source range of every aten::to that float32_modules inserts: tier 2 tells them by
// it from a model's own casts (k_float32_modules_source).
const torch::jit::SourceRange& float32_cast_range() {
  static const std::string text = "float32_modules cast";
  static const torch::jit::SourceRange range(
      std::make_shared<torch::jit::Source>(text, std::string(k_float32_modules_source), 1), 0, text.size());
  return range;
}

Value* cast_if_floating(Graph& graph, Value* value, at::ScalarType dtype) {
  Value* floating = graph.insert(c10::aten::Int, {graph.insert(c10::aten::is_floating_point, {value})});
  Value* current = graph.insert(c10::prim::dtype, {value});
  Value* wanted = graph.insertConstant(static_cast<int64_t>(dtype));
  Value* step = graph.insert(c10::aten::mul, {floating, graph.insert(c10::aten::sub, {wanted, current})});
  Value* chosen = graph.insert(c10::aten::add, {current, step});
  return graph.insert(c10::aten::to, {value, chosen, false, false}, {}, float32_cast_range());
}

// "; the nearest it has: classifier.3, classifier.2, classifier.1": the three names closest
// to `word` by edit distance.
std::string nearest_names(const std::string& word, std::vector<std::string> names) {
  names.erase(std::remove(names.begin(), names.end(), std::string()), names.end());
  std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    return edit_distance(word, a) < edit_distance(word, b);
  });
  std::string text;
  for (size_t i = 0; i < names.size() && i < 3; ++i) {
    text += (text.empty() ? "; the nearest it has: " : ", ") + names[i];
  }
  return text;
}

// Module types that only hold other modules (torch.nn's containers): a candidate list opens them.
bool is_container(const Value* module) {
  const auto type = module->type()->cast<c10::ClassType>();
  if (!type || !type->name()) {
    return false;
  }
  const std::string name = type->name()->qualifiedName();
  for (const char* container : {".Sequential", ".ModuleList", ".ModuleDict"}) {
    const std::string suffix = container;
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return true;
    }
  }
  return false;
}

// float32_module_candidates: walks `graph` (a method of the module at `self_path`) in
// execution order and appends the coarsest modules it calls that float32_modules can
// take: called through forward with tensor arguments, returning one tensor, not a
// container. Any other module called is opened and its calls walked the same way. So
// mobilenet_v3_small gives its blocks features.0 .. features.12 and classifier.0 .. 3, and a
// block listed runs whole in float32, its residual additions and functional activations
// included, where listing leaves would round every activation between them to the
// reduced dtype.
void collect_candidates(Graph& graph, const std::string& self_path, std::vector<std::string>& found,
                        std::set<std::string>& seen, int depth) {
  if (depth > 256) {
    return;
  }
  std::vector<Node*> calls;
  collect_method_calls(graph.block(), calls);
  for (Node* call : calls) {
    std::optional<std::string> path = module_path_of(call->input(0), graph.inputs()[0], self_path);
    torch::jit::GraphFunction* function = called_function(call);
    if (!path || function == nullptr) {
      continue;
    }
    const bool eligible = *path != self_path && is_forward_method(call->s(c10::attr::name)) &&
                          non_tensor_return(*function).empty() && non_tensor_argument(*function).empty() &&
                          !is_container(call->input(0));
    if (eligible) {
      if (seen.insert(*path).second) {
        found.push_back(*path);
      }
      continue;
    }
    collect_candidates(*function->graph(), *path, found, seen, depth + 1);
  }
}

}  // namespace

std::vector<std::string> float32_module_candidates(const BackendSpec& spec, const BackendSource& source) {
  (void)spec;  // the call structure is the file's, whatever the backend's device, dtype or graph mode
  torch::jit::Module module = load_model_file(source, at::Device(at::kCPU));
  if (std::string problem = forward_signature_problem(module); !problem.empty()) {
    throw ModelFileError(source.config_path + ": model '" + source.model_path + "': " + problem);
  }
  std::vector<std::string> found;
  std::set<std::string> seen;
  collect_candidates(*module.get_method("forward").graph(), "", found, seen, 0);
  return found;
}

const char* to_string(BackendStage stage) {
  switch (stage) {
    case BackendStage::k_load:
      return "load";
    case BackendStage::k_convert:
      return "convert";
    case BackendStage::k_freeze:
      return "freeze";
    case BackendStage::k_optimize:
      return "optimize_for_inference";
    case BackendStage::k_optimize_mobile:
      return "optimizeForMobile";
    case BackendStage::k_forward:
      return "forward";
  }
  return "unknown";
}

std::string torch_error_summary(const std::exception& error) {
  std::string text = error.what();
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) {
    text = torch_error->what_without_backtrace();
  }
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    line.erase(0, line.find_first_not_of(" \t"));
    if (!line.empty()) {
      lines.push_back(line);
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  if (lines.empty()) {
    return "(no message)";
  }
  // The interpreter prints a TorchScript traceback and puts the error last.
  if (text.find("The following operation failed in the TorchScript interpreter") != std::string::npos) {
    return lines.back();
  }
  return lines.front();
}

BackendInstance::BackendInstance(BackendSpec spec, BackendSource source)
    : m_spec(std::move(spec)), m_source(std::move(source)) {}

void BackendInstance::fail(BackendStage stage, const std::exception& error) const {
  throw Error(m_source.config_path + ": backend '" + m_spec.name + "': " + to_string(stage) + " of '" +
              m_source.model_path + "' failed: " + torch_error_summary(error));
}

BackendSource BackendSource::of(const Experiment& experiment, int threads, const std::string& onnx_worker) {
  BackendSource source(experiment.config_path, experiment.model_path, threads, experiment.aoti_package_path,
                       experiment.onnx_model_path);
  source.onnx_worker = onnx_worker;
  source.arguments_checked = std::any_of(experiment.inputs.begin(), experiment.inputs.end(),
                                         [](const InputSpec& input) { return input.named; });
  return source;
}

c10::FunctionSchema forward_schema(const BackendSource& source) {
  torch::jit::Module module = load_model_file(source, at::Device(at::kCPU));
  auto forward = module.find_method("forward");  // c10::optional in LibTorch 1.13
  if (!forward) {
    throw ModelFileError(source.config_path + ": model '" + source.model_path +
                         "': the module has no forward method; driftgate calls forward(input)");
  }
  return forward->function().getSchema();
}

BackendInstance BackendInstance::load(const BackendSpec& spec, const BackendSource& source) {
  BackendInstance instance(spec, source);
  int threads = spec.threads == 0 ? source.default_threads : spec.threads;
  if (threads < 1) {
    throw Error(source.config_path + ": backend '" + spec.name + "': threads must be at least 1 (got " +
                std::to_string(threads) + ")");
  }
  instance.m_threads = threads;
  instance.m_skip_reason = backend_skip_reason(spec);
  if (instance.skipped()) {
    return instance;
  }
  if (spec.graph == GraphMode::k_aoti) {
    instance.load_package();
    return instance;
  }
  if (spec.graph == GraphMode::k_onnxruntime) {
    instance.start_onnx_worker();
    return instance;
  }
  instance.m_module = load_model_file(source, device_of(spec.device));
  if (source.arguments_checked && !instance.m_module.find_method("forward")) {
    throw ModelFileError(source.config_path + ": model '" + source.model_path +
                         "': the module has no forward method; driftgate calls forward(input)");
  }
  if (std::string problem = source.arguments_checked ? "" : forward_signature_problem(instance.m_module);
      !problem.empty()) {
    throw ModelFileError(source.config_path + ": model '" + source.model_path + "': " + problem);
  }
  try {
    if (!spec.float32_modules.empty()) {
      instance.apply_float32_modules();  // before freezing or optimizing: every graph mode keeps the casts
    }
    instance.apply_dtype();
    if (spec.memory_format == MemoryFormat::k_channels_last) {
      instance.apply_channels_last();
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    instance.fail(BackendStage::k_convert, e);
  }
  instance.apply_graph_mode();
  return instance;
}

void BackendInstance::load_package() {
  const std::string& path = m_source.aoti_package_path;
  const std::string where = m_source.config_path + ": backend '" + m_spec.name + "': ";
  if (path.empty() || !std::filesystem::is_regular_file(path)) {
    throw ModelFileError(where + "AOTInductor package '" + path +
                         "' not found; compile it from the same eager model as the TorchScript file "
                         "(torch.export.export, then torch._inductor.aoti_compile_and_package), e.g. "
                         "bash tools/debian13.sh tools/prepare-demo.sh for the demo's");
  }
  try {
    m_package = std::make_unique<AotiPackage>(path);
  } catch (const std::exception& e) {
    throw ModelFileError(where + e.what());
  }
}

void BackendInstance::start_onnx_worker() {
  const std::string& path = m_source.onnx_model_path;
  const std::string where = m_source.config_path + ": backend '" + m_spec.name + "': ";
  if (path.empty() || !std::filesystem::is_regular_file(path)) {
    throw ModelFileError(where + "ONNX file '" + path +
                         "' not found; export it from the same eager model as the TorchScript file "
                         "(torch.onnx.export; tools/export_models.py's export_onnx also writes the output "
                         "structure), e.g. bash tools/debian13.sh tools/prepare-demo.sh for the demo's");
  }
  OnnxSettings settings;
  settings.provider = to_string(m_spec.onnx_provider);
  settings.optimization = to_string(m_spec.onnx_optimization);
  settings.threads = m_threads;
  try {
    m_onnx = std::make_unique<OnnxWorker>(m_source.onnx_worker, path, settings);
  } catch (const std::exception& e) {
    throw ModelFileError(where + e.what());
  }
}

void BackendInstance::apply_dtype() {
  // Like nn.Module.to(dtype): floating-point parameters and buffers only, so
  // integer buffers (num_batches_tracked) keep their type.
  if (m_spec.autocast) {
    return;  // the module stays float32; autocast casts per op during forward
  }
  at::ScalarType target = scalar_type(m_spec.dtype);
  // float32_modules: the parameters and buffers of a listed module and of everything in it
  // are left as loaded, so they keep their exact float32 values.
  auto kept = [this](const std::string& name) {
    return std::any_of(m_spec.float32_modules.begin(), m_spec.float32_modules.end(),
                       [&](const std::string& module) { return name.rfind(module + ".", 0) == 0; });
  };
  auto convert = [target, &kept](const std::string& name, at::Tensor tensor) {
    if (tensor.is_floating_point() && tensor.scalar_type() != target && !kept(name)) {
      tensor.set_data(tensor.to(target));
    }
  };
  for (const auto& parameter : m_module.named_parameters(/*recurse=*/true)) {
    convert(parameter.name, parameter.value);
  }
  for (const auto& buffer : m_module.named_buffers(/*recurse=*/true)) {
    convert(buffer.name, buffer.value);
  }
}

// float32_modules: casts around every call of a listed module in the forward graph. The
// calls are found in the top-level forward graph after inlining into it every call of a
// module that encloses a listed one, so a listed module is called there through
// prim::CallMethod (on a prim::GetAttr chain from self), once per call site, whatever
// the module types: in a scripted model, modules of one class and configuration share one
// type and one forward graph, so casts inserted into an enclosing module's own graph would
// reach its twins too. Each floating-point tensor argument is cast to float32 before the
// call, the result back to the backend's dtype after it.
//
// The listed names not matching the model (no such module, never called, called other than
// through forward, returning other than one tensor) are ModelFileError: like a model file
// that cannot be loaded, no backend of the config could run as written, so the run stops
// with exit 2 and no run file, naming the fix in the config, instead of recording
// crash_target checks that a baseline would compare.
void BackendInstance::apply_float32_modules() {
  const std::string where = m_source.config_path + ": backend '" + m_spec.name + "': float32_modules: ";
  if (m_spec.autocast || (m_spec.dtype != DType::k_bfloat16 && m_spec.dtype != DType::k_float16)) {
    throw Error(where + "needs dtype bfloat16 or float16 without autocast (got " + to_string(m_spec.dtype) +
                (m_spec.autocast ? " with autocast" : "") +
                "): the listed modules fall back to float32 in a model "
                "cast to a reduced dtype as a whole");
  }
  const std::vector<std::string>& listed = m_spec.float32_modules;
  std::vector<std::string> names;
  for (const auto& submodule : m_module.named_modules()) {
    names.push_back(submodule.name);
  }
  for (const std::string& module : listed) {
    if (module.empty() || std::find(names.begin(), names.end(), module) == names.end()) {
      throw ModelFileError(where + "model '" + m_source.model_path + "' has no module '" + module + "'" +
                           nearest_names(module, names) + " (named_modules() lists them all)");
    }
  }
  std::shared_ptr<Graph> graph = m_module.get_method("forward").graph();
  Value* self = graph->inputs()[0];
  auto encloses_listed = [&](const std::string& path) {
    return std::any_of(listed.begin(), listed.end(),
                       [&](const std::string& module) { return path.empty() || module.rfind(path + ".", 0) == 0; });
  };
  for (bool inlined = true; inlined;) {
    inlined = false;
    std::vector<Node*> calls;
    collect_method_calls(graph->block(), calls);
    for (Node* call : calls) {
      std::optional<std::string> path = module_path_of(call->input(0), self, "");
      torch::jit::GraphFunction* function = called_function(call);
      if (path && function != nullptr && encloses_listed(*path)) {
        // Its own graph: the bool overload's `true` takes the optimized graph, inlined all through.
        torch::jit::inlineCallTo(call, function, function->graph().get());
        inlined = true;
        break;
      }
    }
  }
  const at::ScalarType reduced = scalar_type(m_spec.dtype);
  // The model's input arrives in float32 (prepare_input): a listed module that reads it
  // gets it as the reference does, every other reader gets it cast to the reduced dtype at
  // the graph's entry, as a model cast as a whole would.
  Value* input = graph->inputs()[1];
  Value* reduced_input = nullptr;
  {
    torch::jit::WithInsertPoint entry(graph->block()->nodes().front());
    reduced_input = cast_if_floating(*graph, input, reduced);
  }
  input->replaceAllUsesAfterNodeWith(reduced_input->node(), reduced_input);
  // A value cast down to the reduced dtype -> the float32 value it came from: a listed
  // module reading the input or another listed module's output reads the float32 value, as
  // consecutive layers of the reference do, not a copy rounded on the way.
  std::map<Value*, Value*> float32_of{{reduced_input, input}};
  // Values a listed module (or an operation on such values only) produced, cast down: an
  // aten operation of the forward graph whose tensor arguments all are such values (the
  // flatten between a listed pooling and a listed linear layer, the addition of two listed
  // blocks' outputs) runs in float32 too, so the float32 region is not rounded between its
  // layers by glue that belongs to it.
  std::set<Value*> from_listed;
  std::map<std::string, int> call_count;
  std::vector<Node*> calls;
  collect_method_calls(graph->block(), calls);
  std::set<Node*> listed_calls;
  for (Node* call : calls) {
    std::optional<std::string> path = module_path_of(call->input(0), self, "");
    if (path && std::find(listed.begin(), listed.end(), *path) != listed.end()) {
      listed_calls.insert(call);
    }
  }
  std::vector<Node*> order;  // every node, nested blocks included, in execution order
  std::function<void(torch::jit::Block*)> walk = [&](torch::jit::Block* block) {
    for (Node* node : block->nodes()) {
      order.push_back(node);
      for (torch::jit::Block* inner : node->blocks()) {
        walk(inner);
      }
    }
  };
  walk(graph->block());
  // Uses of `value` other than what forward returns, which stays float32: no later layer
  // needs the reduced dtype.
  auto cast_down_uses = [&](const std::vector<torch::jit::Use>& uses, Value* cast) {
    for (const torch::jit::Use& use : uses) {
      if (use.user != graph->return_node()) {
        use.user->replaceInput(use.offset, cast);
      }
    }
  };
  for (Node* node : order) {
    if (listed_calls.count(node) == 0) {
      if (node->owningBlock() != graph->block() || !node->kind().is_aten() || node->outputs().size() != 1 ||
          !node->output()->type()->cast<c10::TensorType>()) {
        continue;
      }
      bool tensors = false;
      bool all_listed = true;
      for (Value* value : node->inputs()) {
        if (value->type()->cast<c10::TensorType>()) {
          tensors = true;
          all_listed = all_listed && from_listed.count(value) > 0;
        }
      }
      if (!tensors || !all_listed) {
        continue;
      }
      torch::jit::WithInsertPoint before(node);
      Node* clone = graph->insertNode(graph->createClone(
          node, [&](Value* value) { return from_listed.count(value) > 0 ? float32_of.at(value) : value; }));
      Value* cast = cast_if_floating(*graph, clone->output(), reduced);
      cast_down_uses(node->output()->uses(), cast);
      node->output()->replaceAllUsesWith(clone->output());  // what forward returns
      node->destroy();
      float32_of[cast] = clone->output();
      from_listed.insert(cast);
      continue;
    }
    Node* call = node;
    std::optional<std::string> path = module_path_of(call->input(0), self, "");
    const std::string& method = call->s(c10::attr::name);
    torch::jit::GraphFunction* function = called_function(call);
    if (!is_forward_method(method) || function == nullptr) {
      throw ModelFileError(where + "module '" + *path + "' of model '" + m_source.model_path +
                           "' is called through its method '" + method +
                           "', not forward; float32_modules casts around forward calls only: list the module "
                           "that calls it, or a module it calls");
    }
    if (std::string returned = non_tensor_return(*function); !returned.empty()) {
      throw ModelFileError(where + "module '" + *path + "' of model '" + m_source.model_path + "' returns " + returned +
                           ", not one tensor; float32_modules casts one tensor back to " + to_string(m_spec.dtype) +
                           ": list the modules inside it instead");
    }
    if (std::string arguments = non_tensor_argument(*function); !arguments.empty()) {
      throw ModelFileError(where + "module '" + *path + "' of model '" + m_source.model_path + "' takes " + arguments +
                           ", not only tensors; float32_modules casts tensor arguments only: list the modules "
                           "inside it instead");
    }
    {
      torch::jit::WithInsertPoint before(call);
      for (size_t i = 1; i < call->inputs().size(); ++i) {
        if (call->input(i)->type()->cast<c10::TensorType>()) {
          auto it = float32_of.find(call->input(i));
          Value* argument = it != float32_of.end() ? it->second : call->input(i);
          call->replaceInput(i, cast_if_floating(*graph, argument, at::kFloat));
        }
      }
    }
    Value* result = call->output();
    const std::vector<torch::jit::Use> uses = result->uses();  // before the cast reads it too
    torch::jit::WithInsertPoint after(call->next());
    Value* cast = cast_if_floating(*graph, result, reduced);
    cast_down_uses(uses, cast);
    float32_of[cast] = result;
    from_listed.insert(cast);
    ++call_count[*path];
  }
  for (const std::string& module : listed) {
    if (call_count[module] == 0) {
      throw ModelFileError(where + "module '" + module + "' of model '" + m_source.model_path +
                           "' is never called by forward, so running it in float32 changes nothing; list a module "
                           "forward calls (driftgate lists the candidates in execution order)");
    }
  }
}

// What PyTorch's module.to(memory_format=torch.channels_last) does to each 4-D parameter
// and buffer, and x.to(memory_format=...) to the input: Tensor::to, which re-strides a tensor
// whose strides are ambiguous (1x1 and depthwise convolution weights), where
// contiguous(ChannelsLast) would leave it as it is and choose other kernels than the user's
// PyTorch pipeline (tests/runner/saved_inputs_test.cc compares with Python's output).
namespace {
at::Tensor to_channels_last(const at::Tensor& tensor) {
  return tensor.to(tensor.options(), /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::ChannelsLast);
}
}  // namespace

void BackendInstance::apply_channels_last() {
  auto convert = [](at::Tensor tensor) {
    if (tensor.dim() == 4) {
      tensor.set_data(to_channels_last(tensor));
    }
  };
  for (const auto& parameter : m_module.named_parameters(/*recurse=*/true)) {
    convert(parameter.value);
  }
  for (const auto& buffer : m_module.named_buffers(/*recurse=*/true)) {
    convert(buffer.value);
  }
}

void BackendInstance::apply_graph_mode() {
  // eval() on every submodule that has the flag (C++-built modules may not).
  for (torch::jit::Module submodule : m_module.modules()) {
    if (submodule.hasattr("training")) {
      submodule.setattr("training", false);
    }
  }
  if (m_spec.graph == GraphMode::k_eager || m_spec.graph == GraphMode::k_fused) {
    return;  // the fuser works on the profiled graph during forward
  }
  // Graph rewrites choose kernels (oneDNN prepacking), so they see the
  // backend's own settings.
  SettingsGuard guard(m_spec.onednn, m_threads, m_spec.tf32);
  if (m_spec.graph == GraphMode::k_frozen) {
    try {
      m_module = torch::jit::freeze(m_module, c10::nullopt, m_spec.optimize_numerics);
    } catch (const std::exception& e) {
      fail(BackendStage::k_freeze, e);
    }
    return;
  }
  if (m_spec.graph == GraphMode::k_xnnpack) {
    try {
      m_module = torch::jit::optimizeForMobile(m_module);
    } catch (const std::exception& e) {
      fail(BackendStage::k_optimize_mobile, e);
    }
    return;
  }
  try {
    m_module = torch::jit::optimize_for_inference(m_module);
  } catch (const std::exception& e) {
    fail(BackendStage::k_optimize, e);
  }
}

at::Tensor BackendInstance::prepare_input(const at::Tensor& input) const {
  // One copy per forward, always (copy=true): .to() alone returns `input` itself when
  // dtype, device and layout already match. channels_last as to_channels_last() does it.
  const bool floating = input.is_floating_point() && !m_spec.autocast;
  // float32_modules: the graph casts the input itself (apply_float32_modules).
  const at::ScalarType dtype = m_spec.float32_modules.empty() ? scalar_type(m_spec.dtype) : at::kFloat;
  const at::MemoryFormat format =
      m_spec.memory_format == MemoryFormat::k_channels_last && input.dim() == 4 && input.is_floating_point()
          ? at::MemoryFormat::ChannelsLast
          : at::MemoryFormat::Preserve;
  return input.to(input.options().device(device_of(m_spec.device)).dtype(floating ? dtype : input.scalar_type()),
                  /*non_blocking=*/false, /*copy=*/true, format);
}

ModelInput BackendInstance::prepare_arguments(const ModelInput& input) const {
  ModelInput prepared;
  prepared.reserve(input.size());
  for (const c10::IValue& value : input) {
    if (value.isTensor()) {
      prepared.emplace_back(prepare_input(value.toTensor()));
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> items;
      for (const at::Tensor& item : value.toTensorVector()) {
        items.push_back(prepare_input(item));
      }
      prepared.emplace_back(items);
    } else {
      prepared.push_back(value);
    }
  }
  return prepared;
}

c10::IValue BackendInstance::forward(const ModelInput& input) {
  if (skipped()) {
    throw Error(m_source.config_path + ": backend '" + m_spec.name + "' is skipped: " + m_skip_reason);
  }
  try {
    ModelInput prepared = prepare_arguments(input);
    SettingsGuard guard(m_spec.onednn, m_threads, m_spec.tf32);
    if (m_package || m_onnx) {
      // The config reader refuses other inputs for these graphs (core/experiment.cc).
      if (prepared.size() != 1 || !prepared[0].isTensor()) {
        throw Error("an aoti or onnxruntime backend takes one tensor in this version");
      }
      if (m_onnx) {
        return m_onnx->run(prepared[0].toTensor());  // in the worker, with the backend's own threads
      }
      at::NoGradGuard no_grad;
      return m_package->run(prepared[0].toTensor());
    }
    AutocastGuard autocast(m_spec.autocast, scalar_type(m_spec.dtype));
    FuserGuard fuser(m_spec.graph == GraphMode::k_fused);
    at::NoGradGuard no_grad;
    if (prepared.size() == 1 && prepared[0].isTensor()) {
      // torchvision detection models take List[Tensor]: the batch as a list of images.
      const bool as_list = forward_takes_tensor_list(m_module.get_method("forward").function().getSchema());
      return m_module.forward({forward_argument(prepared[0].toTensor(), as_list)});
    }
    return m_module.forward(std::move(prepared));
  } catch (const std::exception& e) {
    fail(BackendStage::k_forward, e);
  }
}

c10::IValue BackendInstance::with_settings(const std::function<c10::IValue()>& call) {
  if (skipped()) {
    throw Error(m_source.config_path + ": backend '" + m_spec.name + "' is skipped: " + m_skip_reason);
  }
  try {
    SettingsGuard guard(m_spec.onednn, m_threads, m_spec.tf32);
    AutocastGuard autocast(m_spec.autocast, scalar_type(m_spec.dtype));
    FuserGuard fuser(m_spec.graph == GraphMode::k_fused);
    at::NoGradGuard no_grad;
    return call();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(BackendStage::k_forward, e);
  }
}

std::vector<const void*> BackendInstance::storage_pointers() const {
  std::vector<const void*> pointers;
  // A package holds its own weights, read from the .pt2 by its loader (LibTorch 2.6's has
  // no call that lists them); nothing of a TorchScript module can reach them.
  if (skipped() || m_package || m_onnx) {
    return pointers;
  }
  for (const auto& attribute : m_module.named_attributes(/*recurse=*/true)) {
    if (attribute.value.isTensor()) {
      collect_tensor_pointer(attribute.value.toTensor(), pointers);
    }
  }
  for (const torch::jit::Method& method : m_module.get_methods()) {
    collect_graph_constants(method.graph()->block(), pointers);
  }
  return pointers;
}

void check_no_shared_storage(const BackendInstance& reference, const BackendInstance& target) {
  std::vector<const void*> reference_pointers = reference.storage_pointers();
  std::set<const void*> reference_set(reference_pointers.begin(), reference_pointers.end());
  std::vector<const void*> target_pointers = target.storage_pointers();
  auto shared = std::count_if(target_pointers.begin(), target_pointers.end(),
                              [&](const void* pointer) { return reference_set.count(pointer) != 0; });
  if (shared == 0) {
    return;
  }
  throw Error("backend '" + target.spec().name + "' shares " + std::to_string(shared) +
              " tensor(s) with the reference '" + reference.spec().name +
              "': driftgate refuses to compare a model with itself (the nn.Module.to() aliasing bug); "
              "this is a bug in driftgate, please report it");
}

}  // namespace driftgate

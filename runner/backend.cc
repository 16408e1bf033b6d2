#include "runner/backend.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/passes/xnnpack_rewrite.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/tensorexpr/codegen.h>

#include <algorithm>
#include <set>
#include <utility>

#include "core/error.h"
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
         "; driftgate feeds one tensor (or one list of tensors): wrap the model in a module whose forward "
         "takes one input";
}

}  // namespace

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
  try {
    register_torchvision_ops();  // detection models need torchvision::nms at load
    instance.m_module = torch::jit::load(source.model_path, device_of(spec.device));
  } catch (const std::exception& e) {
    throw ModelFileError(source.config_path + ": model '" + source.model_path + "' cannot be loaded by LibTorch " +
                         TORCH_VERSION + ": " + torch_error_summary(e) +
                         "; re-export it with torch.jit.script or torch.jit.trace and torch.jit.save");
  }
  if (std::string problem = forward_signature_problem(instance.m_module); !problem.empty()) {
    throw ModelFileError(source.config_path + ": model '" + source.model_path + "': " + problem);
  }
  try {
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

void BackendInstance::apply_dtype() {
  // Like nn.Module.to(dtype): floating-point parameters and buffers only, so
  // integer buffers (num_batches_tracked) keep their type.
  if (m_spec.autocast) {
    return;  // the module stays float32; autocast casts per op during forward
  }
  at::ScalarType target = scalar_type(m_spec.dtype);
  auto convert = [target](at::Tensor tensor) {
    if (tensor.is_floating_point() && tensor.scalar_type() != target) {
      tensor.set_data(tensor.to(target));
    }
  };
  for (const auto& parameter : m_module.named_parameters(/*recurse=*/true)) {
    convert(parameter.value);
  }
  for (const auto& buffer : m_module.named_buffers(/*recurse=*/true)) {
    convert(buffer.value);
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
  const at::MemoryFormat format = m_spec.memory_format == MemoryFormat::k_channels_last && input.dim() == 4
                                      ? at::MemoryFormat::ChannelsLast
                                      : at::MemoryFormat::Preserve;
  return input.to(input.options()
                      .device(device_of(m_spec.device))
                      .dtype(floating ? scalar_type(m_spec.dtype) : input.scalar_type()),
                  /*non_blocking=*/false, /*copy=*/true, format);
}

c10::IValue BackendInstance::forward(const at::Tensor& input) {
  if (skipped()) {
    throw Error(m_source.config_path + ": backend '" + m_spec.name + "' is skipped: " + m_skip_reason);
  }
  try {
    at::Tensor prepared = prepare_input(input);
    SettingsGuard guard(m_spec.onednn, m_threads, m_spec.tf32);
    AutocastGuard autocast(m_spec.autocast, scalar_type(m_spec.dtype));
    FuserGuard fuser(m_spec.graph == GraphMode::k_fused);
    at::NoGradGuard no_grad;
    // torchvision detection models take List[Tensor]: the batch as a list of images.
    const bool as_list = forward_takes_tensor_list(m_module.get_method("forward").function().getSchema());
    return m_module.forward({forward_argument(prepared, as_list)});
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
  if (skipped()) {
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

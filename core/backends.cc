// The built-in backends every experiment may name without defining them
// (declared in core/experiment.h): one place that says what each one is.
#include <vector>

#include "core/experiment.h"

namespace driftgate {
namespace {

BackendSpec backend(const char* name, const char* description) {
  BackendSpec spec;
  spec.name = name;
  spec.description = description;
  return spec;
}

std::vector<BackendSpec> make_builtin_backends() {
  std::vector<BackendSpec> all;
  all.push_back(backend("cpu_fp32", "CPU, float32, eager, oneDNN on: the usual reference"));
  BackendSpec spec = backend("onednn_off", "CPU float32 with oneDNN disabled (native ATen kernels)");
  spec.onednn = false;
  all.push_back(spec);
  spec = backend("channels_last", "CPU float32 with channels-last parameters and input");
  spec.memory_format = MemoryFormat::k_channels_last;
  all.push_back(spec);
  spec = backend("frozen", "CPU float32, torch::jit::freeze (conv-bn folding)");
  spec.graph = GraphMode::k_frozen;
  all.push_back(spec);
  spec = backend("frozen_exact", "CPU float32, torch::jit::freeze with optimize_numerics=false (bit-identical)");
  spec.graph = GraphMode::k_frozen;
  spec.optimize_numerics = false;
  all.push_back(spec);
  spec = backend("optimized", "CPU float32, torch::jit::optimize_for_inference (oneDNN layouts)");
  spec.graph = GraphMode::k_optimized;
  all.push_back(spec);
  spec = backend("xnnpack", "CPU float32, torch::jit::optimizeForMobile (XNNPACK prepacked ops)");
  spec.graph = GraphMode::k_xnnpack;
  all.push_back(spec);
  spec = backend("nnc_fused", "CPU float32 through the NNC (TensorExpr) fuser; needs LibTorch with LLVM");
  spec.graph = GraphMode::k_fused;
  all.push_back(spec);
  spec = backend("aoti", "CPU float32, the model's AOTInductor package (aoti_package:); needs LibTorch >= 2.6");
  spec.graph = GraphMode::k_aoti;
  all.push_back(spec);
  spec = backend("onnxruntime",
                 "CPU float32, the model's ONNX file (onnx_model:) in ONNX Runtime, CPU provider, all optimizations");
  spec.graph = GraphMode::k_onnxruntime;
  all.push_back(spec);
  spec =
      backend("onnxruntime_dnnl",
              "CPU float32, the model's ONNX file (onnx_model:) in ONNX Runtime, oneDNN provider, all optimizations");
  spec.graph = GraphMode::k_onnxruntime;
  spec.onnx_provider = OnnxProvider::k_dnnl;
  all.push_back(spec);
  spec = backend("threads_2", "CPU float32 with 2 intra-op threads");
  spec.threads = 2;
  all.push_back(spec);
  spec = backend("threads_4", "CPU float32 with 4 intra-op threads");
  spec.threads = 4;
  all.push_back(spec);
  spec = backend("cpu_fp64", "CPU float64: the oracle");
  spec.dtype = DType::k_float64;
  all.push_back(spec);
  spec = backend("cpu_bf16", "CPU bfloat16 (module and input cast)");
  spec.dtype = DType::k_bfloat16;
  all.push_back(spec);
  spec = backend("cpu_bf16_autocast", "CPU float32 module and input, forward under bfloat16 autocast");
  spec.dtype = DType::k_bfloat16;
  spec.autocast = true;
  all.push_back(spec);
  spec = backend("cpu_fp16", "CPU float16 (module and input cast)");
  spec.dtype = DType::k_float16;
  all.push_back(spec);
  spec = backend("cuda_fp32", "CUDA float32");
  spec.device = Device::k_cuda;
  all.push_back(spec);
  spec = backend("cuda_tf32", "CUDA float32 with TF32 allowed in cuBLAS and cuDNN");
  spec.device = Device::k_cuda;
  spec.tf32 = true;
  all.push_back(spec);
  spec = backend("cuda_fp16", "CUDA float16");
  spec.device = Device::k_cuda;
  spec.dtype = DType::k_float16;
  all.push_back(spec);
  spec = backend("cuda_bf16", "CUDA bfloat16");
  spec.device = Device::k_cuda;
  spec.dtype = DType::k_bfloat16;
  all.push_back(spec);
  return all;
}

}  // namespace

const std::vector<BackendSpec>& builtin_backends() {
  static const std::vector<BackendSpec> backends = make_builtin_backends();
  return backends;
}

BackendSpec oracle_backend() {
  BackendSpec spec;
  spec.name = "oracle_fp64";
  spec.dtype = DType::k_float64;
  spec.description = "CPU float64: the oracle";
  return spec;
}

}  // namespace driftgate

// The onnxruntime backends' model: an ONNX file run by ONNX Runtime in driftgate-ort, a worker
// process that never loads LibTorch (ort/worker.cc says why and defines the protocol). One
// worker per backend instance, started when the backend loads and ended with it; its flat
// outputs are put back into the TorchScript model's output tree by the file's
// driftgate_out_spec metadata (a torch.utils._pytree TreeSpec, as the exporter writes it).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runner/subprocess.h"

namespace driftgate {

struct OnnxSettings {
  std::string provider = "cpu";      // cpu | dnnl: ONNX Runtime's execution provider
  std::string optimization = "all";  // disable | basic | extended | all: its graph optimization level
  int threads = 1;                   // intra-op threads
};

// Whether this build has the worker (ONNX Runtime's C++ API was found at configure time).
bool onnx_worker_built();

// Where the worker is: `given` when it is not empty (the runner's options: `main()` reads
// DRIFTGATE_ORT_WORKER), else driftgate-ort beside the running driftgate.
std::string onnx_worker_path(const std::string& given);

// ONNX Runtime's version as the worker at onnx_worker_path(`worker`) reports it
// (`driftgate-ort --version`), or "unknown" when it cannot be asked. For the environment
// key of builds that have the worker.
std::string onnx_runtime_version(const std::string& worker);

// The ONNX file's graph as the worker reads it (tier 2: runner/tier2_onnx.h).
struct OnnxNode {
  std::string name;  // "/layer1/layer1.0/conv1/Conv": torch.onnx.export's module scope, then the op
  std::string op;    // "Conv"
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};
struct OnnxGraph {
  std::vector<OnnxNode> nodes;  // in the file's order (topological, as ONNX requires)
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

class OnnxWorker {
 public:
  // Starts the worker at onnx_worker_path(`worker`) on `model`. Throws driftgate::Error
  // when it cannot start, with ONNX Runtime's refusal (a file it cannot load, a provider it
  // lacks), or when the file has several outputs and no driftgate_out_spec, or a spec whose
  // leaves do not match its outputs. Destroyed, it closes the pipes, kills and reaps the worker.
  OnnxWorker(const std::string& worker, const std::string& model, const OnnxSettings& settings);
  OnnxWorker(const OnnxWorker&) = delete;
  OnnxWorker& operator=(const OnnxWorker&) = delete;

  // One forward: `input` (float32) in, the output tree out. Throws driftgate::Error with
  // ONNX Runtime's message (a shape the model does not take) or when the worker is gone.
  c10::IValue run(const at::Tensor& input);

  // The file's graph (its nodes, names and values). Throws driftgate::Error when the worker
  // cannot read it as protobuf.
  OnnxGraph graph();

  // One forward of the model with `mark` (node outputs) added as graph outputs, in a session
  // of the worker's made for them under the same options: the file's outputs, flat, then the
  // marked values in `mark`'s order.
  struct Marked {
    std::vector<at::Tensor> outputs;
    std::vector<at::Tensor> values;
  };
  Marked run_marked(const at::Tensor& input, const std::vector<std::string>& mark);

  const std::string& ort_version() const { return m_version; }
  const std::vector<int64_t>& input_shape() const { return m_input_shape; }  // -1: any extent

 private:
  std::string read_line();
  std::string ended_how();  // " (killed by signal 11 (Segmentation fault))" once it has ended, else ""
  void read_bytes(void* data, size_t size);
  nlohmann::json read_reply();
  std::vector<at::Tensor> forward(const at::Tensor& input, const std::vector<std::string>& mark);
  void write_bytes(const void* data, size_t size);

  std::string m_model;
  std::optional<Child> m_worker;  // its stdin and stdout on pipes (runner/subprocess.h)
  std::string m_version;
  std::vector<int64_t> m_input_shape;
  size_t m_outputs = 0;
  std::string m_out_spec;  // empty: one output, a plain tensor
};

}  // namespace driftgate

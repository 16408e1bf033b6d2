// driftgate-ort: runs one ONNX model with ONNX Runtime for driftgate's onnxruntime backends,
// in a process of its own that never loads LibTorch: the two runtimes' thread pools and
// operator registries never meet, and a crash or hang in ONNX Runtime is the worker's (the
// runner's isolation records it against the backend). The runner (runner/onnx_worker.h)
// starts one worker per backend and talks to it over the worker's stdin and stdout:
//
//   driftgate-ort MODEL.onnx PROVIDER LEVEL THREADS     PROVIDER: cpu | dnnl
//                                                       LEVEL: disable | basic | extended | all
//   worker -> {"ok": true, "ort_version": "1.21.0", "input": {"name": "input", "shape": [1, 3, 224, 224]},
//              "outputs": ["out"], "openmp_threads": 1 (-1: no OpenMP loaded),
//              "out_spec": "<pytree TreeSpec JSON>" or null}\n
//   runner -> {"shape": [1, 3, 224, 224]}\n, then the float32 values (C order, native endianness)
//   worker -> {"ok": true, "outputs": [{"dtype": "float32", "shape": [1, 1000]}, ...]}\n, then each
//              output's bytes in that order
//   Tier 2 (runner/tier2_onnx.h):
//   runner -> {"graph": true}\n
//   worker -> {"ok": true, "bytes": N}\n, then N bytes of JSON: {"nodes": [[name, op_type, [inputs],
//              [outputs]], ...] in the file's order, "inputs": [...], "outputs": [...]}
//   runner -> {"shape": [...], "mark": ["value", ...]}\n and the values: a forward of the model with
//              those node outputs added as graph outputs (a second session, kept while the same
//              values are asked for); the reply lists the file's outputs, then the marked values.
//   Any error: {"ok": false, "error": "..."}\n. An error while loading ends the worker (exit 2);
//   an error in a forward does not. End of input ends it (exit 0). It also ends when the
//   process that started it does (PR_SET_PDEATHSIG), so a runner killed on a timeout leaves
//   no worker behind.
//
//   driftgate-ort --version    prints ONNX Runtime's version.
#include <dlfcn.h>
#include <dnnl_provider_options.h>
#include <onnx/onnx_pb.h>
#include <onnxruntime_cxx_api.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr size_t k_max_line = 1 << 20;                // a request naming every value of a large graph to mark
constexpr int64_t k_max_elements = int64_t{1} << 28;  // the runner's bound on an input's size

void write_all(const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(STDOUT_FILENO, bytes, size);
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      _exit(3);  // the runner is gone
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

void write_line(const nlohmann::json& message) {
  const std::string text = message.dump() + "\n";
  write_all(text.data(), text.size());
}

// False at end of input before any byte.
bool read_exactly(void* data, size_t size) {
  char* bytes = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::read(STDIN_FILENO, bytes + done, size - done);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      throw std::runtime_error(std::string("reading the request: ") + std::strerror(errno));
    }
    if (got == 0) {
      if (done == 0) {
        return false;
      }
      throw std::runtime_error("the request ended after " + std::to_string(done) + " of " + std::to_string(size) +
                               " bytes");
    }
    done += static_cast<size_t>(got);
  }
  return true;
}

// One line (without its newline); false at end of input.
bool read_line(std::string& line) {
  line.clear();
  char c = 0;
  while (true) {
    if (!read_exactly(&c, 1)) {
      if (line.empty()) {
        return false;
      }
      throw std::runtime_error("the request line has no end");
    }
    if (c == '\n') {
      return true;
    }
    if (line.size() >= k_max_line) {
      throw std::runtime_error("a request line over 1 MiB");
    }
    line += c;
  }
}

struct ElementType {
  const char* name;
  size_t size;
};

ElementType element_type(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return {"float32", 4};
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return {"float64", 8};
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return {"float16", 2};
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return {"bfloat16", 2};
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return {"int64", 8};
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return {"int32", 4};
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return {"uint8", 1};
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return {"int8", 1};
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return {"bool", 1};
    default:
      throw std::runtime_error("an output of ONNX element type " + std::to_string(static_cast<int>(type)) +
                               ", which driftgate does not compare");
  }
}

GraphOptimizationLevel optimization_level(const std::string& level) {
  if (level == "disable") {
    return ORT_DISABLE_ALL;
  }
  if (level == "basic") {
    return ORT_ENABLE_BASIC;
  }
  if (level == "extended") {
    return ORT_ENABLE_EXTENDED;
  }
  if (level == "all") {
    return ORT_ENABLE_ALL;
  }
  throw std::runtime_error("optimization level '" + level + "': use disable, basic, extended or all");
}

// Debian 13's ONNX Runtime 1.21 links the system's libonnx, and creating a session registers
// ONNX's operator schemas a second time: ~1100 lines of "Schema error: Trying to register
// schema with name ... already registered" (and blank lines) on stderr, in Python's
// onnxruntime too, with or without LibTorch in the process (measured). While a session is
// created stderr goes to a temporary file; those lines are dropped, anything else ONNX
// Runtime says there goes on to stderr.
class QuietSchemaErrors {
 public:
  QuietSchemaErrors() : m_file(std::tmpfile()), m_saved(::dup(STDERR_FILENO)) {
    if (m_file != nullptr && m_saved >= 0) {
      std::fflush(stderr);
      ::dup2(::fileno(m_file), STDERR_FILENO);
    }
  }
  ~QuietSchemaErrors() {
    if (m_file == nullptr || m_saved < 0) {
      return;
    }
    std::fflush(stderr);
    ::dup2(m_saved, STDERR_FILENO);
    ::close(m_saved);
    std::rewind(m_file);
    char line[4096];
    while (std::fgets(line, sizeof line, m_file) != nullptr) {
      if (std::strncmp(line, "Schema error: Trying to register schema", 39) != 0 && std::strcmp(line, "\n") != 0) {
        std::fputs(line, stderr);
      }
    }
    std::fclose(m_file);
  }
  QuietSchemaErrors(const QuietSchemaErrors&) = delete;
  QuietSchemaErrors& operator=(const QuietSchemaErrors&) = delete;

 private:
  std::FILE* m_file;
  int m_saved;
};

// The oneDNN execution provider sets OpenMP's thread count to the machine's cores when its
// session is created, whatever intra_op_num_threads (or OMP_NUM_THREADS) says: measured on a
// 2-core machine, omp_get_max_threads() goes from 1 to 2, and stays there for every Run. The
// worker sets it back to the backend's threads, through whichever OpenMP runtime the process
// has loaded (none: nothing to set), and reports what OpenMP then says (-1 without one).
// (OpenMP keeps the count per calling thread; with sequential execution Run executes the
// graph's nodes on this thread.)
int set_openmp_threads(int threads) {
  // The provider's library is loaded with RTLD_LOCAL, so its OpenMP's symbols are not global:
  // ask the runtime by name, if it is loaded (RTLD_NOLOAD never loads one).
  for (const char* runtime : {"libgomp.so.1", "libomp.so.5", "libiomp5.so"}) {
    void* handle = ::dlopen(runtime, RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) {
      continue;
    }
    using Setter = void (*)(int);
    using Getter = int (*)();
    auto set = reinterpret_cast<Setter>(::dlsym(handle, "omp_set_num_threads"));
    auto get = reinterpret_cast<Getter>(::dlsym(handle, "omp_get_max_threads"));
    const int now = set != nullptr && get != nullptr ? (set(threads), get()) : -1;
    ::dlclose(handle);
    return now;
  }
  return -1;
}

// The ONNX file as protobuf (the libonnx_proto that ONNX Runtime itself links), for tier 2:
// its graph's nodes, and the same model with chosen node outputs added as graph outputs.
onnx::ModelProto read_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) {
    throw std::runtime_error("cannot read '" + path + "' as an ONNX model (protobuf)");
  }
  for (const onnx::TensorProto& initializer : model.graph().initializer()) {
    if (initializer.data_location() == onnx::TensorProto::EXTERNAL) {
      throw std::runtime_error(
          "its weights are in external data files; tier 2 marks values in a copy of the model "
          "held in memory, which cannot find them");
    }
  }
  return model;
}

class Worker {
 public:
  Worker(const std::string& model, const std::string& provider, const std::string& level, int threads)
      : m_env(ORT_LOGGING_LEVEL_ERROR, "driftgate-ort"), m_model(model), m_threads(threads) {
    m_options.SetIntraOpNumThreads(threads);
    m_options.SetInterOpNumThreads(1);
    m_options.SetExecutionMode(ORT_SEQUENTIAL);
    m_options.SetGraphOptimizationLevel(optimization_level(level));
    // Idle intra-op threads sleep instead of spinning: the runner times forwards one by one.
    m_options.AddConfigEntry("session.intra_op.allow_spinning", "0");
    if (provider == "dnnl") {
      OrtDnnlProviderOptions dnnl{};
      dnnl.use_arena = 1;
      Ort::ThrowOnError(Ort::GetApi().SessionOptionsAppendExecutionProvider_Dnnl(m_options, &dnnl));
    } else if (provider != "cpu") {
      throw std::runtime_error("provider '" + provider + "': use cpu or dnnl");
    }
    {
      QuietSchemaErrors quiet;
      m_session = Ort::Session(m_env, model.c_str(), m_options);
    }
    const int openmp_threads = set_openmp_threads(threads);
    if (openmp_threads != -1 && openmp_threads != threads) {
      throw std::runtime_error("OpenMP runs " + std::to_string(openmp_threads) + " threads after setting " +
                               std::to_string(threads));
    }
    Ort::AllocatorWithDefaultOptions allocator;
    if (m_session.GetInputCount() != 1) {
      throw std::runtime_error("the model takes " + std::to_string(m_session.GetInputCount()) +
                               " inputs; driftgate feeds one tensor");
    }
    m_input_name = m_session.GetInputNameAllocated(0, allocator).get();
    Ort::TypeInfo input_type = m_session.GetInputTypeInfo(0);
    if (input_type.GetONNXType() != ONNX_TYPE_TENSOR ||
        input_type.GetTensorTypeAndShapeInfo().GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      throw std::runtime_error("the model's input '" + m_input_name + "' is not a float32 tensor; driftgate feeds one");
    }
    m_input_shape = input_type.GetTensorTypeAndShapeInfo().GetShape();
    for (size_t i = 0; i < m_session.GetOutputCount(); ++i) {
      m_output_names.push_back(m_session.GetOutputNameAllocated(i, allocator).get());
    }
    Ort::ModelMetadata metadata = m_session.GetModelMetadata();
    Ort::AllocatedStringPtr spec = metadata.LookupCustomMetadataMapAllocated("driftgate_out_spec", allocator);
    m_announce = {{"ok", true},
                  {"ort_version", Ort::GetVersionString()},
                  {"input", {{"name", m_input_name}, {"shape", m_input_shape}}},
                  {"outputs", m_output_names},
                  {"openmp_threads", openmp_threads},
                  {"out_spec", spec ? nlohmann::json(std::string(spec.get())) : nlohmann::json(nullptr)}};
  }

  const nlohmann::json& announce() const { return m_announce; }

  // One request: false at end of input.
  bool serve() {
    std::string line;
    if (!read_line(line)) {
      return false;
    }
    const nlohmann::json request = nlohmann::json::parse(line);
    if (request.contains("graph")) {
      try {
        const std::string graph = describe_graph().dump();
        write_line({{"ok", true}, {"bytes", graph.size()}});
        write_all(graph.data(), graph.size());
      } catch (const std::exception& e) {
        write_line({{"ok", false}, {"error", e.what()}});
      }
      return true;
    }
    const std::vector<int64_t> shape = request.at("shape").get<std::vector<int64_t>>();
    const std::vector<std::string> mark =
        request.contains("mark") ? request.at("mark").get<std::vector<std::string>>() : std::vector<std::string>();
    int64_t count = 1;
    for (int64_t extent : shape) {
      if (extent < 0 || (extent > 0 && count > k_max_elements / extent)) {
        throw std::runtime_error("input shape out of bounds");
      }
      count *= extent;
    }
    std::vector<float> values(static_cast<size_t>(count));
    if (!read_exactly(values.data(), values.size() * sizeof(float)) && count > 0) {
      throw std::runtime_error("the request ended before its values");
    }
    try {
      run(values, shape, mark);
    } catch (const std::exception& e) {  // ONNX Runtime's refusal, or an output driftgate cannot compare
      write_line({{"ok", false}, {"error", e.what()}});
    }
    return true;
  }

 private:
  const onnx::ModelProto& proto() {
    if (!m_proto) {
      m_proto = std::make_unique<onnx::ModelProto>(read_model(m_model));
    }
    return *m_proto;
  }

  nlohmann::json describe_graph() {
    const onnx::GraphProto& graph = proto().graph();
    nlohmann::json nodes = nlohmann::json::array();
    for (const onnx::NodeProto& node : graph.node()) {
      nodes.push_back({node.name(), node.op_type(), std::vector<std::string>(node.input().begin(), node.input().end()),
                       std::vector<std::string>(node.output().begin(), node.output().end())});
    }
    nlohmann::json inputs = nlohmann::json::array();
    for (const onnx::ValueInfoProto& input : graph.input()) {
      inputs.push_back(input.name());
    }
    nlohmann::json outputs = nlohmann::json::array();
    for (const onnx::ValueInfoProto& output : graph.output()) {
      outputs.push_back(output.name());
    }
    return {{"nodes", nodes}, {"inputs", inputs}, {"outputs", outputs}};
  }

  // The session that also returns `mark` (node outputs): the file's model with them added as
  // graph outputs, under the same options. Kept for the next request with the same values.
  Ort::Session& marked_session(const std::vector<std::string>& mark) {
    if (m_marked && m_marked_names == mark) {
      return *m_marked;
    }
    m_marked.reset();  // one marked session at a time: its values are the memory that matters
    onnx::ModelProto model = proto();
    std::set<std::string> produced;
    for (const onnx::NodeProto& node : model.graph().node()) {
      produced.insert(node.output().begin(), node.output().end());
    }
    std::set<std::string> outputs;
    for (const onnx::ValueInfoProto& output : model.graph().output()) {
      outputs.insert(output.name());
    }
    for (const std::string& name : mark) {
      if (produced.count(name) == 0) {
        throw std::runtime_error("no node of the model computes '" + name + "'");
      }
      if (outputs.insert(name).second) {
        model.mutable_graph()->add_output()->set_name(name);  // ONNX Runtime infers its type
      }
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes)) {
      throw std::runtime_error("cannot serialize the model with its values marked as outputs");
    }
    {
      QuietSchemaErrors quiet;
      m_marked = std::make_unique<Ort::Session>(m_env, bytes.data(), bytes.size(), m_options);
    }
    set_openmp_threads(m_threads);  // the oneDNN provider sets it again for every session
    m_marked_names = mark;
    return *m_marked;
  }

  void run(std::vector<float>& values, const std::vector<int64_t>& shape, const std::vector<std::string>& mark) {
    Ort::MemoryInfo memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    Ort::Value input =
        Ort::Value::CreateTensor<float>(memory, values.data(), values.size(), shape.data(), shape.size());
    const char* input_name = m_input_name.c_str();
    std::vector<std::string> names = m_output_names;
    names.insert(names.end(), mark.begin(), mark.end());
    std::vector<const char*> output_names;
    for (const std::string& name : names) {
      output_names.push_back(name.c_str());
    }
    Ort::Session& session = mark.empty() ? m_session : marked_session(mark);
    std::vector<Ort::Value> outputs =
        session.Run(Ort::RunOptions{nullptr}, &input_name, &input, 1, output_names.data(), output_names.size());
    nlohmann::json described = nlohmann::json::array();
    std::vector<std::pair<const void*, size_t>> bytes;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].IsTensor()) {
        throw std::runtime_error("output '" + names[i] + "' is not a tensor (a sequence or map)");
      }
      Ort::TensorTypeAndShapeInfo info = outputs[i].GetTensorTypeAndShapeInfo();
      const ElementType type = element_type(info.GetElementType());
      described.push_back({{"dtype", type.name}, {"shape", info.GetShape()}});
      bytes.emplace_back(outputs[i].GetTensorRawData(), info.GetElementCount() * type.size);
    }
    write_line({{"ok", true}, {"outputs", described}});
    for (const auto& [data, size] : bytes) {
      write_all(data, size);
    }
  }

  Ort::Env m_env;
  std::string m_model;
  int m_threads;
  Ort::SessionOptions m_options;
  Ort::Session m_session{nullptr};
  std::string m_input_name;
  std::vector<int64_t> m_input_shape;
  std::vector<std::string> m_output_names;
  nlohmann::json m_announce;
  std::unique_ptr<onnx::ModelProto> m_proto;  // read on the first tier-2 request
  std::unique_ptr<Ort::Session> m_marked;
  std::vector<std::string> m_marked_names;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::printf("%s\n", Ort::GetVersionString().c_str());
    return 0;
  }
  if (argc != 5) {
    std::fprintf(stderr,
                 "usage: driftgate-ort MODEL.onnx cpu|dnnl disable|basic|extended|all THREADS\n"
                 "  (started by driftgate run for its onnxruntime backends; see runner/onnx_worker.h)\n");
    return 2;
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<Worker> worker;
  try {
    const int threads = std::stoi(argv[4]);
    if (threads < 1 || threads > 256) {
      throw std::runtime_error(std::string("threads '") + argv[4] + "': give 1 to 256");
    }
    worker = std::make_unique<Worker>(argv[1], argv[2], argv[3], threads);
  } catch (const std::exception& e) {
    write_line({{"ok", false}, {"error", e.what()}});
    return 2;
  }
  write_line(worker->announce());
  try {
    while (worker->serve()) {
    }
  } catch (const std::exception& e) {
    // A malformed request: the stream cannot be resynchronized.
    write_line({{"ok", false}, {"error", e.what()}});
    return 2;
  }
  return 0;
}

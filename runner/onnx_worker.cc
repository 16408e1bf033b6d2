// The runner's side of driftgate-ort (runner/onnx_worker.h; the protocol is in ort/worker.cc).
#include "runner/onnx_worker.h"

#include <ATen/Functions.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "runner/aoti_package.h"
#include "runner/subprocess.h"

extern char** environ;

namespace driftgate {
namespace {

const std::map<std::string, at::ScalarType>& dtypes() {
  static const std::map<std::string, at::ScalarType> table = {
      {"float32", at::kFloat},     {"float64", at::kDouble}, {"float16", at::kHalf},
      {"bfloat16", at::kBFloat16}, {"int64", at::kLong},     {"int32", at::kInt},
      {"uint8", at::kByte},        {"int8", at::kChar},      {"bool", at::kBool}};
  return table;
}

// Writing to a worker that is gone must fail the write, not kill this process with SIGPIPE:
// the signal is blocked for this thread around the write and a pending one is consumed.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&m_set);
    sigaddset(&m_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    m_was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &m_set, &m_old);
  }
  ~SigpipeBlock() {
    if (!m_was_pending) {
      const timespec zero{0, 0};
      while (sigtimedwait(&m_set, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t m_set;
  sigset_t m_old;
  bool m_was_pending = false;
};

}  // namespace

bool onnx_worker_built() {
#ifdef DRIFTGATE_WITH_ONNXRUNTIME
  return true;
#else
  return false;
#endif
}

std::string onnx_worker_path() {
  if (const char* given = std::getenv("DRIFTGATE_ORT_WORKER"); given != nullptr && *given != '\0') {
    return given;
  }
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("driftgate-ort") : (self.parent_path() / "driftgate-ort").string();
}

std::string onnx_runtime_version() {
  const std::string worker = onnx_worker_path();
  int out[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return "unknown";
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::string program = worker;
  std::string flag = "--version";
  char* argv[] = {program.data(), flag.data(), nullptr};
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, worker.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  char buffer[256];
  ssize_t got = 0;
  while (spawned == 0 && (got = ::read(out[0], buffer, sizeof buffer)) != 0) {
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0 || text.size() > 1024) {
      break;
    }
    text.append(buffer, static_cast<size_t>(got));
  }
  ::close(out[0]);
  int status = 0;
  while (spawned == 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  const bool ok = spawned == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !text.empty() &&
                  text.find_first_not_of("0123456789.") == std::string::npos;
  return ok ? text : "unknown";
}

OnnxWorker::OnnxWorker(const std::string& model, const OnnxSettings& settings) : m_model(model) {
  const std::string worker = onnx_worker_path();
  const std::string where = "ONNX model '" + model + "': ";
  if (::access(worker.c_str(), X_OK) != 0) {
    throw Error(where + "the ONNX Runtime worker '" + worker + "' is missing (" + std::strerror(errno) +
                "); it is built beside driftgate where libonnxruntime-dev is installed (Debian 13)");
  }
  int to_worker[2] = {-1, -1};
  int from_worker[2] = {-1, -1};
  if (::pipe2(to_worker, O_CLOEXEC) != 0) {
    throw Error(where + "pipe: " + std::strerror(errno));
  }
  if (::pipe2(from_worker, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(to_worker[0]);
    ::close(to_worker[1]);
    throw Error(where + "pipe: " + std::strerror(error));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_worker[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_worker[1], STDOUT_FILENO);
  const std::string threads = std::to_string(settings.threads);
  std::vector<std::string> arguments = {worker, model, settings.provider, settings.optimization, threads};
  std::vector<char*> argv;
  for (std::string& argument : arguments) {
    argv.push_back(argument.data());
  }
  argv.push_back(nullptr);
  const int spawned = posix_spawn(&m_pid, worker.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_worker[0]);
  ::close(from_worker[1]);
  m_to = to_worker[1];
  m_from = from_worker[0];
  if (spawned != 0) {
    m_pid = -1;
    throw Error(where + "cannot start '" + worker + "': " + std::strerror(spawned));
  }
  nlohmann::json announce;
  const std::string line = read_line();
  try {
    announce = nlohmann::json::parse(line);
  } catch (const std::exception&) {
    throw Error(where + "the ONNX Runtime worker answered something else than its protocol: " + line.substr(0, 200));
  }
  if (!announce.value("ok", false)) {
    throw Error(where + "ONNX Runtime refused it: " + announce.value("error", std::string("(no reason given)")));
  }
  m_version = announce.at("ort_version").get<std::string>();
  m_input_shape = announce.at("input").at("shape").get<std::vector<int64_t>>();
  const std::vector<std::string> outputs = announce.at("outputs").get<std::vector<std::string>>();
  m_outputs = outputs.size();
  if (!announce.at("out_spec").is_null()) {
    m_out_spec = announce.at("out_spec").get<std::string>();
    size_t leaves = 0;
    try {
      leaves = tree_leaves(m_out_spec);
    } catch (const std::exception& e) {
      throw Error(where + "its driftgate_out_spec metadata: " + e.what());
    }
    if (leaves != m_outputs) {
      throw Error(where + "its driftgate_out_spec has " + std::to_string(leaves) + " leaves but the file has " +
                  std::to_string(m_outputs) + " outputs; export it again (tools/export_models.py writes both)");
    }
  } else if (m_outputs != 1) {
    throw Error(where + "the file has " + std::to_string(m_outputs) +
                " outputs and no driftgate_out_spec metadata saying how they map onto the TorchScript "
                "model's output (tuple, dict); export it with tools/export_models.py's export_onnx, or "
                "add the metadata (docs/configuration.md, ONNX Runtime)");
  }
}

OnnxWorker::~OnnxWorker() {
  if (m_to >= 0) {
    ::close(m_to);
  }
  if (m_from >= 0) {
    ::close(m_from);
  }
  if (m_pid > 0) {
    ::kill(m_pid, SIGKILL);
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string OnnxWorker::ended_how() {
  // Its stdout closed: it has exited or is about to; wait briefly for it, then say how.
  for (int tries = 0; tries < 100 && m_pid > 0; ++tries) {
    int status = 0;
    const pid_t done = ::waitpid(m_pid, &status, WNOHANG);
    if (done == m_pid) {
      m_pid = -1;
      return " (" + describe_exit(status) + ")";
    }
    if (done < 0 && errno != EINTR) {
      break;
    }
    ::usleep(10000);
  }
  return "";
}

std::string OnnxWorker::read_line() {
  std::string line;
  char c = 0;
  while (true) {
    const ssize_t got = ::read(m_from, &c, 1);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      throw Error("ONNX model '" + m_model + "': the ONNX Runtime worker ended" +
                  (line.empty() ? std::string() : " in the middle of a line") + ended_how());
    }
    if (c == '\n') {
      return line;
    }
    if (line.size() >= (size_t{1} << 16)) {
      throw Error("ONNX model '" + m_model + "': the ONNX Runtime worker sent a line over 64 KiB");
    }
    line += c;
  }
}

void OnnxWorker::read_bytes(void* data, size_t size) {
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = ::read(m_from, bytes, size);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      throw Error("ONNX model '" + m_model + "': the ONNX Runtime worker ended in the middle of an output" +
                  ended_how());
    }
    bytes += got;
    size -= static_cast<size_t>(got);
  }
}

void OnnxWorker::write_bytes(const void* data, size_t size) {
  SigpipeBlock block;
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(m_to, bytes, size);
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      const std::string reason = std::strerror(errno);
      throw Error("ONNX model '" + m_model + "': the ONNX Runtime worker is gone: writing to it: " + reason +
                  ended_how());
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

nlohmann::json OnnxWorker::read_reply() {
  nlohmann::json reply;
  const std::string line = read_line();
  try {
    reply = nlohmann::json::parse(line);
  } catch (const std::exception&) {
    throw Error("ONNX model '" + m_model + "': the ONNX Runtime worker answered something else than its protocol");
  }
  if (!reply.value("ok", false)) {
    throw Error("ONNX Runtime: " + reply.value("error", std::string("(no reason given)")));
  }
  return reply;
}

std::vector<at::Tensor> OnnxWorker::forward(const at::Tensor& input, const std::vector<std::string>& mark) {
  const at::Tensor values = input.to(at::kFloat).contiguous();
  nlohmann::json request{{"shape", values.sizes().vec()}};
  if (!mark.empty()) {
    request["mark"] = mark;
  }
  const std::string line = request.dump() + "\n";
  write_bytes(line.data(), line.size());
  write_bytes(values.data_ptr(), static_cast<size_t>(values.numel()) * sizeof(float));
  const nlohmann::json reply = read_reply();
  std::vector<at::Tensor> outputs;
  for (const nlohmann::json& described : reply.at("outputs")) {
    const auto found = dtypes().find(described.at("dtype").get<std::string>());
    if (found == dtypes().end()) {
      throw Error("ONNX model '" + m_model + "': an output of dtype " + described.at("dtype").dump());
    }
    at::Tensor output = at::empty(described.at("shape").get<std::vector<int64_t>>(), at::TensorOptions(found->second));
    read_bytes(output.data_ptr(), static_cast<size_t>(output.numel()) * output.element_size());
    outputs.push_back(std::move(output));
  }
  if (outputs.size() != m_outputs + mark.size()) {
    throw Error("ONNX model '" + m_model + "': the worker sent " + std::to_string(outputs.size()) + " outputs, not " +
                std::to_string(m_outputs + mark.size()));
  }
  return outputs;
}

c10::IValue OnnxWorker::run(const at::Tensor& input) {
  std::vector<at::Tensor> outputs = forward(input, {});
  return m_out_spec.empty() ? c10::IValue(outputs.front()) : unflatten_tree(m_out_spec, outputs);
}

OnnxWorker::Marked OnnxWorker::run_marked(const at::Tensor& input, const std::vector<std::string>& mark) {
  std::vector<at::Tensor> all = forward(input, mark);
  Marked result;
  result.values.assign(all.begin() + static_cast<std::ptrdiff_t>(m_outputs), all.end());
  all.resize(m_outputs);
  result.outputs = std::move(all);
  return result;
}

OnnxGraph OnnxWorker::graph() {
  const std::string request = "{\"graph\": true}\n";
  write_bytes(request.data(), request.size());
  const nlohmann::json reply = read_reply();
  const size_t size = reply.at("bytes").get<size_t>();
  if (size > (size_t{1} << 30)) {
    throw Error("ONNX model '" + m_model + "': the worker announced a graph of " + std::to_string(size) + " bytes");
  }
  std::string text(size, '\0');
  read_bytes(text.data(), size);
  OnnxGraph graph;
  try {
    const nlohmann::json described = nlohmann::json::parse(text);
    for (const nlohmann::json& node : described.at("nodes")) {
      graph.nodes.push_back({node.at(0).get<std::string>(), node.at(1).get<std::string>(),
                             node.at(2).get<std::vector<std::string>>(), node.at(3).get<std::vector<std::string>>()});
    }
    graph.inputs = described.at("inputs").get<std::vector<std::string>>();
    graph.outputs = described.at("outputs").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error("ONNX model '" + m_model + "': the worker's description of the graph: " + e.what());
  }
  return graph;
}

}  // namespace driftgate

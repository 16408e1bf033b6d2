// The runner's side of driftgate-ort (runner/onnx_worker.h; the protocol is in ort/worker.cc).
#include "runner/onnx_worker.h"

#include <ATen/Functions.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "runner/aoti_package.h"

namespace driftgate {
namespace {

const std::map<std::string, at::ScalarType>& dtypes() {
  static const std::map<std::string, at::ScalarType> table = {
      {"float32", at::kFloat},     {"float64", at::kDouble}, {"float16", at::kHalf},
      {"bfloat16", at::kBFloat16}, {"int64", at::kLong},     {"int32", at::kInt},
      {"uint8", at::kByte},        {"int8", at::kChar},      {"bool", at::kBool}};
  return table;
}

}  // namespace

bool onnx_worker_built() {
#ifdef DRIFTGATE_WITH_ONNXRUNTIME
  return true;
#else
  return false;
#endif
}

std::string onnx_worker_path(const std::string& given) {
  if (!given.empty()) {
    return given;
  }
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("driftgate-ort") : (self.parent_path() / "driftgate-ort").string();
}

std::string onnx_runtime_version(const std::string& worker) {
  Child::StartFailure failure;
  std::optional<Child> child = Child::spawn({onnx_worker_path(worker), "--version"}, false, &failure);
  if (!child) {
    return "unknown";
  }
  std::string text;
  child->read_to_end(text, k_no_deadline, 1024);  // a version is a line: what says more is no version
  child->close_pipe();
  const int status = child->reap();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !text.empty() &&
                  text.find_first_not_of("0123456789.") == std::string::npos;
  return ok ? text : "unknown";
}

OnnxWorker::OnnxWorker(const std::string& worker_given, const std::string& model, const OnnxSettings& settings)
    : m_model(model) {
  const std::string worker = onnx_worker_path(worker_given);
  const std::string where = "ONNX model '" + model + "': ";
  if (::access(worker.c_str(), X_OK) != 0) {
    throw Error(where + "the ONNX Runtime worker '" + worker + "' is missing (" + std::strerror(errno) +
                "); it is built beside driftgate where libonnxruntime-dev is installed (Debian 13)");
  }
  Child::StartFailure failure;
  m_worker = Child::spawn({worker, model, settings.provider, settings.optimization, std::to_string(settings.threads)},
                          true, &failure);
  if (!m_worker) {
    throw Error(where + (failure.at_pipe ? "pipe: " : "cannot start '" + worker + "': ") + failure.reason);
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

std::string OnnxWorker::ended_how() {
  // Its stdout closed: it has exited or is about to; wait briefly for it, then say how.
  const std::optional<int> status = m_worker->reap_within(1.0);
  return status ? " (" + describe_exit(*status) + ")" : "";
}

std::string OnnxWorker::read_line() {
  std::string line;
  char c = 0;
  while (true) {
    if (m_worker->read_exact(&c, 1, k_no_deadline) != ReadResult::k_ok) {
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
  if (m_worker->read_exact(static_cast<char*>(data), size, k_no_deadline) != ReadResult::k_ok) {
    throw Error("ONNX model '" + m_model + "': the ONNX Runtime worker ended in the middle of an output" + ended_how());
  }
}

void OnnxWorker::write_bytes(const void* data, size_t size) {
  if (!m_worker->write_all(data, size)) {
    const std::string reason = std::strerror(errno);
    throw Error("ONNX model '" + m_model + "': the ONNX Runtime worker is gone: writing to it: " + reason +
                ended_how());
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

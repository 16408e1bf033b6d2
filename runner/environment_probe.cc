#include "runner/environment_probe.h"

#include <ATen/Context.h>
#include <ATen/Version.h>
#include <dlfcn.h>
#include <link.h>
#include <torch/version.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/record.h"
#include "runner/blas_threads.h"
#include "runner/onnx_worker.h"

namespace driftgate {
namespace {

const char* const k_unknown = "unknown";

// The rest of the line after `prefix` in `text`, trimmed; "" when absent.
std::string value_after(const std::string& text, const std::string& prefix) {
  auto start = text.find(prefix);
  if (start == std::string::npos) {
    return "";
  }
  start += prefix.size();
  auto end = text.find('\n', start);
  std::string value = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) {
    value.pop_back();
  }
  while (!value.empty() && value.front() == ' ') {
    value.erase(value.begin());
  }
  return value;
}

std::string or_unknown(const std::string& value) { return value.empty() ? k_unknown : value; }

std::string compiler_version() {
#if defined(__clang__)
  return "Clang " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) + "." +
         std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  return std::string("GCC ") + __VERSION__;
#else
  return k_unknown;
#endif
}

// The first /proc/cpuinfo value of `field` ("vendor_id": GenuineIntel, AuthenticAMD).
std::string cpuinfo_field(const std::string& field) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind(field, 0) != 0) {
      continue;
    }
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      return value_after(line, line.substr(0, colon + 1));
    }
  }
  return k_unknown;
}

// The kernel set OpenBLAS chose for this CPU ("Haswell", "Zen", "SkylakeX"): the same
// BLAS library computes other fp32 results with another one (a baseline recorded on an
// Intel Xeon failed bf16 checks on an AMD EPYC, both "AVX2" to ATen). "none" when the
// loaded BLAS is not OpenBLAS.
std::string blas_core() {
  using CoreName = char* (*)();
  auto corename = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (corename == nullptr) {
    return "none";
  }
  const char* name = corename();
  return name == nullptr || *name == '\0' ? k_unknown : std::string(name);
}

bool is_blas_library(const std::string& file_name) {
  for (const char* stem : {"libblas", "libopenblas", "libmkl_rt", "libmkl_core", "libblis", "libcblas"}) {
    if (file_name.rfind(stem, 0) == 0) {
      return true;
    }
  }
  return false;
}

int collect_blas(struct dl_phdr_info* info, size_t, void* data) {
  auto* found = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') {
    return 0;
  }
  std::string path = info->dlpi_name;
  std::string file_name = path.substr(path.find_last_of('/') + 1);
  if (is_blas_library(file_name)) {
    found->push_back(path);
  }
  return 0;
}

// The real path of the BLAS the process loaded. libblas.so.3 (the reference
// BLAS interface LibTorch links against) wins over a library it pulls in.
std::string loaded_blas_path() {
  std::vector<std::string> found;
  dl_iterate_phdr(collect_blas, &found);
  if (found.empty()) {
    return "";
  }
  std::string chosen = found.front();
  for (const auto& path : found) {
    if (path.find("/libblas.so") != std::string::npos) {
      chosen = path;
      break;
    }
  }
  char resolved[PATH_MAX];
  if (realpath(chosen.c_str(), resolved) == nullptr) {
    return chosen;
  }
  return resolved;
}

// "openblas-pthread/libblas.so.3" when the library sits in a directory named
// after its implementation (Debian's alternatives), else the file name.
std::string short_blas_name(const std::string& real_path) {
  auto slash = real_path.find_last_of('/');
  std::string file_name = real_path.substr(slash + 1);
  if (slash == std::string::npos || slash == 0) {
    return file_name;
  }
  auto parent_slash = real_path.find_last_of('/', slash - 1);
  std::string parent = real_path.substr(parent_slash + 1, slash - parent_slash - 1);
  for (const char* implementation : {"blas", "mkl", "blis", "atlas"}) {
    if (parent.find(implementation) != std::string::npos) {
      return parent + "/" + file_name;
    }
  }
  return file_name;
}

// /etc/os-release's PRETTY_NAME ("Debian GNU/Linux 13 (trixie)"), unquoted; "unknown" without one.
std::string os_release_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string value = line.substr(12);
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
      }
      return or_unknown(value);
    }
  }
  return k_unknown;
}

}  // namespace

Environment probe_environment(int threads, const std::string& onnx_worker) {
  Environment environment;
  const std::string config = at::show_config();

  environment.keyed["libtorch"] = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                                  "." + std::to_string(TORCH_VERSION_PATCH);
  // show_config says "Intel(R) MKL-DNN v2.6.3 (Git Hash ...)"; the key takes the version only.
  std::string onednn_full = value_after(config, "MKL-DNN ");
  std::string onednn = onednn_full.substr(0, onednn_full.find(' '));
  if (!onednn.empty() && onednn.front() == 'v') {
    onednn.erase(onednn.begin());
  }
  if (!at::hasMKLDNN()) {
    onednn = "none";
  }
  environment.keyed["onednn"] = or_unknown(onednn);
  environment.keyed["cpu_isa"] = or_unknown(value_after(config, "CPU capability usage: "));
  std::string blas_path = loaded_blas_path();
  environment.keyed["blas"] = blas_path.empty() ? "none" : short_blas_name(blas_path);
  environment.keyed["blas_core"] = blas_core();
  environment.keyed["cpu_vendor"] = cpuinfo_field("vendor_id");
  environment.keyed["compiler"] = compiler_version();
  environment.keyed["threads"] = std::to_string(threads);
  // Whether the BLAS's own threads follow each backend's (runner/blas_threads.h): before
  // they did, OpenBLAS ran on every core whatever `threads` said, and a native-kernel
  // detection model's boxes moved when they stopped (retinanet onednn_off: max_abs
  // 1.5e-05 -> 21.5), so runs from before are not comparable.
  environment.keyed["blas_threads"] = blas_threads() > 0 ? "per_backend" : "single";
  environment.keyed["schema"] = std::to_string(k_record_schema_version);
  // driftgate links LibTorch's CPU library only; a CUDA build would add the GPU
  // model, driver and CUDA version here.
  environment.keyed["device"] = "cpu";
  // Keyed only where the onnxruntime backends can run, so the keys of builds without ONNX
  // Runtime (Debian 12's) stay what they were.
  if (onnx_worker_built()) {
    environment.keyed["onnxruntime"] = onnx_runtime_version(onnx_worker);
  }

  environment.info["cpu_model"] = cpuinfo_field("model name");
  // The distribution the LibTorch line comes from (Debian 12: 1.13, Debian 13: 2.6, the root
  // tools/debian13.sh makes). Context, not keyed: libtorch, onednn and compiler already are.
  environment.info["os"] = os_release_name();
  environment.info["blas_path"] = blas_path.empty() ? "none" : blas_path;
  environment.info["onednn_full"] = or_unknown(onednn_full);
  environment.info["tool_version"] = DRIFTGATE_VERSION;
  return environment;
}

}  // namespace driftgate

#include "runner/environment_probe.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string>

namespace driftgate {
namespace {

// `parts` dot-separated runs of digits from `at` on; moves `at` past them. (Plain string
// search: std::regex trips GCC 12's -Wmaybe-uninitialized in the sanitizer build.)
bool read_version(const std::string& text, size_t& at, int parts) {
  for (int part = 0; part < parts; ++part) {
    if (part > 0) {
      if (at >= text.size() || text[at] != '.') {
        return false;
      }
      ++at;
    }
    const size_t start = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) != 0) {
      ++at;
    }
    if (at == start) {
      return false;
    }
  }
  return true;
}

// "1.2" or "1.2.3" and nothing else.
bool is_version(const std::string& text) {
  for (int parts : {2, 3}) {
    size_t at = 0;
    if (read_version(text, at, parts) && at == text.size()) {
      return true;
    }
  }
  return false;
}

// "GCC 12.2..." or "Clang 14.0...".
bool is_compiler(const std::string& text) {
  size_t at = text.rfind("GCC ", 0) == 0 ? 4 : text.rfind("Clang ", 0) == 0 ? 6 : std::string::npos;
  return at != std::string::npos && read_version(text, at, 2);
}

// libtorch-dev's package version ("1.13.0+dfsg-7", "2.6.0+dfsg-7"), as dpkg reports it.
std::string installed_libtorch() {
  std::string version;
  if (FILE* pipe = ::popen("dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null", "r")) {
    char buffer[128];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
      version += buffer;
    }
    ::pclose(pipe);
  }
  // Debian's epoch ("1:") is not part of LibTorch's version.
  const auto colon = version.find(':');
  return colon == std::string::npos ? version : version.substr(colon + 1);
}

TEST(EnvironmentProbe, FindsLibTorchOneDnnBlasAndTheRunSettings) {
  Environment environment = probe_environment(3);
  // The LibTorch line: the major.minor dpkg says libtorch-dev is (1.13 on Debian 12, 2.6 on 13;
  // Debian's 1.13.1 package says 1.13.0 in torch/version.h, so the patch level is not compared).
  const std::string keyed = environment.keyed.at("libtorch");
  const std::string line = keyed.substr(0, keyed.rfind('.') + 1);
  EXPECT_TRUE(is_version(keyed)) << keyed;
  EXPECT_EQ(installed_libtorch().rfind(line, 0), 0u) << keyed << " vs the package's " << installed_libtorch();
  EXPECT_EQ(environment.info.at("os").rfind("Debian GNU/Linux ", 0), 0u) << environment.info.at("os");
  EXPECT_TRUE(is_version(environment.keyed.at("onednn"))) << environment.keyed.at("onednn");
  EXPECT_NE(environment.keyed.at("cpu_isa"), "unknown");
  EXPECT_NE(environment.keyed.at("blas"), "none");
  // OpenBLAS is what install-deps installs: its kernel set and the CPU's vendor are keyed.
  EXPECT_NE(environment.keyed.at("blas_core"), "none");
  EXPECT_NE(environment.keyed.at("blas_core"), "unknown");
  EXPECT_NE(environment.keyed.at("cpu_vendor"), "unknown");
  EXPECT_TRUE(std::filesystem::exists(environment.info.at("blas_path"))) << environment.info.at("blas_path");
  EXPECT_NE(environment.info.at("blas_path").find(environment.keyed.at("blas")), std::string::npos);
  EXPECT_TRUE(is_compiler(environment.keyed.at("compiler"))) << environment.keyed.at("compiler");
  EXPECT_EQ(environment.keyed.at("threads"), "3");
  EXPECT_EQ(environment.keyed.at("blas_threads"), "per_backend");  // OpenBLAS, as install-deps installs
  EXPECT_EQ(environment.keyed.at("schema"), "1");
  EXPECT_EQ(environment.keyed.at("device"), "cpu");
  EXPECT_EQ(environment.info.at("tool_version"), DRIFTGATE_VERSION);
  EXPECT_FALSE(environment.info.at("cpu_model").empty());
}

TEST(EnvironmentProbe, ThreadsEnterTheKey) {
  EXPECT_NE(probe_environment(1).key(), probe_environment(2).key());
  EXPECT_EQ(probe_environment(1).key(), probe_environment(1).key());
}

}  // namespace
}  // namespace driftgate

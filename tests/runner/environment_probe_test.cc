#include "runner/environment_probe.h"

#include <gtest/gtest.h>

#include <cctype>
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

TEST(EnvironmentProbe, FindsLibTorchOneDnnBlasAndTheRunSettings) {
  Environment environment = probe_environment(3);
  EXPECT_EQ(environment.keyed.at("libtorch").rfind("1.13.", 0), 0u) << environment.keyed.at("libtorch");
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

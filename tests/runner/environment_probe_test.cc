#include "runner/environment_probe.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

namespace driftgate {
namespace {

TEST(EnvironmentProbe, FindsLibTorchOneDnnBlasAndTheRunSettings) {
  Environment environment = probe_environment(3);
  EXPECT_EQ(environment.keyed.at("libtorch").rfind("1.13.", 0), 0u) << environment.keyed.at("libtorch");
  EXPECT_TRUE(std::regex_match(environment.keyed.at("onednn"), std::regex(R"(\d+\.\d+(\.\d+)?)")))
      << environment.keyed.at("onednn");
  EXPECT_NE(environment.keyed.at("cpu_isa"), "unknown");
  EXPECT_NE(environment.keyed.at("blas"), "none");
  EXPECT_TRUE(std::filesystem::exists(environment.info.at("blas_path"))) << environment.info.at("blas_path");
  EXPECT_NE(environment.info.at("blas_path").find(environment.keyed.at("blas")), std::string::npos);
  EXPECT_TRUE(std::regex_match(environment.keyed.at("compiler"), std::regex(R"((GCC|Clang) \d+\.\d+.*)")))
      << environment.keyed.at("compiler");
  EXPECT_EQ(environment.keyed.at("threads"), "3");
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

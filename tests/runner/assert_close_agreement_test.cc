// driftgate's assert_close rule against PyTorch's own, on the same saved tensors.
//
// tests/runner/assert_close_pairs.py runs tiny models on driftgate's CPU backends in
// Python, saves the (reference, target) pairs and what torch.testing.assert_close
// said about each at several tolerances (including its per-dtype defaults). This test
// loads the very same tensors and requires exact agreement: verdict, mismatch count,
// greatest absolute difference, the tolerances applied, and the minimum atol and rtol
// (which the script found by asking assert_close itself). DG_PAIRS_DIR names the
// script's output folder (CTest sets it).
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "runner/tier1.h"
#include "runner/torch_compat.h"

namespace driftgate {
namespace {

double json_number(const nlohmann::json& value) {
  if (value.is_null()) {
    return std::numeric_limits<double>::infinity();  // Python's json writes inf as Infinity; see below
  }
  return value.get<double>();
}

TEST(AssertCloseAgreement, VerdictsCountsAndMinimumTolerancesMatchPyTorch) {
  const char* dir = std::getenv("DG_PAIRS_DIR");
  ASSERT_NE(dir, nullptr) << "set DG_PAIRS_DIR to the output of tests/runner/assert_close_pairs.py";
  std::ifstream pairs_file(std::string(dir) + "/pairs.pt", std::ios::binary);
  ASSERT_TRUE(pairs_file) << dir << "/pairs.pt";
  std::vector<char> bytes((std::istreambuf_iterator<char>(pairs_file)), std::istreambuf_iterator<char>());
  c10::IValue loaded = torch::jit::pickle_load(bytes);
  std::vector<at::Tensor> tensors;
  for (const c10::IValue& item : loaded.toListRef()) {
    tensors.push_back(item.toTensor());
  }
  std::ifstream expected_file(std::string(dir) + "/expected.json");
  ASSERT_TRUE(expected_file);
  // Python's json module spells infinity "Infinity", which strict JSON parsers refuse.
  std::string text((std::istreambuf_iterator<char>(expected_file)), std::istreambuf_iterator<char>());
  for (size_t at = text.find("Infinity"); at != std::string::npos; at = text.find("Infinity", at)) {
    text.replace(at, 8, "null");
  }
  nlohmann::json expected = nlohmann::json::parse(text);
  const auto& cases = expected.at("cases");
  ASSERT_GE(cases.size(), 200u);
  int failing = 0;
  for (const auto& item : cases) {
    const size_t pair = item.at("pair").get<size_t>();
    const at::Tensor& reference = tensors.at(2 * pair);
    const at::Tensor& target = tensors.at(2 * pair + 1);
    CompareOptions options;
    options.same_dtype_promised = false;
    if (item.at("tolerance").is_null()) {
      options.tolerance_per_dtype = true;
    } else {
      options.tolerance =
          Tolerance{item.at("tolerance").at("atol").get<double>(), item.at("tolerance").at("rtol").get<double>()};
    }
    std::vector<LeafComparison> leaves = compare_outputs(reference, target, options);
    ASSERT_EQ(leaves.size(), 1u);
    const LeafComparison& leaf = leaves.front();
    const std::string where = item.at("name").get<std::string>() + " at atol " +
                              std::to_string(item.at("atol").get<double>()) + ", rtol " +
                              std::to_string(item.at("rtol").get<double>());
    ASSERT_TRUE(leaf.stats) << where;
    EXPECT_EQ(leaf.tolerance.atol, item.at("atol").get<double>()) << where;
    EXPECT_EQ(leaf.tolerance.rtol, item.at("rtol").get<double>()) << where;
    const bool passed = item.at("passed").get<bool>();
    failing += passed ? 0 : 1;
    EXPECT_EQ(leaf.status == CheckStatus::k_pass, passed) << where << ": " << leaf.message;
    EXPECT_EQ(leaf.stats->mismatches, item.at("mismatches").get<int64_t>()) << where;
    EXPECT_EQ(leaf.stats->min_atol, json_number(item.at("min_atol"))) << where;
    EXPECT_EQ(leaf.stats->min_rtol, json_number(item.at("min_rtol"))) << where;
    if (!passed) {
      MismatchDetail detail;
      compute_tier1_stats(reference, target, leaf.tolerance, nullptr, &detail);
      EXPECT_EQ(detail.abs, item.at("greatest_abs").get<double>()) << where;
      EXPECT_NE(leaf.message.find("Mismatched elements: " + std::to_string(leaf.stats->mismatches) + " / "),
                std::string::npos)
          << leaf.message;
    }
  }
  // Both verdicts must be exercised, or agreement would prove little.
  EXPECT_GE(failing, 20);
  EXPECT_GE(static_cast<int>(cases.size()) - failing, 20);
}

}  // namespace
}  // namespace driftgate

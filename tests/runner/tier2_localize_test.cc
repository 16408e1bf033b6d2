// Tier 2 localization: a deliberately perturbed weight is named first, for a
// runtime-only target and for a graph-rewriting one; a clean model raises no alarm.
#include "runner/tier2_localize.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>

#include "core/error.h"
#include "runner/backend.h"
#include "tests/support/temp_dir.h"
#include "tier2_models.h"

namespace driftgate {
namespace {

const BackendSpec& builtin(const std::string& name) {
  const auto& all = builtin_backends();
  auto it = std::find_if(all.begin(), all.end(), [&](const BackendSpec& spec) { return spec.name == name; });
  if (it == all.end()) {
    throw std::runtime_error("no built-in backend " + name);
  }
  return *it;
}

class Tier2LocalizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    at::set_num_threads(1);
    m_clean = testing::save_tier2_model(m_dir.path(), "clean.pt");
    m_perturbed = testing::save_tier2_model(m_dir.path(), "perturbed.pt", "block2.conv.weight", 1.05);
    m_input = at::randn({1, 3, 12, 12}, at::TensorOptions().dtype(at::kFloat).requires_grad(false));
  }

  LocalizeRequest request(const std::string& target, bool perturbed) const {
    LocalizeRequest request;
    request.reference = builtin("cpu_fp32");
    request.oracle = builtin("cpu_fp64");
    request.target = builtin(target);
    request.source = BackendSource{"tier2_test.yaml", m_clean, 1};
    request.target_model_path = perturbed ? m_perturbed : "";
    request.options.tolerance = Tolerance{1e-4, 1e-4, ToleranceRule::k_assert_close};
    return request;
  }

  test::TempDir m_dir;
  std::string m_clean;
  std::string m_perturbed;
  at::Tensor m_input;
};

// The name without its " (file:line)" suffix (models built from C++ strings say "<string>").
std::string bare(const std::string& name) { return name.substr(0, name.find(" (")); }

const Tier2Layer& layer(const Localization& localization, const std::string& name) {
  auto it = std::find_if(localization.profile.begin(), localization.profile.end(),
                         [&](const Tier2Layer& layer) { return bare(layer.name) == name; });
  if (it == localization.profile.end()) {
    throw std::runtime_error("no layer " + name);
  }
  return *it;
}

TEST_F(Tier2LocalizeTest, PerturbedWeightIsNamedFirstForARuntimeOnlyTarget) {
  Localization result = localize_request(request("onednn_off", true), m_input);
  EXPECT_EQ(result.alignment, "position");
  EXPECT_EQ(result.coverage, 1.0);
  EXPECT_EQ(bare(result.first_divergent), "block2.conv/aten::conv2d#1");
  EXPECT_EQ(bare(result.highest_rank), "block2.conv/aten::conv2d#1");
  EXPECT_EQ(result.reinjection, "confirmed");
  // Upstream of the perturbation nothing diverges, and the later layers only carry it.
  EXPECT_EQ(layer(result, "block1/aten::add_#1").status, LayerStatus::k_ok);
  EXPECT_EQ(layer(result, "head/aten::linear#1").status, LayerStatus::k_divergent);
  EXPECT_LT(layer(result, "block2.relu/aten::relu_#1").rank, layer(result, "block2.conv/aten::conv2d#1").rank);
  EXPECT_GT(result.peak_rss_kib, 0);
}

TEST_F(Tier2LocalizeTest, PerturbedWeightIsNamedFirstForAGraphRewritingTarget) {
  Localization result = localize_request(request("frozen", true), m_input);
  EXPECT_EQ(result.alignment, "boundary");
  EXPECT_EQ(bare(result.first_divergent), "block2.conv/aten::conv2d#1");
  EXPECT_EQ(result.reinjection, "confirmed");
  // freeze folds block1's batch norm into its conv: the conv's own output no longer
  // exists and is reported as not observable, never as divergent; the folded conv
  // computes what the batch norm did, so that value is compared.
  EXPECT_EQ(layer(result, "block1.conv/aten::conv2d#1").status, LayerStatus::k_not_observable);
  EXPECT_EQ(layer(result, "block1.bn/aten::batch_norm#1").status, LayerStatus::k_ok);
  EXPECT_GT(result.not_observable, 0);
  EXPECT_LT(result.coverage, 1.0);
  EXPECT_EQ(result.observed + result.not_observable, result.layers);
}

TEST_F(Tier2LocalizeTest, AWeightFoldedByTheRewriteIsNamedAtItsGroupsOutput) {
  // block1's conv is folded with its batch norm by freeze: the conv's own output does
  // not exist in the target, so the first divergent layer is the batch norm's output
  // (what the folded conv computes), the perturbed conv is named among the
  // not-observable layers feeding it, and re-running the folded conv alone on the
  // reference's input to it reproduces the divergence.
  LocalizeRequest folded = request("frozen", false);
  folded.target_model_path = testing::save_tier2_model(m_dir.path(), "bn_folded.pt", "block1.conv.weight", 1.05);
  Localization result = localize_request(folded, m_input);
  EXPECT_EQ(bare(result.first_divergent), "block1.bn/aten::batch_norm#1");
  ASSERT_EQ(result.fused_before.size(), 1u);
  EXPECT_EQ(bare(result.fused_before[0]), "block1.conv/aten::conv2d#1");
  EXPECT_EQ(result.reinjection, "confirmed");
  EXPECT_EQ(layer(result, "stem.relu/aten::relu_#1").status, LayerStatus::k_ok);
}

TEST_F(Tier2LocalizeTest, CleanModelRaisesNoAlarm) {
  for (const char* target : {"onednn_off", "channels_last", "threads_2", "frozen", "frozen_exact", "optimized"}) {
    Localization result = localize_request(request(target, false), m_input);
    EXPECT_EQ(result.first_divergent, "") << target << ": " << describe_localization(result);
    EXPECT_EQ(result.reinjection, "not_run") << target;
    EXPECT_GT(result.observed, 0) << target;
  }
}

TEST_F(Tier2LocalizeTest, WindowedComparisonGivesTheSameProfile) {
  LocalizeRequest whole = request("onednn_off", true);
  LocalizeRequest windowed = whole;
  windowed.options.budget_bytes = 1;  // one layer per window
  Localization a = localize_request(whole, m_input);
  Localization b = localize_request(windowed, m_input);
  ASSERT_EQ(a.profile.size(), b.profile.size());
  for (size_t i = 0; i < a.profile.size(); ++i) {
    EXPECT_EQ(a.profile[i].delta, b.profile[i].delta) << a.profile[i].name;
    EXPECT_EQ(a.profile[i].noise_floor, b.profile[i].noise_floor) << a.profile[i].name;
  }
}

TEST_F(Tier2LocalizeTest, IsolatedRunReturnsTheSameLocalization) {
  Localization in_process = localize_request(request("frozen", true), m_input);
  Localization isolated = localize_isolated(request("frozen", true), m_input, 120.0);
  EXPECT_EQ(isolated.first_divergent, in_process.first_divergent);
  EXPECT_EQ(isolated.observed, in_process.observed);
  EXPECT_EQ(isolated.reinjection, in_process.reinjection);
}

TEST_F(Tier2LocalizeTest, MissingTargetModelIsAnError) {
  LocalizeRequest bad = request("onednn_off", false);
  bad.target_model_path = m_dir / "missing.pt";
  EXPECT_THROW(localize_request(bad, m_input), Error);
  EXPECT_THROW(localize_isolated(bad, m_input, 120.0), Error);
}

// A scripted model's control flow (tests/runner/tier2_models.h): an `if` on an attribute, an
// `if` on the input, a loop over a module call. Its values are compared like any others.
class Tier2ControlFlowTest : public Tier2LocalizeTest {
 protected:
  void SetUp() override {
    Tier2LocalizeTest::SetUp();
    m_clean = testing::save_control_flow_model(m_dir.path(), "cf.pt");
    // A positive input: the stem's relu keeps it positive, and the model takes `up`.
    m_input = at::rand({1, 3, 12, 12}, at::TensorOptions().dtype(at::kFloat));
  }

  std::string model(const std::string& file, const testing::ControlFlowModel& options) {
    return testing::save_control_flow_model(m_dir.path(), file, options);
  }
};

size_t rows_named(const Localization& localization, const std::string& prefix) {
  return static_cast<size_t>(std::count_if(localization.profile.begin(), localization.profile.end(),
                                           [&](const Tier2Layer& layer) { return layer.name.rfind(prefix, 0) == 0; }));
}

TEST_F(Tier2ControlFlowTest, TheWholeForwardIsProfiledThroughIfsAndLoops) {
  Localization result = localize_request(request("onednn_off", false), m_input);
  EXPECT_EQ(result.status, LocalizationStatus::k_within_thresholds) << describe_localization(result);
  EXPECT_EQ(result.not_captured, "");
  // Every layer up to the head, one row per loop iteration, only the branch taken.
  EXPECT_EQ(bare(result.profile.back().name), "head/aten::linear#1");
  EXPECT_EQ(rows_named(result, "step.conv/aten::conv2d#"), 3U);
  EXPECT_EQ(rows_named(result, "up/") + rows_named(result, "down/"), 1U);
  EXPECT_EQ(result.observed, result.layers);
  // Module calls: stem, stem.conv, stem.relu, block, its conv, bn, relu, the branch's conv,
  // step and its conv and relu three times each, head.
  EXPECT_EQ(result.calls, 18);
  EXPECT_EQ(result.calls_compared, 18);
  EXPECT_EQ(result.coverage, 1.0);
}

TEST_F(Tier2ControlFlowTest, APerturbedWeightInsideTheBranchOrTheLoopIsNamed) {
  LocalizeRequest branch = request("onednn_off", false);
  branch.target_model_path = model("up.pt", {"up.weight", 1.05});
  Localization result = localize_request(branch, m_input);
  EXPECT_EQ(bare(result.first_divergent), "up/aten::conv2d#1");
  EXPECT_NE(result.first_divergent.find("[then@"), std::string::npos) << result.first_divergent;
  EXPECT_EQ(result.reinjection, "confirmed");
  // Inside the loop: the first iteration is where it starts.
  for (const char* target : {"onednn_off", "frozen"}) {
    LocalizeRequest loop = request(target, false);
    loop.target_model_path = model(std::string(target) + "_step.pt", {"step.conv.weight", 1.05});
    Localization looped = localize_request(loop, m_input);
    EXPECT_EQ(bare(looped.first_divergent), "step.conv/aten::conv2d#1")
        << target << ": " << describe_localization(looped);
    EXPECT_NE(looped.first_divergent.find("[loop@"), std::string::npos) << looped.first_divergent;
  }
}

// freeze folds `if self.residual` and unrolls the loop (a constant trip count): the reference's
// runs still pair with the frozen graph's nodes, iteration by iteration.
TEST_F(Tier2ControlFlowTest, AFrozenGraphPairsTheUnrolledLoopIterationByIteration) {
  Localization result = localize_request(request("frozen", false), m_input);
  EXPECT_EQ(result.alignment, "boundary");
  EXPECT_EQ(result.status, LocalizationStatus::k_within_thresholds) << describe_localization(result);
  for (const char* name : {"step.relu/aten::relu_#1", "step.relu/aten::relu_#2", "step.relu/aten::relu_#3",
                           "aten::add_#1", "head/aten::linear#1"}) {
    EXPECT_EQ(layer(result, name).status, LayerStatus::k_ok) << name;
  }
  for (const Tier2Layer& row : result.profile) {
    if (row.status == LayerStatus::k_not_observable) {
      EXPECT_EQ(row.reason, k_reason_fused) << row.name;
    }
  }
}

// The target takes the other branch (the same weights in both, so the output agrees): the
// reference's branch did not run there. The profile is partial and says so, never "no
// divergent layer" alone.
TEST_F(Tier2ControlFlowTest, ABranchTheTargetDidNotTakeMakesThePartialProfile) {
  testing::ControlFlowModel same;
  same.same_branches = true;
  LocalizeRequest other = request("onednn_off", false);
  other.source.model_path = model("same.pt", same);
  same.threshold = 1e9;
  other.target_model_path = model("down.pt", same);
  Localization result = localize_request(other, m_input);
  EXPECT_EQ(result.first_divergent, "") << describe_localization(result);
  EXPECT_EQ(result.status, LocalizationStatus::k_partial);
  EXPECT_EQ(bare(result.not_captured.substr(result.not_captured.find("from ") + 5)), "up/aten::conv2d#1")
      << result.not_captured;
  EXPECT_NE(result.not_captured.find("not run on the target"), std::string::npos) << result.not_captured;
  EXPECT_EQ(layer(result, "up/aten::conv2d#1").status, LayerStatus::k_not_observable);
  EXPECT_LT(result.calls_compared, result.calls);
  const std::string said = describe_localization(result);
  EXPECT_EQ(said.rfind("no divergent layer among the compared ones, but the partial profile: ", 0), 0U) << said;
}

// An AOTInductor package's profile points to the target that fails the same input the same
// way and whose tier 2 named a layer; a target that fails otherwise, or names none, is no lead.
TEST(Tier2PackageLeads, APackagesNoteNamesTheTargetThatFailsTheSameWay) {
  auto record = [](const std::string& target, double max_abs, const std::string& first, const std::string& alignment) {
    CheckRecord check;
    check.id = "e/x/cpu_fp32~" + target + "/out";
    check.target = target;
    check.output = "out";
    check.stats = Tier1Stats{};
    check.stats->max_abs = max_abs;
    check.localization = Localization{};
    check.localization->alignment = alignment;
    check.localization->first_divergent = first;
    check.localization->note = "an AOTInductor package exposes its outputs only";
    return check;
  };
  std::vector<std::vector<CheckRecord>> grid{
      {record("aoti", 0.357, "", "package_outputs")},
      {record("threads_2", 0.357, "", "position")},                     // names no layer
      {record("onednn_off", 0.9, "conv1/aten::conv2d#1", "position")},  // fails otherwise
      {record("channels_last", 0.35, "layer4.0.downsample.0/aten::conv2d#1", "position")},
      {record("aoti_2", 2.0, "", "package_outputs")}};
  add_package_leads(grid);
  const std::string& note = grid[0][0].localization->note;
  EXPECT_NE(note.find("; channels_last fails this input the same way (max |a-b| 0.35 there, 0.357 here) and tier 2 "
                      "names its first divergent layer: layer4.0.downsample.0/aten::conv2d#1 (driftgate explain "
                      "'e/x/cpu_fp32~channels_last/out')"),
            std::string::npos)
      << note;
  EXPECT_EQ(grid[4][0].localization->note, "an AOTInductor package exposes its outputs only");
  EXPECT_EQ(grid[3][0].localization->note, "an AOTInductor package exposes its outputs only");
}

}  // namespace
}  // namespace driftgate

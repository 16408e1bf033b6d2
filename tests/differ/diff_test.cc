#include "differ/diff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include "core/error.h"
#include "differ/gate_policy.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::make_check;
using test::make_environment;
using test::make_run;

const std::string k_sha = "0123456789abcdef0123456789abcdef01234567";

// Every check of `result` as (class, id) in report order: the entries, with the quiet
// unchanged checks (named, not listed) in the unchanged class by id.
std::vector<std::pair<DiffClass, std::string>> classes_of(const DiffResult& result) {
  std::vector<std::pair<DiffClass, std::string>> all;
  for (const auto& check : result.checks) {
    all.emplace_back(check.diff_class, check.id);
  }
  for (size_t i = 0; i < result.quiet.size(); ++i) {
    all.emplace_back(DiffClass::k_unchanged, std::string(result.quiet.id(i)));
  }
  std::stable_sort(all.begin(), all.end());
  return all;
}

bool is_quiet(const DiffResult& result, const std::string& id) {
  for (size_t i = 0; i < result.quiet.size(); ++i) {
    if (result.quiet.id(i) == id) {
      return true;
    }
  }
  return false;
}

std::string id_of(const std::string& input, const std::string& experiment = "exp") {
  return make_check_id(experiment, input, "cpu_fp32", "onednn_off", "out");
}

struct Expected {
  std::string input;
  DiffClass diff_class;
};

// One check per rule; baseline state -> run state.
class DiffClassesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    using S = CheckStatus;
    std::vector<CheckRecord> before = {
        make_check("a_pass_to_fail", S::k_pass, 1e-6),
        make_check("b_pass_to_error", S::k_pass, 1e-6),
        make_check("c_fail_to_error", S::k_fail_numeric, 0.5),
        make_check("d_fail_to_pass", S::k_fail_numeric, 0.5),
        make_check("e_error_to_pass", S::k_crash_target, std::nullopt),
        make_check("f_drift_x20", S::k_pass, 1e-6),
        make_check("g_drift_x9", S::k_pass, 1e-6),
        make_check("h_zero_to_below_floor", S::k_pass, 0.0),
        make_check("i_zero_to_above_floor", S::k_pass, 0.0),
        make_check("j_only_in_baseline", S::k_pass, 0.0),
        make_check("l_pass_to_skipped", S::k_pass, 0.0),
        make_check("m_fail_to_other_fail", S::k_fail_numeric, 0.5),
        make_check("n_error_to_error", S::k_crash_target, std::nullopt),
        make_check("o_skipped_to_fail", S::k_skipped, std::nullopt),
        make_check("p_drift_while_failing", S::k_fail_numeric, 1e-6),
        make_check("r_failing_x9", S::k_fail_numeric, 0.1),
        make_check("s_failing_x20_to_other_fail", S::k_fail_task, 0.1),
        make_check("t_failing_to_no_stats", S::k_fail_numeric, 0.1),
    };
    std::vector<CheckRecord> after = {
        make_check("a_pass_to_fail", S::k_fail_numeric, 0.1, "2 of 10 elements"),
        make_check("b_pass_to_error", S::k_crash_target, std::nullopt, "RuntimeError: boom"),
        make_check("c_fail_to_error", S::k_crash_target, std::nullopt, "RuntimeError: boom"),
        make_check("d_fail_to_pass", S::k_pass, 1e-7),
        make_check("e_error_to_pass", S::k_pass, 1e-7),
        make_check("f_drift_x20", S::k_pass, 2e-5),
        make_check("g_drift_x9", S::k_pass, 9e-6),
        make_check("h_zero_to_below_floor", S::k_pass, 1e-13),
        make_check("i_zero_to_above_floor", S::k_pass, 1e-9),
        make_check("k_only_in_run", S::k_pass, 0.0),
        make_check("l_pass_to_skipped", S::k_skipped, std::nullopt, "no CUDA device"),
        make_check("m_fail_to_other_fail", S::k_fail_shape, std::nullopt),
        make_check("n_error_to_error", S::k_crash_target, std::nullopt),
        make_check("o_skipped_to_fail", S::k_fail_numeric, 0.5),
        make_check("p_drift_while_failing", S::k_fail_numeric, 1.0),
        make_check("q_new_and_failing", S::k_fail_numeric, 0.5),
        make_check("r_failing_x9", S::k_fail_numeric, 0.9),
        make_check("s_failing_x20_to_other_fail", S::k_fail_numeric, 2.0),
        make_check("t_failing_to_no_stats", S::k_fail_shape, std::nullopt),
        make_check("u_new_and_crashing", S::k_crash_target, std::nullopt, "RuntimeError: boom"),
        make_check("v_new_and_skipped", S::k_skipped, std::nullopt, "no CUDA device"),
    };
    baseline = make_run(k_sha, make_environment(), before);
    run = make_run(k_sha, make_environment(), after);
  }

  RunFile baseline;
  RunFile run;
};

TEST_F(DiffClassesTest, EveryCheckGetsExactlyTheExpectedClassInSeverityOrder) {
  DiffResult result = diff_runs(run, baseline);
  std::vector<Expected> expected = {
      {"a_pass_to_fail", DiffClass::k_regressed},
      {"b_pass_to_error", DiffClass::k_regressed},
      {"o_skipped_to_fail", DiffClass::k_regressed},
      {"c_fail_to_error", DiffClass::k_crashed},
      {"j_only_in_baseline", DiffClass::k_missing},
      {"p_drift_while_failing", DiffClass::k_failure_grew},
      {"s_failing_x20_to_other_fail", DiffClass::k_failure_grew},
      {"q_new_and_failing", DiffClass::k_new_failure},
      {"u_new_and_crashing", DiffClass::k_new_failure},
      {"f_drift_x20", DiffClass::k_drift_grew},
      {"i_zero_to_above_floor", DiffClass::k_drift_grew},
      {"k_only_in_run", DiffClass::k_new},
      {"v_new_and_skipped", DiffClass::k_new},
      {"d_fail_to_pass", DiffClass::k_fixed},
      {"e_error_to_pass", DiffClass::k_fixed},
      {"g_drift_x9", DiffClass::k_unchanged},
      {"h_zero_to_below_floor", DiffClass::k_unchanged},
      {"l_pass_to_skipped", DiffClass::k_unchanged},
      {"m_fail_to_other_fail", DiffClass::k_unchanged},
      {"n_error_to_error", DiffClass::k_unchanged},
      {"r_failing_x9", DiffClass::k_unchanged},
      {"t_failing_to_no_stats", DiffClass::k_unchanged},
  };
  std::vector<std::pair<DiffClass, std::string>> all = classes_of(result);
  ASSERT_EQ(all.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(all[i].second, id_of(expected[i].input)) << i;
    EXPECT_EQ(to_string(all[i].first), std::string(to_string(expected[i].diff_class))) << expected[i].input;
  }
  // Unchanged checks with a note (a status change) keep an entry; the others are only named.
  EXPECT_EQ(result.quiet.size(), 4U);  // g, h, n, r
  EXPECT_TRUE(is_quiet(result, id_of("g_drift_x9")));
  EXPECT_FALSE(is_quiet(result, id_of("l_pass_to_skipped")));
  EXPECT_EQ(result.quiet.experiment(0), "exp");
  EXPECT_EQ(result.count(DiffClass::k_regressed), 3);
  EXPECT_EQ(result.count(DiffClass::k_crashed), 1);
  EXPECT_EQ(result.count(DiffClass::k_missing), 1);
  EXPECT_EQ(result.count(DiffClass::k_failure_grew), 2);
  EXPECT_EQ(result.count(DiffClass::k_new_failure), 2);
  EXPECT_EQ(result.count(DiffClass::k_drift_grew), 2);
  EXPECT_EQ(result.count(DiffClass::k_new), 2);
  EXPECT_EQ(result.count(DiffClass::k_fixed), 2);
  EXPECT_EQ(result.count(DiffClass::k_unchanged), 7);
  EXPECT_EQ(result.counts.size(), all_diff_classes().size());
}

TEST_F(DiffClassesTest, EntriesCarryStatusesMaxAbsMessagesAndStatusNotes) {
  DiffResult result = diff_runs(run, baseline);
  auto find = [&](const std::string& input) -> const CheckDiff& {
    for (const auto& check : result.checks) {
      if (check.id == id_of(input)) {
        return check;
      }
    }
    throw std::runtime_error("no check " + input);
  };
  const CheckDiff& regressed = find("a_pass_to_fail");
  EXPECT_EQ(regressed.status_before, CheckStatus::k_pass);
  EXPECT_EQ(regressed.status_after, CheckStatus::k_fail_numeric);
  EXPECT_EQ(regressed.max_abs_before, 1e-6);
  EXPECT_EQ(regressed.max_abs_after, 0.1);
  EXPECT_EQ(regressed.message, "2 of 10 elements");
  EXPECT_TRUE(regressed.notes.empty());
  EXPECT_EQ(regressed.experiment, "exp");

  const CheckDiff& missing = find("j_only_in_baseline");
  EXPECT_EQ(missing.status_before, CheckStatus::k_pass);
  EXPECT_FALSE(missing.status_after.has_value());
  EXPECT_FALSE(missing.max_abs_after.has_value());

  const CheckDiff& added = find("k_only_in_run");
  EXPECT_FALSE(added.status_before.has_value());
  EXPECT_EQ(added.status_after, CheckStatus::k_pass);

  const CheckDiff& crashed = find("c_fail_to_error");
  EXPECT_FALSE(crashed.max_abs_after.has_value());
  EXPECT_EQ(crashed.message, "RuntimeError: boom");

  EXPECT_EQ(find("l_pass_to_skipped").notes, std::vector<std::string>{"status changed (pass -> skipped)"});
  EXPECT_EQ(find("m_fail_to_other_fail").notes,
            std::vector<std::string>{"status changed (fail_numeric -> fail_shape)"});
  EXPECT_TRUE(is_quiet(result, id_of("n_error_to_error")));  // nothing to note: no entry
  EXPECT_EQ(result.environment_changes, "");
  EXPECT_TRUE(result.experiment_changes.empty());
}

TEST_F(DiffClassesTest, TheDriftFactorIsAnOption) {
  DiffOptions options;
  options.drift_factor = 30.0;
  DiffResult result = diff_runs(run, baseline, options);
  EXPECT_EQ(result.count(DiffClass::k_drift_grew), 1);    // only 0 -> 1e-9 remains
  EXPECT_EQ(result.count(DiffClass::k_failure_grew), 1);  // 1e-6 -> 1.0; the x20 failure is not over x30
  options.drift_factor = 5.0;
  EXPECT_EQ(diff_runs(run, baseline, options).count(DiffClass::k_drift_grew), 3);    // x9 joins
  EXPECT_EQ(diff_runs(run, baseline, options).count(DiffClass::k_failure_grew), 3);  // the failing x9 too
}

TEST_F(DiffClassesTest, TheDefaultGateFailsOnRegressedCrashedMissingGrownAndNewFailures) {
  GatePolicy policy;
  DiffResult result = diff_runs(run, baseline);
  EXPECT_EQ(gated_classes_present(result, policy),
            (std::vector<DiffClass>{DiffClass::k_regressed, DiffClass::k_crashed, DiffClass::k_missing,
                                    DiffClass::k_failure_grew, DiffClass::k_new_failure}));
  EXPECT_EQ(gate_exit_code(result, policy), ExitCode::k_gated);
}

TEST(Diff, OnlyUngatedClassesPassTheGate) {
  using S = CheckStatus;
  RunFile baseline = make_run(k_sha, make_environment(),
                              {make_check("fixed", S::k_fail_numeric, 0.5), make_check("drift", S::k_pass, 1e-8)});
  RunFile run = make_run(
      k_sha, make_environment(),
      {make_check("fixed", S::k_pass, 1e-8), make_check("drift", S::k_pass, 1e-3), make_check("new", S::k_pass, 1e-8)});
  DiffResult result = diff_runs(run, baseline);
  EXPECT_EQ(result.count(DiffClass::k_fixed), 1);
  EXPECT_EQ(result.count(DiffClass::k_drift_grew), 1);
  EXPECT_EQ(result.count(DiffClass::k_new), 1);
  EXPECT_EQ(gate_exit_code(result, GatePolicy{}), ExitCode::k_ok);
  GatePolicy strict;
  strict.gated.insert(DiffClass::k_drift_grew);
  EXPECT_EQ(gate_exit_code(result, strict), ExitCode::k_gated);
  EXPECT_EQ(gated_classes_present(result, strict), std::vector<DiffClass>{DiffClass::k_drift_grew});
}

TEST(Diff, ATaskAnswerThatMovesWithoutAStatusChangeIsTaskChanged) {
  using S = CheckStatus;
  auto task_check = [](const std::string& input, double agreement, double mean_iou) {
    CheckRecord check = make_check(input, S::k_pass, std::nullopt);
    check.task =
        TaskResult{"detection", "anchors+nms=stable", {{"matched_fraction", agreement}, {"mean_iou", mean_iou}}, {}};
    return check;
  };
  RunFile baseline =
      make_run(k_sha, make_environment(), {task_check("moved", 1.0, 0.99), task_check("drifted", 1.0, 0.99)});
  RunFile run =
      make_run(k_sha, make_environment(), {task_check("moved", 0.98, 0.99), task_check("drifted", 1.0, 0.97)});
  DiffResult result = diff_runs(run, baseline);
  EXPECT_EQ(result.count(DiffClass::k_task_changed), 1);  // mean IoU alone is drift, not a changed answer
  EXPECT_EQ(result.count(DiffClass::k_unchanged), 1);
  EXPECT_EQ(gate_exit_code(result, GatePolicy{}), ExitCode::k_ok);  // reported, not gated by default
  EXPECT_EQ(to_label(DiffClass::k_task_changed), "task changed");
}

TEST(Diff, AMissingCheckAloneFailsTheGate) {
  RunFile baseline = make_run(k_sha, make_environment(),
                              {make_check("kept", CheckStatus::k_pass), make_check("gone", CheckStatus::k_pass)});
  RunFile run = make_run(k_sha, make_environment(), {make_check("kept", CheckStatus::k_pass)});
  DiffResult result = diff_runs(run, baseline);
  EXPECT_EQ(result.count(DiffClass::k_missing), 1);
  EXPECT_EQ(gate_exit_code(result, GatePolicy{}), ExitCode::k_gated);
  EXPECT_EQ(gate_exit_code(diff_runs(run, run), GatePolicy{}), ExitCode::k_ok);
}

TEST(Diff, AChangedModelIsNotedOnEveryCheckOfItsExperiment) {
  using S = CheckStatus;
  std::vector<CheckRecord> before = {make_check("x", S::k_pass, 1e-7), make_check("y", S::k_pass, 1e-7),
                                     make_check("x", S::k_pass, 1e-7, "", "other")};
  std::vector<CheckRecord> after = {make_check("x", S::k_fail_numeric, 0.5), make_check("y", S::k_pass, 1e-7),
                                    make_check("x", S::k_pass, 1e-7, "", "other")};
  RunFile baseline = make_run(k_sha, make_environment(), before, "abc1234000000000000000000000000000000000",
                              "cccccccccccccccccccccccccccccccccccccccc");
  RunFile run = make_run(k_sha, make_environment(), after, "def5678000000000000000000000000000000000",
                         "cccccccccccccccccccccccccccccccccccccccc");
  // The second experiment keeps its model: give the baseline's header entry the run's hash.
  baseline.header.experiments[1].model_hash = run.header.experiments[1].model_hash;
  // And the first one's config changed too.
  run.header.experiments[0].config_hash = "ddddddd000000000000000000000000000000000";

  DiffResult result = diff_runs(run, baseline);
  ASSERT_EQ(result.experiment_changes.size(), 2u);
  EXPECT_EQ(result.experiment_changes[0].experiment, "exp");
  EXPECT_EQ(result.experiment_changes[0].note(), "config changed (ccccccc -> ddddddd)");
  EXPECT_EQ(result.experiment_changes[1].note(), "model changed (abc1234 -> def5678)");
  std::vector<std::string> both = {"config changed (ccccccc -> ddddddd)", "model changed (abc1234 -> def5678)"};
  for (const auto& check : result.checks) {
    if (check.experiment == "exp") {
      EXPECT_EQ(check.notes, both) << check.id;
    } else {
      EXPECT_TRUE(check.notes.empty()) << check.id;
    }
  }
  EXPECT_EQ(result.count(DiffClass::k_regressed), 1);
}

// "config changed" says what the run records of the config that differs: here a tightened tolerance
// and a dropped target.
TEST(Diff, AChangedConfigNamesTheSettingsThatDiffer) {
  using S = CheckStatus;
  RunFile baseline = make_run(k_sha, make_environment(), {make_check("x", S::k_pass, 1e-7)});
  RunFile run = make_run(k_sha, make_environment(), {make_check("x", S::k_fail_numeric, 1e-7)});
  run.header.experiments[0].config_hash = "c45b903000000000000000000000000000000000";
  baseline.header.experiments[0].config_hash = "54c723f000000000000000000000000000000000";
  baseline.header.experiments[0].tolerance = Tolerance{1e-5, 1.3e-6, ToleranceRule::k_assert_close};
  run.header.experiments[0].tolerance = Tolerance{1e-8, 1.3e-6, ToleranceRule::k_assert_close};
  baseline.header.experiments[0].targets = {"onednn_off", "cpu_bf16"};
  run.header.experiments[0].targets = {"onednn_off"};
  baseline.header.experiments[0].inputs = {"x", "y"};  // the run has input x only
  DiffResult result = diff_runs(run, baseline);
  ASSERT_EQ(result.experiment_changes.size(), 1u);
  EXPECT_EQ(result.experiment_changes[0].details,
            "tolerance atol 1e-05 -> 1e-08; targets [onednn_off, cpu_bf16] -> "
            "[onednn_off]; inputs [x, y] -> [x]");
  EXPECT_EQ(result.experiment_changes[0].note(),
            "config changed (54c723f -> c45b903: tolerance atol 1e-05 -> 1e-08; targets [onednn_off, cpu_bf16] -> "
            "[onednn_off]; inputs [x, y] -> [x])");
  ASSERT_EQ(result.checks.size(), 1u);
  EXPECT_EQ(result.checks[0].notes, std::vector<std::string>{result.experiment_changes[0].note()});
}

TEST(Diff, EnvironmentChangesAreDescribed) {
  RunFile baseline = make_run(k_sha, make_environment("1"), {make_check("x", CheckStatus::k_pass)});
  RunFile run = make_run(k_sha, make_environment("4"), {make_check("x", CheckStatus::k_pass)});
  EXPECT_EQ(diff_runs(run, baseline).environment_changes, "threads 1 -> 4");
}

TEST(Diff, ClassNames) {
  EXPECT_STREQ(to_string(DiffClass::k_drift_grew), "drift_grew");
  EXPECT_EQ(to_label(DiffClass::k_drift_grew), "drift grew");
  EXPECT_EQ(parse_diff_class("crashed"), DiffClass::k_crashed);
  try {
    parse_diff_class("regresed");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "unknown diff class 'regresed'; known classes: regressed, crashed, missing, failure_grew, "
                 "new_failure, drift_grew, task_changed, new, fixed, unchanged");
  }
}

}  // namespace
}  // namespace driftgate

namespace driftgate {
namespace {

// The merge in id order must give what matching by hash and sorting by (class, id)
// gave: every check once, with the class compare() gives it. A reference built the
// plain way, on random runs with shared, new and missing checks in shuffled order.
TEST(Diff, MergeInIdOrderAgreesWithHashAndSortOnRandomRuns) {
  using S = CheckStatus;
  const S statuses[] = {S::k_pass, S::k_fail_numeric, S::k_crash_target, S::k_skipped};
  std::mt19937 random(7);
  for (int round = 0; round < 10; ++round) {
    std::vector<CheckRecord> before;
    std::vector<CheckRecord> after;
    for (int i = 0; i < 400; ++i) {
      std::string input = "img" + std::to_string(random() % 1000) + (random() % 2 == 0 ? "" : "_b");
      auto check = [&] {
        S status = statuses[random() % 4];
        std::optional<double> max_abs;
        if (status == S::k_pass || status == S::k_fail_numeric) {
          max_abs = std::ldexp(1.0, -static_cast<int>(random() % 30));
        }
        return make_check(input, status, max_abs, status == S::k_pass ? "" : "m" + std::to_string(i));
      };
      int where = static_cast<int>(random() % 4);  // both, both, run only, baseline only
      auto has = [&](const std::vector<CheckRecord>& checks) {
        return std::any_of(checks.begin(), checks.end(), [&](const CheckRecord& c) { return c.input == input; });
      };
      if (where != 3 && !has(after)) {
        after.push_back(check());
      }
      if (where != 2 && !has(before)) {
        before.push_back(check());
      }
    }
    std::shuffle(before.begin(), before.end(), random);
    std::shuffle(after.begin(), after.end(), random);
    RunFile baseline = make_run(k_sha, make_environment(), before);
    RunFile run = make_run(k_sha, make_environment(), after);
    DiffResult result = diff_runs(run, baseline);

    std::map<std::string, const CheckRecord*> was;
    for (const auto& check : before) {
      was[check.id] = &check;
    }
    std::vector<std::pair<DiffClass, std::string>> expected;
    for (const auto& check : after) {
      auto it = was.find(check.id);
      if (it == was.end()) {
        expected.emplace_back(is_failure(check.status) ? DiffClass::k_new_failure : DiffClass::k_new, check.id);
        continue;
      }
      RunFile one_before = make_run(k_sha, make_environment(), {*it->second});
      RunFile one_after = make_run(k_sha, make_environment(), {check});
      expected.emplace_back(classes_of(diff_runs(one_after, one_before)).at(0).first, check.id);
      was.erase(it);
    }
    for (const auto& [id, check] : was) {
      expected.emplace_back(DiffClass::k_missing, id);
    }
    std::sort(expected.begin(), expected.end());
    EXPECT_TRUE(std::is_sorted(result.checks.begin(), result.checks.end(),
                               [](const CheckDiff& a, const CheckDiff& b) {
                                 return std::tie(a.diff_class, a.id) < std::tie(b.diff_class, b.id);
                               }))
        << "entries in (class, id) order, round " << round;
    std::vector<std::pair<DiffClass, std::string>> all = classes_of(result);
    ASSERT_EQ(all.size(), expected.size()) << "round " << round;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(all[i].first, expected[i].first) << "round " << round << " at " << i;
      ASSERT_EQ(all[i].second, expected[i].second) << "round " << round << " at " << i;
    }
    int64_t total = 0;
    for (DiffClass diff_class : all_diff_classes()) {
      total += result.count(diff_class);
    }
    EXPECT_EQ(total, static_cast<int64_t>(expected.size()));
  }
}

}  // namespace
}  // namespace driftgate

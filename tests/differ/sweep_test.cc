#include "differ/sweep.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/error.h"

namespace driftgate {
namespace {

CheckRecord check(const std::string& target, const std::string& input, CheckStatus status, double min_atol,
                  double max_abs, double min_rtol) {
  CheckRecord record;
  record.experiment = "m";
  record.input = input;
  record.reference = "cpu_fp32";
  record.target = target;
  record.output = "out";
  record.id = make_check_id(record.experiment, input, record.reference, target, record.output);
  record.status = status;
  record.tolerance = Tolerance{1e-5, 1e-4, ToleranceRule::k_assert_close};
  if (status == CheckStatus::k_pass || status == CheckStatus::k_fail_numeric) {
    Tier1Stats stats;
    stats.min_atol = min_atol;
    stats.max_abs = max_abs;
    stats.min_rtol = min_rtol;
    record.stats = stats;
  }
  return record;
}

RunFile sample() {
  RunFile run;
  run.checks = {check("frozen", "a", CheckStatus::k_pass, 0.0, 2e-6, 0.0),
                check("frozen", "b", CheckStatus::k_fail_numeric, 3e-5, 5e-5, 2e-3),
                check("bf16", "a", CheckStatus::k_fail_numeric, 2e-2, 3e-2, 0.5),
                check("bf16", "b", CheckStatus::k_crash_target, 0, 0, 0),
                check("cuda", "a", CheckStatus::k_skipped, 0, 0, 0)};
  return run;
}

TEST(Sweep, PassRatesFromRecordedMinimumTolerances) {
  SweepTable table = sweep_run(sample(), SweepRequest{{1e-6, 1e-5, 1e-4, 1e-1}, std::nullopt});
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].target, "frozen");
  EXPECT_EQ(table.rows[0].checks, 2);
  EXPECT_EQ(table.rows[0].passing, (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(table.rows[1].target, "bf16");
  EXPECT_EQ(table.rows[1].passing, (std::vector<int64_t>{0, 0, 0, 1}));  // the crash never passes
  EXPECT_EQ(table.skipped, 1);
  std::ostringstream text;
  render_sweep_text(text, table);
  EXPECT_NE(text.str().find("frozen       2  50.0% (1/2)  50.0% (1/2)  100.0% (2/2)  100.0% (2/2)"), std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("1 skipped check(s) are not counted"), std::string::npos);
}

// A task check has no atol: counted among numeric checks it would fail at every atol and cap the
// curve (a classification suite topped out at 50% even at atol 1). It gets its own pass rate.
TEST(Sweep, TaskChecksAreCountedApartFromTheAtolColumns) {
  RunFile run;
  run.checks = {check("bf16", "a", CheckStatus::k_pass, 2e-5, 2e-5, 0.0),
                check("bf16", "b", CheckStatus::k_fail_numeric, 3e-4, 3e-4, 0.0)};
  CheckRecord task = check("bf16", "a", CheckStatus::k_pass, 0, 0, 0);
  task.output = "task:classification";
  task.task = TaskResult{"classification", "top1+top5", {{"top1_agreement", 1.0}}, {}};
  CheckRecord failed_task = task;
  failed_task.input = "b";
  failed_task.status = CheckStatus::k_fail_task;
  CheckRecord output_only = task;  // recognised by its output name alone too
  output_only.input = "c";
  output_only.task.reset();
  run.checks.push_back(task);
  run.checks.push_back(failed_task);
  run.checks.push_back(output_only);
  SweepTable table = sweep_run(run, SweepRequest{{1e-4, 1.0}, std::nullopt});
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_EQ(table.rows[0].checks, 2);
  EXPECT_EQ(table.rows[0].passing, (std::vector<int64_t>{1, 2}));  // 100% at atol 1, not 50%
  ASSERT_EQ(table.task_rows.size(), 1u);
  EXPECT_EQ(table.task_rows[0].target, "bf16");
  EXPECT_EQ(table.task_rows[0].checks, 3);
  EXPECT_EQ(table.task_rows[0].passing, 2);
  std::ostringstream text;
  render_sweep_text(text, table);
  EXPECT_NE(text.str().find("bf16         2  50.0% (1/2)  100.0% (2/2)\n"
                            "task checks (tier 3), judged by their task tolerances at every atol:\n"
                            "target  checks         pass\n"
                            "bf16         3  66.7% (2/3)\n"),
            std::string::npos)
      << text.str();
}

TEST(Sweep, RtolZeroUsesTheLargestDifference) {
  SweepTable table = sweep_run(sample(), SweepRequest{{1e-6, 4e-5, 5e-5}, 0.0});
  EXPECT_EQ(table.rows[0].passing, (std::vector<int64_t>{0, 1, 2}));
}

TEST(Sweep, OtherRtolAnsweredByMonotonicityOrRefused) {
  // Larger rtol than recorded: min_atol at the recorded rtol still suffices.
  RunFile frozen_only = sample();
  frozen_only.checks.resize(2);
  SweepTable larger = sweep_run(frozen_only, SweepRequest{{3e-5}, 1e-3});
  EXPECT_EQ(larger.rows[0].passing, (std::vector<int64_t>{2}));
  // At or above min_rtol with the recorded atol: passes.
  SweepTable at_min_rtol = sweep_run(sample(), SweepRequest{{1e-5}, 0.5});
  EXPECT_EQ(at_min_rtol.rows[1].passing, (std::vector<int64_t>{1}));
  // Smaller rtol than recorded with an atol below min_atol: fails for sure.
  SweepTable smaller = sweep_run(frozen_only, SweepRequest{{2e-5}, 5e-5});
  EXPECT_EQ(smaller.rows[0].passing, (std::vector<int64_t>{1}));
  try {
    sweep_run(sample(), SweepRequest{{2e-5}, 1e-3});
    FAIL() << "an undecidable verdict was guessed";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("check 'm/b/cpu_fp32~frozen/out' was recorded at rtol 0.0001", 0), 0u)
        << e.what();
  }
}

TEST(Sweep, ToleranceListsAreStrict) {
  EXPECT_EQ(parse_tolerance_list("1e-6,1e-5,0", "--atol"), (std::vector<double>{1e-6, 1e-5, 0.0}));
  for (const char* bad : {"", "1e-6,", "x", "-1", "inf", "1e-3 "}) {
    EXPECT_THROW(parse_tolerance_list(bad, "--atol"), Error) << bad;
  }
  try {
    parse_tolerance_list("1e-3,x", "--atol");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--atol '1e-3,x': 'x' is not a non-negative number; give a comma-separated list such as "
              "1e-6,1e-5,1e-4,1e-3");
  }
}

}  // namespace
}  // namespace driftgate

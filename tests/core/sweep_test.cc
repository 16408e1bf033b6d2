#include "core/sweep.h"

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

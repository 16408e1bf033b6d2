// The progress line: counts, the estimate, and what a terminal and a log each receive.
#include "runner/progress.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>

namespace driftgate {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

// A clock that advances by 10 s at each reading after the first.
Progress::Clock ticking() {
  auto now = std::make_shared<steady_clock::time_point>();
  return [now]() {
    steady_clock::time_point value = *now;
    *now += seconds(10);
    return value;
  };
}

TEST(Progress, LogGetsOneLinePerStepWithElapsedAndEstimate) {
  std::ostringstream out;
  {
    Progress progress(out, /*terminal=*/false, 4, ticking());
    progress.step("exp in ref");
    progress.line("[exp] in ref~t: 1 pass");
    progress.step("exp in t");
    progress.skip(1);
    progress.step("exp in u");
  }
  // Readings: start 0, then 10, 20, 30 s; after 1 of 4 steps in 10 s: 30 s left; after 2 in
  // 20 s: 20 s left; the last step has no estimate. skip() counts without printing.
  EXPECT_EQ(out.str(),
            "[1/4] exp in ref (10 s, about 30 s left)\n"
            "[exp] in ref~t: 1 pass\n"
            "[2/4] exp in t (20 s, about 20 s left)\n"
            "[4/4] exp in u (30 s)\n");
}

TEST(Progress, TerminalRewritesOneStatusLineAndKeepsResultLinesAbove) {
  std::ostringstream out;
  {
    Progress progress(out, /*terminal=*/true, 2, ticking());
    progress.step("a");
    progress.line("result");
    progress.step("b");
  }
  EXPECT_EQ(out.str(),
            "[1/2] a (10 s, about 10 s left)"
            "\r\x1b[Kresult\n[1/2] a (10 s, about 10 s left)"
            "\r\x1b[K[2/2] b (20 s)"
            "\n");
}

TEST(Progress, NeverCountsPastTheTotal) {
  std::ostringstream out;
  Progress progress(out, false, 1, ticking());
  progress.skip(5);
  progress.step("late");
  EXPECT_EQ(progress.done(), 1);
  EXPECT_EQ(out.str(), "[1/1] late (10 s)\n");
}

TEST(Progress, DurationsReadAsNinjaWouldPrintThem) {
  EXPECT_EQ(format_duration(0.4), "0 s");
  EXPECT_EQ(format_duration(59.4), "59 s");
  EXPECT_EQ(format_duration(65), "1 min 05 s");
  EXPECT_EQ(format_duration(3725), "1 h 02 min");
  EXPECT_EQ(format_duration(-3), "0 s");
}

}  // namespace
}  // namespace driftgate

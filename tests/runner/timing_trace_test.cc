#include "runner/timing_trace.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

namespace driftgate {
namespace {

const std::regex k_line(R"(trace: [^\n]*: \d+\.\d ms wall, \d+\.\d ms CPU\n)");

TEST(TimingTrace, DisabledWritesNothing) {
  TimingTrace trace;
  EXPECT_FALSE(trace.enabled());
  { TimingTrace::Phase phase(trace, "load"); }
  trace.print_startup();
  trace.print("anything", 1.0, 1.0);
}

TEST(TimingTrace, APhasePrintsOneLineWhenItEnds) {
  std::ostringstream out;
  TimingTrace trace(out);
  ASSERT_TRUE(trace.enabled());
  {
    TimingTrace::Phase phase(trace, "resnet18.yaml: child: frozen: load");
    EXPECT_EQ(out.str(), "");  // nothing until it ends
  }
  EXPECT_TRUE(std::regex_match(out.str(), k_line)) << out.str();
  EXPECT_EQ(out.str().rfind("trace: resnet18.yaml: child: frozen: load: ", 0), 0u) << out.str();
}

TEST(TimingTrace, EndPrintsOnceAndTheDestructorNotAgain) {
  std::ostringstream out;
  TimingTrace trace(out);
  {
    TimingTrace::Phase phase(trace, "write run file");
    phase.end();
    phase.end();
  }
  EXPECT_TRUE(std::regex_match(out.str(), k_line)) << out.str();
}

TEST(TimingTrace, CpuTimeCountsWork) {
  std::ostringstream out;
  TimingTrace trace(out);
  const double before = process_cpu_ms();
  volatile double sink = 0.0;
  // Busy work until the process clock has moved: CPU time is what the line reports.
  while (process_cpu_ms() - before < 5.0) {
    for (int i = 0; i < 10000; ++i) {
      sink = sink + i * 0.5;
    }
  }
  EXPECT_GE(process_cpu_ms() - before, 5.0);
  EXPECT_GE(monotonic_ms(), 0.0);
}

TEST(TimingTrace, StartupAndPrintFormat) {
  std::ostringstream out;
  TimingTrace trace(out);
  trace.print("environment probe", 1.5, 0.25);
  EXPECT_EQ(out.str(), "trace: environment probe: 1.5 ms wall, 0.2 ms CPU\n");
  out.str("");
  trace.print_startup();
  EXPECT_TRUE(std::regex_match(out.str(), k_line)) << out.str();
  EXPECT_EQ(out.str().rfind("trace: process start to command: ", 0), 0u) << out.str();
}

}  // namespace
}  // namespace driftgate

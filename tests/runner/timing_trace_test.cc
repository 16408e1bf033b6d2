#include "runner/timing_trace.h"

#include <gtest/gtest.h>

#include <cctype>
#include <sstream>
#include <string>

namespace driftgate {
namespace {

// Digits, a point and one digit at `at` (e.g. "12.5"); moves `at` past them.
bool read_millis(const std::string& text, size_t& at) {
  const size_t start = at;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) != 0) {
    ++at;
  }
  if (at == start || at + 2 > text.size() || text[at] != '.' ||
      std::isdigit(static_cast<unsigned char>(text[at + 1])) == 0) {
    return false;
  }
  at += 2;
  return true;
}

// Exactly one line "trace: <phase>: <wall> ms wall, <cpu> ms CPU\n". (Plain string
// search: std::regex trips GCC 12's -Wmaybe-uninitialized in the sanitizer build.)
bool is_trace_line(const std::string& text) {
  if (text.rfind("trace: ", 0) != 0 || text.find('\n') != text.size() - 1) {
    return false;
  }
  size_t at = text.rfind(": ");
  if (at < 6) {
    return false;
  }
  at += 2;
  const std::string wall = " ms wall, ";
  const std::string cpu = " ms CPU\n";
  if (!read_millis(text, at) || text.compare(at, wall.size(), wall) != 0) {
    return false;
  }
  at += wall.size();
  return read_millis(text, at) && text.compare(at, std::string::npos, cpu) == 0;
}

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
  EXPECT_TRUE(is_trace_line(out.str())) << out.str();
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
  EXPECT_TRUE(is_trace_line(out.str())) << out.str();
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
  EXPECT_TRUE(is_trace_line(out.str())) << out.str();
  EXPECT_EQ(out.str().rfind("trace: process start to command: ", 0), 0u) << out.str();
}

}  // namespace
}  // namespace driftgate

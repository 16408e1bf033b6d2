#include "runner/timing_trace.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>

namespace driftgate {
namespace {

double clock_ms(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// The process's start time in milliseconds on CLOCK_BOOTTIME's scale, from
// /proc/self/stat field 22 (clock ticks since boot); negative when unreadable.
double process_start_boottime_ms() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string::npos) {
    return -1.0;
  }
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index == 22) {
      return std::stod(field) * 1e3 / static_cast<double>(::sysconf(_SC_CLK_TCK));
    }
  }
  return -1.0;
}

}  // namespace

double process_cpu_ms() { return clock_ms(CLOCK_PROCESS_CPUTIME_ID); }

double monotonic_ms() { return clock_ms(CLOCK_MONOTONIC); }

TimingTrace::Phase::Phase(const TimingTrace& trace, std::string name)
    : m_trace(trace.enabled() ? &trace : nullptr), m_name(std::move(name)) {
  if (m_trace != nullptr) {
    m_wall_start_ms = monotonic_ms();
    m_cpu_start_ms = process_cpu_ms();
  }
}

void TimingTrace::Phase::end() {
  if (m_trace == nullptr) {
    return;
  }
  m_trace->print(m_name, monotonic_ms() - m_wall_start_ms, process_cpu_ms() - m_cpu_start_ms);
  m_trace = nullptr;
}

void TimingTrace::print_startup() const {
  if (!enabled()) {
    return;
  }
  const double start = process_start_boottime_ms();
  const double wall = start < 0.0 ? 0.0 : clock_ms(CLOCK_BOOTTIME) - start;
  print("process start to command", wall, process_cpu_ms());
}

void TimingTrace::print(const std::string& name, double wall_ms, double cpu_ms) const {
  if (!enabled()) {
    return;
  }
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, ": %.1f ms wall, %.1f ms CPU\n", wall_ms, cpu_ms);
  // One write per line: a forked child writes to the same stream.
  const std::string line = "trace: " + name + numbers;
  m_out->write(line.data(), static_cast<std::streamsize>(line.size()));
  m_out->flush();
}

}  // namespace driftgate

// The progress of `driftgate run`, as ninja shows a build's: one step per backend and input
// whose forwards finished, "[n/N] experiment input backend", the time elapsed and an estimate
// of the time left. On a terminal the status is one line rewritten in place, and the
// runner's result lines print above it; elsewhere (CI logs, pipes) every step is a line of its
// own. -q turns it off with the rest of the progress output. Torch-free.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace driftgate {

class Progress {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // `total`: the steps the run plans (backends x inputs over every experiment). `terminal`:
  // rewrite one status line in place (the stream is a TTY). `clock` is for tests.
  Progress(std::ostream& out, bool terminal, int64_t total, Clock clock = std::chrono::steady_clock::now);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // Ends the status line on a terminal.
  ~Progress();

  // One more step done: `label` is "experiment input backend".
  void step(const std::string& label);
  // Steps that will not run (a target skipped on inputs the reference failed on): counted
  // as done so the count reaches its total.
  void skip(int64_t steps);
  // A result line, printed above the status line.
  void line(const std::string& text);
  int64_t done() const { return m_done; }

 private:
  std::string status(const std::string& label) const;
  void clear_status();

  std::ostream& m_out;
  bool m_terminal;
  int64_t m_total;
  int64_t m_done = 0;
  Clock m_clock;
  std::chrono::steady_clock::time_point m_start;
  std::string m_shown;  // the status line on the terminal now, "" when none
};

// "12 s", "3 min 05 s", "1 h 02 min".
std::string format_duration(double seconds);

}  // namespace driftgate

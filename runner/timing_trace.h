// Opt-in phase timing for `driftgate run --trace-timing`: where a run's time goes.
//
// It exists to measure the runner's overhead over plain forward passes phase by
// phase (bench/runner_overhead.py compares the two sides). Each finished phase
// prints one line, wall and CPU time of the whole process (all its threads):
//   trace: resnet18: child: load frozen: 812.3 ms wall, 805.1 ms CPU
// Isolated runs fork: the child inherits the trace and writes its own lines
// (flushed one by one, so nothing is lost when the child exits). Disabled (no
// stream) a phase costs a branch. Torch-free: app/cmd_run.cc includes it.
#pragma once

#include <iosfwd>
#include <string>

namespace driftgate {

class TimingTrace {
 public:
  TimingTrace() = default;  // disabled: writes nothing
  explicit TimingTrace(std::ostream& out) : m_out(&out) {}

  bool enabled() const { return m_out != nullptr; }

  // A phase that ends, and prints its line, when it is destroyed or end() is called.
  class Phase {
   public:
    Phase(const TimingTrace& trace, std::string name);
    ~Phase() { end(); }
    Phase(const Phase&) = delete;
    Phase& operator=(const Phase&) = delete;
    void end();

   private:
    const TimingTrace* m_trace;
    std::string m_name;
    double m_wall_start_ms = 0.0;
    double m_cpu_start_ms = 0.0;
  };

  // The time from the start of the process (the kernel's start time: 10 ms
  // resolution) to now, and its CPU time so far: dynamic loading, static
  // initializers and option parsing.
  void print_startup() const;

  // Prints "trace: NAME: W ms wall, C ms CPU".
  void print(const std::string& name, double wall_ms, double cpu_ms) const;

 private:
  std::ostream* m_out = nullptr;
};

// CPU time of the whole process (every thread) in milliseconds.
double process_cpu_ms();
// A monotonic clock in milliseconds.
double monotonic_ms();

}  // namespace driftgate

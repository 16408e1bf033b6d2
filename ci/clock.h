// Time as the retry logic sees it: "now" for rate-limit reset epochs and a sleep
// for back-off and mutation spacing. Behind an interface so tests never sleep:
// their fake advances on sleep_for and records every wait.
#pragma once

#include <chrono>

namespace driftgate {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::system_clock::time_point now() = 0;
  virtual void sleep_for(std::chrono::milliseconds duration) = 0;
};

// The wall clock and std::this_thread::sleep_for.
class SystemClock : public Clock {
 public:
  std::chrono::system_clock::time_point now() override;
  void sleep_for(std::chrono::milliseconds duration) override;
};

}  // namespace driftgate

#include "ci/clock.h"

#include <thread>

namespace driftgate {

std::chrono::system_clock::time_point SystemClock::now() { return std::chrono::system_clock::now(); }

void SystemClock::sleep_for(std::chrono::milliseconds duration) { std::this_thread::sleep_for(duration); }

}  // namespace driftgate

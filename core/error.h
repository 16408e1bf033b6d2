// The one error type that crosses driftgate's library boundaries.
//
// Library code throws driftgate::Error for anything the user can fix: a bad
// config, an unreadable file, a missing baseline store, an environment that
// cannot run a backend. The message says where, what, and what to try. main()
// catches it once and maps it to exit code 2 (see exit_code.h).
#pragma once

#include <stdexcept>
#include <string>

namespace driftgate {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace driftgate

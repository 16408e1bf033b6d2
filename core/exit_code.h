// The published exit-code contract of every driftgate subcommand.
//
//   0  nothing that the gate policy fails on
//   1  drift or regression found (the gate fails)
//   2  usage, input or environment error (nothing was compared, nothing written)
#pragma once

namespace driftgate {

enum class ExitCode : int {
  k_ok = 0,
  k_gated = 1,
  k_error = 2,
};

inline int to_int(ExitCode code) { return static_cast<int>(code); }

}  // namespace driftgate

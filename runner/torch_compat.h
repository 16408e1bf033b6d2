// The LibTorch API differences between the two supported lines, Debian 12's LibTorch 1.13 and
// Debian 13's 2.6 (tools/debian13.sh), in one place: the runner calls these and never tests
// TORCH_VERSION itself.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

// LibTorch 2.4 made CPU autocast one case of the per-device calls and deprecated
// at::autocast::{is_cpu_enabled,set_cpu_enabled,get_autocast_cpu_dtype,set_autocast_cpu_dtype}
// (each use also logs a warning at run time).
#define DRIFTGATE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace driftgate::torch_compat {

inline bool cpu_autocast_enabled() {
#if DRIFTGATE_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(at::kCPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}

inline void set_cpu_autocast_enabled(bool enabled) {
#if DRIFTGATE_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(at::kCPU, enabled);
#else
  at::autocast::set_cpu_enabled(enabled);
#endif
}

inline at::ScalarType cpu_autocast_dtype() {
#if DRIFTGATE_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(at::kCPU);
#else
  return at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void set_cpu_autocast_dtype(at::ScalarType dtype) {
#if DRIFTGATE_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(at::kCPU, dtype);
#else
  at::autocast::set_autocast_cpu_dtype(dtype);
#endif
}

}  // namespace driftgate::torch_compat

// The LibTorch API differences between the two supported lines, Debian 12's LibTorch 1.13 and
// Debian 13's 2.6 (tools/debian13.sh), in one place: the runner calls these and never tests
// TORCH_VERSION itself.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/ScalarType.h>
#include <torch/version.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

// LibTorch 2.4 made CPU autocast one case of the per-device calls and deprecated
// at::autocast::{is_cpu_enabled,set_cpu_enabled,get_autocast_cpu_dtype,set_autocast_cpu_dtype}
// (each use also logs a warning at run time).
#define DRIFTGATE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// LibTorch 2.6 ships AOTInductor's package loader (torch::inductor::AOTIModelPackageLoader);
// 1.13 has no AOTInductor at all.
#define DRIFTGATE_TORCH_HAS_AOTI DRIFTGATE_TORCH_AT_LEAST(2, 6)
#if DRIFTGATE_TORCH_HAS_AOTI
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif

namespace driftgate::torch_compat {

// torch.testing.assert_close of LibTorch 1.13's Python promotes both tensors to float64 before
// torch.isclose; 2.x's compares them in their common dtype (runner/isclose_arithmetic.h
// computes as each does).
constexpr bool k_assert_close_in_float64 = !DRIFTGATE_TORCH_AT_LEAST(2, 0);

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

// An AOTInductor package (.pt2) as LibTorch loads it: its flat inputs in, flat outputs out, and
// its call spec (torch.utils._pytree TreeSpecs as JSON: [inputs, outputs]). On a LibTorch
// without AOTInductor, constructing one throws (the runner skips aoti backends there first).
class AotiLoader {
 public:
  static constexpr bool k_available = DRIFTGATE_TORCH_HAS_AOTI;

  explicit AotiLoader(const std::string& path) {
#if DRIFTGATE_TORCH_HAS_AOTI
    m_loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(path);
#else
    throw std::runtime_error("AOTInductor packages need LibTorch 2.6 or newer; cannot load '" + path + "'");
#endif
  }

  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) {
#if DRIFTGATE_TORCH_HAS_AOTI
    return m_loader->run(inputs);
#else
    (void)inputs;
    return {};
#endif
  }

  std::vector<std::string> call_spec() {
#if DRIFTGATE_TORCH_HAS_AOTI
    return m_loader->get_call_spec();
#else
    return {};
#endif
  }

 private:
#if DRIFTGATE_TORCH_HAS_AOTI
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> m_loader;
#endif
};

}  // namespace driftgate::torch_compat

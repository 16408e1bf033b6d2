// PyTorch's tolerance conventions, torch-free, so the runner, `sweep` and the tests
// agree on them without LibTorch.
//
// It exists because "the tolerance" is not one number: torch.testing.assert_close
// picks (rtol, atol) per dtype when none are given (torch/testing/_comparison.py,
// _DTYPE_PRECISIONS, the loosest of both sides), and PyTorch's same() judges a
// low-precision target against a float64 oracle with a multiplier that depends on
// the target's dtype. driftgate applies exactly these values and records them.
#pragma once

#include <string>

#include "core/record.h"

namespace driftgate {

// assert_close's defaults for comparing a `target_dtype` output with a
// `reference_dtype` one ("float32", "bfloat16", ...): the largest atol and rtol of
// the two dtypes; 0/0 (exact) for dtypes without an entry (integers, bool).
//   float16 atol 1e-5 rtol 1e-3   bfloat16 atol 1e-5 rtol 1.6e-2
//   float32 atol 1e-5 rtol 1.3e-6 float64  atol 1e-7 rtol 1e-7
Tolerance assert_close_defaults(const std::string& reference_dtype, const std::string& target_dtype);

// The k of the oracle rule (PyTorch same()): 3 for float16/bfloat16 targets, 2 otherwise.
double oracle_multiplier(const std::string& target_dtype);

// A target whose error against the oracle is this many times the reference's is
// flagged by the oracle rule even when atol/10 would absorb it.
inline constexpr double k_oracle_flag_ratio = 10.0;

}  // namespace driftgate

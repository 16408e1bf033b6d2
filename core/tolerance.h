// Tolerance: how a target's output is judged against the reference's, and with which
// values. The types, PyTorch's conventions, the YAML that sets them (an experiment's
// `tolerance:` and `tolerances:`) and the resolution of one check's values, in one place;
// how a record writes one is core/check_line.h's (append_tolerance_json).
//
// It exists because "the tolerance" is not one number: torch.testing.assert_close
// picks (rtol, atol) per dtype when none are given (torch/testing/_comparison.py,
// _DTYPE_PRECISIONS, the loosest of both sides), PyTorch's same() judges a
// low-precision target against a float64 oracle with a multiplier that depends on
// the target's dtype, and a config may set other values per target, output or dtype.
// driftgate applies exactly the resolved values and records them, each with where it
// came from (ccache's "(environment) max_size = 5G"). Torch-free: the runner, `sweep`
// and the tests agree on it without LibTorch.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace driftgate {

struct BackendSpec;
struct Experiment;
class YamlReader;

// How a target's output is judged against the reference's (YAML `tolerance: {rule: ...}`).
enum class ToleranceRule {
  k_assert_close,  // PyTorch's torch.testing.assert_close: every element |a-b| <= atol + rtol*|b|
  k_polygraphy,    // Polygraphy's elementwise rule: an element fails when |a-b| > atol AND |a-b|/|b| > rtol
  k_normwise,      // the paper's Eq. 1: max|a-b| <= atol + rtol * max|b| over the whole tensor
  k_oracle,        // PyTorch same(): target RMSE vs float64 <= k * reference RMSE vs float64 + atol/10
};

const char* to_string(ToleranceRule rule);
// Throws driftgate::Error on an unknown name.
ToleranceRule parse_tolerance_rule(const std::string& name);
// Every rule, in declaration order (for messages and did-you-mean).
const std::vector<std::string>& tolerance_rule_names();

// The tolerance a check was judged with: the values actually applied, never a placeholder.
struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
  ToleranceRule rule = ToleranceRule::k_assert_close;
  // The oracle rule's k (its multiplier of the reference's error); 0 for the other rules
  // (and in records written before k was recorded).
  double k = 0.0;
  // Where the values came from: one place ("configs/x.yaml:9:12", "default",
  // "assert_close defaults for float32/bfloat16"), or per value when they differ
  // ("rule configs/x.yaml:9:12; atol/rtol configs/x.yaml:14:7; k default"). Empty in an
  // experiment's own tolerance (its origin is Experiment::tolerance_origin) and in older records.
  std::string origin{};
};

// One entry of `tolerances:`, which sets the tolerance of some checks apart from the
// experiment's `tolerance:`. It selects by target, output and the target's dtype (any
// of them; at least one), and sets any of rule, atol/rtol (together) and k.
struct ToleranceOverride {
  std::string target;  // a target's name; empty: every target
  std::string output;  // an fnmatch glob over output paths ("out", "out['boxes']"); empty: every output
  std::string dtype;   // the target backend's dtype ("bfloat16"); empty: every dtype
  std::optional<ToleranceRule> rule;
  std::optional<double> atol;  // atol and rtol come together
  std::optional<double> rtol;
  std::optional<double> k;  // the oracle rule's k
  std::string origin;       // "configs/x.yaml:14:7"
};

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

// ---- an experiment's tolerances (core/experiment.h) ----

// Reads `tolerance: {rule, atol, rtol, k}` into the experiment (its tolerance, origin and
// tolerance_per_dtype: without atol/rtol each check uses its dtypes' defaults).
void parse_tolerance(const YamlReader& reader, const YAML::Node& tolerance, Experiment& experiment);
// Reads `tolerances: [{target, output, dtype, rule, atol, rtol, k}, ...]`: each entry
// selects checks (at least one of target, output, dtype) of the experiment's targets,
// which are read before, and sets some values for them.
void parse_tolerance_overrides(const YamlReader& reader, const YAML::Node& list, Experiment& experiment);

// The tolerance a check of `target` against the experiment's reference is configured
// with before any output is seen: resolve_tolerance with the two backends' dtypes and
// no output (entries that select an output do not apply). A compared check records the
// tolerance of its output and of the dtypes its outputs really had.
Tolerance configured_tolerance(const Experiment& experiment, const BackendSpec& target);

// The tolerance one check is judged with, each value with its origin (Tolerance::origin):
// the experiment's `tolerance:` (or assert_close's defaults for the two observed dtypes
// when it sets no atol/rtol), then the `tolerances:` entries that match `target`,
// `output` (empty: no output, entries with an output glob do not apply) and the
// target's dtype, least specific first; the oracle rule's k defaults
// to oracle_multiplier(observed target dtype). k is 0 unless the rule is oracle.
Tolerance resolve_tolerance(const Experiment& experiment, const BackendSpec& target, const std::string& output,
                            const std::string& observed_reference_dtype, const std::string& observed_target_dtype);

}  // namespace driftgate

// The gate policy: which diff classes fail the gate, and the exceptions to it.
//
// A team needs three things beyond the built-in default (regressed, crashed,
// missing, failure_grew and new_failure fail): 1) a different set of gated classes, for the whole suite or for
// one experiment (a bf16 experiment may gate on drift grew, a flaky one may not
// gate on missing); 2) an allowlist for known failures whose entries carry an
// owner, a reason and an expiry date, so that exceptions do not become permanent
// silently (an expired entry stops applying and says so); 3) the origin of every
// value ("policy.yaml:4" or "default"), as ccache prints "(environment)
// max_size = 5G", so a reader of a report can see why a check was or was not gated.
//
// The policy is read from YAML, strictly: unknown keys and class names are
// file:line:col errors with a did-you-mean suggestion.
//
//   gate: [regressed, crashed, missing, failure_grew, new_failure]   # default when absent
//   experiments:
//     resnet18_bf16: {gate: [regressed, crashed, missing, drift_grew]}
//   allow:
//     - check: "resnet18/*/cpu_fp32~cpu_bf16/*"   # fnmatch glob over check ids
//       owner: alice
//       reason: bf16 softmax rounding, tracked in #123
//       expires: 2026-12-31                      # last day the entry applies
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/exit_code.h"
#include "differ/diff.h"

namespace driftgate {

inline constexpr const char* k_default_origin = "default";

// The gated classes of the whole suite or of one experiment, with their origin.
struct GateClasses {
  std::set<DiffClass> classes;
  std::string origin;  // "policy.yaml:4" or "default"
};

// A per-experiment override of the gated classes.
struct ExperimentGate {
  std::string experiment;
  GateClasses gate;
};

// One known failure the gate lets through until `expires` (inclusive).
struct AllowEntry {
  std::string check_glob;  // fnmatch(3) pattern over check ids; '*' also matches '/'
  std::string owner;
  std::string reason;
  std::string expires;   // YYYY-MM-DD
  std::string origin;    // "policy.yaml:12"
  bool expired = false;  // the policy's `today` is after `expires`
  // "allowlist entry 'x/*' (policy.yaml:12, owner alice) expired on 2026-01-31 and no longer applies"
  std::string expiry_note() const;
};

struct GatePolicy {
  // The suite-wide gated classes; experiments without an override use these.
  std::set<DiffClass> gated = {DiffClass::k_regressed, DiffClass::k_crashed, DiffClass::k_missing,
                               DiffClass::k_failure_grew, DiffClass::k_new_failure};
  std::string gated_origin = k_default_origin;
  std::vector<ExperimentGate> experiments;  // in file order
  std::vector<AllowEntry> allow;            // in file order
  std::string source;                       // the policy file; "" for the default policy
  std::string today;                        // YYYY-MM-DD the expiry dates were judged against

  // The gated classes that apply to `experiment` (its override, else the suite's).
  GateClasses gate_for(const std::string& experiment) const;
  // Notes for every expired allowlist entry, in file order.
  std::vector<std::string> expiry_notes() const;
};

// How the policy judged one check.
struct GateDecision {
  bool gated = false;                      // this check fails the gate
  bool class_gated = false;                // its class is gated for its experiment (before the allowlist)
  std::string origin;                      // where the applying gated-class list came from
  const AllowEntry* allowed_by = nullptr;  // the live allowlist entry that let it through
};

// The policy as ccache prints its configuration, one value per line with its origin:
//   "(default) gate: [regressed, crashed, missing, failure_grew, new_failure]"
//   "(policy.yaml:6) experiments.exp2.gate: [regressed, drift_grew]"
//   "(policy.yaml:9) allow: 'exp/*' owner alice until 2026-12-31: flaky bf16"  (" EXPIRED" after the date)
std::vector<std::string> describe_policy(const GatePolicy& policy);

GateDecision decide(const GatePolicy& policy, const CheckDiff& check);

// The classes with at least one gated check in `result`, in severity order.
std::vector<DiffClass> gated_classes_present(const DiffResult& result, const GatePolicy& policy);

// k_gated when any check is gated, k_ok otherwise.
ExitCode gate_exit_code(const DiffResult& result, const GatePolicy& policy);

// Parses a policy document. `name` is used in messages ("policy.yaml:3:5: ...");
// `today` (YYYY-MM-DD) decides which allowlist entries have expired. Throws
// driftgate::Error with file:line:col on any unknown key, class or malformed value.
GatePolicy parse_gate_policy(const std::string& text, const std::string& name, const std::string& today);

// Reads and parses a policy file. Throws driftgate::Error when it cannot be read.
GatePolicy load_gate_policy(const std::string& path, const std::string& today);

// Whether `text` is a valid calendar date YYYY-MM-DD.
bool is_iso_date(const std::string& text);

}  // namespace driftgate

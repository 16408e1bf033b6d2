// The result of `driftgate diff` as one plain object, before any rendering.
//
// Selection and diff each know part of the story (which baseline, why none,
// what changed); the report joins them with the gate verdict so that every
// renderer (markdown for PR comments, report.json for machines) tells the same
// story from the same data and none re-derives the verdict.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/exit_code.h"
#include "core/record.h"
#include "differ/baseline_select.h"
#include "differ/diff.h"
#include "differ/gate_policy.h"
#include "differ/latency.h"

namespace driftgate {

enum class Verdict {
  k_pass,         // compared; no gated class present
  k_fail,         // compared; some gated class present
  k_no_baseline,  // nothing comparable: neutral, exit 0
};

const char* to_string(Verdict verdict);

struct Report {
  Verdict verdict = Verdict::k_no_baseline;
  std::string reason;  // why there is no baseline (k_no_baseline only)

  std::string run_sha;
  std::string run_env_key;

  // The chosen baseline (when compared).
  std::string baseline_sha;
  std::string baseline_env_key;
  int baseline_steps = 0;     // first-parent steps from start_sha
  std::string start_sha;      // merge base or the run's commit
  bool env_mismatch = false;  // compared across environments (--allow-env-mismatch)
  std::string env_changes;    // baseline -> run environment; "" when they match

  std::vector<std::string> notes;  // selection notes (shallow-clone fallback, ...), expired allowlist entries
  GatePolicy policy;
  std::vector<DiffClass> gated_present;  // gated classes found, severity order
  std::optional<DiffResult> diff;        // absent when nothing was compared

  // For a failing diff: the command that takes the run's values for the gated
  // checks into the baseline, and the proposal of what that command would change
  // (differ/baseline_proposal.h), with the command that applies it without the run.
  std::string refresh_command;    // "" when none is proposed
  std::string proposed_baseline;  // path of the proposal file; "" when none was written
  std::string proposal_command;   // "driftgate baseline accept --proposal FILE --reason ..."; "" when none
  size_t proposal_changes = 0;    // check lines the proposal puts in (changed or added)
  size_t proposal_drops = 0;      // checks it drops

  // Each backend's latency per input in the run, with the baseline's where compared
  // (differ/latency.h): shown, never gated.
  std::vector<LatencyRow> latency;
};

// Joins a run, its baseline selection and (when a baseline was found) the diff.
// Expired allowlist entries of `policy` become notes, so every renderer says so.
Report make_report(const RunFile& run, const BaselineSelection& selection, std::optional<DiffResult> diff,
                   const GatePolicy& policy);
Report make_report(const RunHeader& run, const BaselineSelection& selection, std::optional<DiffResult> diff,
                   const GatePolicy& policy);

// The published exit code of a report: 1 for k_fail, 0 otherwise (no baseline is neutral).
ExitCode report_exit_code(const Report& report);

// How the plain-text renderers (text, JUnit) write a value that may be absent:
// "1.23e-05" (%.3g) or "n/a"; a status name or "absent".
std::string format_number(const std::optional<double>& value);
std::string format_status(const std::optional<CheckStatus>& value);

}  // namespace driftgate

#include "differ/report.h"

#include <cstdio>

namespace driftgate {

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::k_pass:
      return "pass";
    case Verdict::k_fail:
      return "fail";
    case Verdict::k_no_baseline:
      return "no_baseline";
  }
  return "unknown";
}

Report make_report(const RunFile& run, const BaselineSelection& selection, std::optional<DiffResult> diff,
                   const GatePolicy& policy) {
  return make_report(run.header, selection, std::move(diff), policy);
}

Report make_report(const RunHeader& run, const BaselineSelection& selection, std::optional<DiffResult> diff,
                   const GatePolicy& policy) {
  Report report;
  report.run_sha = run.commit.sha;
  report.run_env_key = run.environment.key();
  report.notes = selection.notes;
  if (run.commit.dirty) {
    report.notes.push_back("the run was made with uncommitted changes to tracked files on top of " +
                           run.commit.sha.substr(0, 7) + ", so it may not match that commit");
  }
  report.policy = policy;
  for (const auto& note : policy.expiry_notes()) {
    report.notes.push_back(note);
  }
  report.start_sha = selection.start_sha;
  if (!selection.found || !diff) {
    report.verdict = Verdict::k_no_baseline;
    report.reason = selection.found ? "the baseline was found but not compared" : selection.reason;
    return report;
  }
  report.baseline_sha = selection.sha;
  report.baseline_env_key = selection.env_key;
  report.baseline_steps = selection.steps;
  report.env_mismatch = selection.env_mismatch;
  report.env_changes = selection.env_mismatch ? selection.env_changes : diff->environment_changes;
  report.diff = std::move(diff);
  report.gated_present = gated_classes_present(*report.diff, policy);
  report.verdict = report.gated_present.empty() ? Verdict::k_pass : Verdict::k_fail;
  return report;
}

ExitCode report_exit_code(const Report& report) {
  return report.verdict == Verdict::k_fail ? ExitCode::k_gated : ExitCode::k_ok;
}

std::string format_number(const std::optional<double>& value) {
  if (!value) {
    return "n/a";
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", *value);
  return buffer;
}

std::string format_status(const std::optional<CheckStatus>& value) { return value ? to_string(*value) : "absent"; }

}  // namespace driftgate

// Classifying what changed between a run and its baseline, check by check.
//
// Each check id present in either file gets exactly one class, so a report can
// count and list them and a gate policy can decide the exit code:
//   regressed   the baseline did not fail, the run fails (fail_* or error)
//   crashed     the baseline failed with fail_*, the run now errors (a worse failure)
//   missing     in the baseline only: a check silently disappeared
//   failure_grew  both fail (a known failure, e.g. one accepted into the baseline), but max_abs
//               grew by more than the drift factor (and above the floor): an accepted failure
//               does not blind the gate to it getting worse
//   new_failure  in the run only, and failing: a new target or check that never passed
//   drift_grew  both pass, but max_abs grew by more than the drift factor (and above a floor)
//   task_changed  a tier-3 check keeps its status, but the answer moved: an agreement metric
//               (top-1 agreement, flips, matched detections, mAP, pixel agreement, mIoU, ...) differs
//   new         in the run only, and not failing
//   fixed       the baseline failed, the run passes
//   unchanged   anything else (also failing -> failing and pass <-> skipped, with a note)
// Besides the classes, a changed model or config hash of an experiment is attached
// as a note to every check of that experiment, so the cause is visible instead of
// mystery drift. Which classes fail the gate is the gate policy's business (gate_policy.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/exit_code.h"
#include "core/record.h"
#include "differ/run_digest.h"

namespace driftgate {

// In severity order: reports list classes in this order.
enum class DiffClass {
  k_regressed,
  k_crashed,
  k_missing,
  k_failure_grew,
  k_new_failure,
  k_drift_grew,
  k_task_changed,
  k_new,
  k_fixed,
  k_unchanged,
};

const char* to_string(DiffClass diff_class);
// "drift_grew" -> "drift grew": for prose.
std::string to_label(DiffClass diff_class);
// Throws driftgate::Error listing the class names on an unknown name.
DiffClass parse_diff_class(const std::string& name);
// Every class, in severity order.
const std::vector<DiffClass>& all_diff_classes();

struct DiffOptions {
  double drift_factor = 10.0;  // max_abs must grow by more than this factor to count as drift (or a grown failure)
  double drift_floor = 1e-12;  // ... and end above this absolute value (noise around zero is not drift)
  // Name the quiet checks (DiffResult::quiet), as JUnit needs; false: count them only
  // (`diff` without --junit: a million ids copied for nothing).
  bool name_quiet_checks = true;
};

// One experiment whose model or config file changed between baseline and run.
struct ExperimentChange {
  std::string experiment;
  std::string what;    // "model" or "config"
  std::string before;  // full hashes
  std::string after;
  // For a config: the recorded settings that differ, "tolerance atol 1e-05 -> 1e-06; targets
  // [a, b] -> [a]"; "" when none of them does (a comment or an option the run does not record).
  std::string details = {};
  // "model changed (abc1234 -> def5678)", "config changed (abc1234 -> def5678: tolerance atol 1e-05 -> 1e-06)"
  std::string note() const;
};

struct CheckDiff {
  std::string id;
  std::string experiment;
  DiffClass diff_class = DiffClass::k_unchanged;
  std::optional<CheckStatus> status_before;  // absent for new checks
  std::optional<CheckStatus> status_after;   // absent for missing checks
  std::optional<double> max_abs_before;
  std::optional<double> max_abs_after;
  std::string message;             // the run's message (the baseline's for a missing check)
  std::vector<std::string> notes;  // "model changed (...)", "status changed (pass -> skipped)"
  // The run's tier-2 localization, if any; held apart because a report holds a million
  // entries and only a few checks have one.
  std::shared_ptr<const Localization> localization = nullptr;
};

// The unchanged checks that carry no note: most of a large diff, counted and named
// (JUnit lists every check) but kept out of `DiffResult::checks`, whose entries every
// renderer walks. One buffer of ids instead of a million CheckDiff entries.
class QuietChecks {
 public:
  void add(std::string_view id, std::string_view experiment);
  // One more quiet check, counted but not named (DiffOptions::name_quiet_checks false).
  void count_unnamed() { ++m_unnamed; }
  // Room for `count` checks whose ids take `id_bytes` in all.
  void reserve(size_t count, size_t id_bytes);
  size_t size() const { return m_ids.size() + m_unnamed; }
  bool empty() const { return size() == 0; }
  // Whether id() and experiment() name every quiet check (false when some were only counted).
  bool named() const { return m_unnamed == 0; }
  std::string_view id(size_t i) const { return std::string_view(m_text).substr(m_ids[i].first, m_ids[i].second); }
  const std::string& experiment(size_t i) const { return m_experiments[m_experiment_of[i]]; }

 private:
  size_t m_unnamed = 0;
  std::string m_text;                            // the ids, one after the other
  std::vector<std::pair<size_t, size_t>> m_ids;  // (offset, length) in m_text, in id order
  std::vector<std::string> m_experiments;        // distinct experiment names
  std::vector<uint32_t> m_experiment_of;         // index into m_experiments per id
};

struct DiffResult {
  // Every check but the quiet ones: by class severity, then check id. An unchanged
  // check is here when it has a note (status changed, model changed).
  std::vector<CheckDiff> checks;
  QuietChecks quiet;                                 // unchanged checks without a note, by id
  std::map<DiffClass, int64_t> counts;               // every class present, zero included; quiet ones too
  std::vector<ExperimentChange> experiment_changes;  // by experiment, then what
  std::string environment_changes;                   // baseline -> run; "" when the environments match

  int64_t count(DiffClass diff_class) const;
};

// Classifies every check of `run` and `baseline`.
DiffResult diff_runs(const RunDigest& run, const RunDigest& baseline, const DiffOptions& options = {});
DiffResult diff_runs(const RunFile& run, const RunFile& baseline, const DiffOptions& options = {});

}  // namespace driftgate

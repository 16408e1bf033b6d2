// Tolerance sweeps answered from one run file, never by re-running.
//
// It exists because the paper re-ran every model once per tolerance (1e-6 ... 1e-3)
// to draw its pass-rate table. Each check records the smallest atol that would have
// passed at its rtol (min_atol) and its largest |a-b| (max_abs, the smallest atol at
// rtol 0), so the pass/fail of the assert_close rule |a-b| <= atol + rtol*|b| at any
// atol is a lookup. At another rtol the verdict follows from monotonicity where it
// can (the minimum atol never grows as rtol grows); where it cannot, sweep says so
// rather than guess. Task checks (tier 3, output "task:...") are judged by their task
// tolerances, not by atol: they get their own pass rate, never mixed into the curves. Torch-free.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/record.h"

namespace driftgate {

struct SweepRequest {
  std::vector<double> atols;   // columns, in the order given
  std::optional<double> rtol;  // unset: each check's recorded rtol
};

// One target backend's pass counts, one per atol.
struct SweepRow {
  std::string target;
  int64_t checks = 0;            // checks of this target that were not skipped
  std::vector<int64_t> passing;  // per atol
};

// One target backend's task checks (tier 3): how many, how many pass. No atol moves them.
struct TaskRow {
  std::string target;
  int64_t checks = 0;   // task checks of this target that were not skipped
  int64_t passing = 0;  // of them, status pass
};

struct SweepTable {
  SweepRequest request;
  std::vector<SweepRow> rows;      // numeric checks: targets in order of first appearance
  std::vector<TaskRow> task_rows;  // task checks: targets in order of first appearance
  int64_t skipped = 0;             // skipped checks, left out of every rate
};

// A tier-3 task check (output "task:<kind>", or carrying a task result).
bool is_task_check(const CheckRecord& check);

// Throws driftgate::Error naming the check when its verdict at the requested rtol
// cannot be derived from what was recorded.
SweepTable sweep_run(const RunFile& run, const SweepRequest& request);

// The table as aligned text: "target  checks  atol=1e-06 ..." with "100.0% (4/4)" cells, then
// the task checks' own pass rate per target, when there are any.
void render_sweep_text(std::ostream& out, const SweepTable& table);

// "1e-6,1e-5" -> {1e-6, 1e-5}. Throws driftgate::Error on an empty list, a value
// that is not a finite number, or a negative one.
std::vector<double> parse_tolerance_list(const std::string& text, const std::string& option);

}  // namespace driftgate

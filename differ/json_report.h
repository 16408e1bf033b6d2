// report.json: the machine-readable rendering of a diff report.
//
// CI steps after the gate (posting a comment, a dashboard, a bot that files
// issues) read this instead of scraping markdown. Keys come in a fixed order and
// checks in severity-then-id order, so two identical diffs give identical bytes.
//
//   { "schema": 1, "verdict": "pass"|"fail"|"no_baseline", "reason": "...",
//     "exit_code": 0|1,
//     "run": {"sha", "env_key"},
//     "baseline": {"sha", "env_key", "steps", "start_sha"} | null,
//     "env_mismatch": bool, "env_changes": "onednn 2.6.3 -> 3.1",
//     "notes": [...], "gated_classes": [...], "gated_present": [...],
//     "counts": {"regressed": n, ... every class},
//     "experiment_changes": [{"experiment", "what", "before", "after", "note"}],
//     "checks": [{"id", "experiment", "class", "gated", "gate_origin", "allowed_by",
//                 "status_before", "status_after", "max_abs_before", "max_abs_after",
//                 "message", "notes"}],
//     "policy": {"source", "today", "gate", "gate_origin", "experiments": [{"experiment",
//                "gate", "origin"}], "allow": [{"check", "owner", "reason", "expires",
//                "origin", "expired"}], "describe": ["(default) gate: [...]", ...]},
//     "refresh": {"command", "proposed_baseline", "proposal_command", "proposal_changes",
//                 "proposal_drops"} | null }
// Fields are only ever added (a poster reads this file): "gate_origin", "allowed_by",
// "policy" and "refresh" came after the first version. "gated" is the final
// decision per check (class gated for its experiment and no live allowlist entry).
// Absent statuses and max_abs values are null; non-finite max_abs values are the
// strings "nan", "inf", "-inf" as in run files.
#pragma once

#include <string>

#include "differ/report.h"

namespace driftgate {

inline constexpr int k_report_schema_version = 1;

// The report as pretty-printed JSON, ending with a newline.
std::string render_json(const Report& report);

}  // namespace driftgate

// Taking a run's new values for selected checks into a baseline ("accepting").
//
// When a change to a model or a backend moves numbers on purpose, the gate keeps
// failing until the baseline says the new values are right. Refreshing the whole
// baseline from the run would also bless every unrelated change, so acceptance is
// per check: the checks matching the given globs take the run's record (or are
// dropped when the run no longer has them); every other check keeps the old
// baseline's record. Who accepted what, when and why is kept in the store beside
// the baseline (an append-only log of JSON lines), so a reviewer sees it in the PR.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.h"
#include "core/run_digest.h"

namespace driftgate {

// One acceptance, as logged beside the baseline it produced.
struct Acceptance {
  std::string who;     // "Name <email>" from git config, else $USER, else "unknown"
  std::string when;    // ISO 8601 UTC, "2026-11-30T00:10:00Z"
  std::string reason;  // why the new values are right (required, non-empty)
  std::vector<std::string> globs;
  std::string run_sha;                // the commit of the run the values came from
  std::string from_sha;               // the baseline the unselected checks came from
  std::vector<std::string> accepted;  // ids whose record now comes from the run, sorted
  std::vector<std::string> removed;   // ids selected but absent from the run (dropped), sorted

  // One JSON object on one line, keys in a fixed order.
  std::string to_json_line() const;
};

// Parses a line written by to_json_line. Throws driftgate::Error "<where>: <what>".
Acceptance parse_acceptance(const std::string& line, const std::string& where);

struct AcceptOutcome {
  RunFile baseline;  // canonical (sorted) baseline for the run's commit and environment
  std::vector<std::string> accepted;
  std::vector<std::string> removed;
};

// fnmatch(3) without flags: '*' also matches '/'; a backslash quotes the next character.
bool matches_any(std::string_view id, const std::vector<std::string>& globs);

// The new baseline for `run`'s commit: `base`'s checks, with those matching
// `globs` replaced by (or, absent from the run, removed in favour of) the run's.
// The header is the run's (shard 0 of 1), plus experiments only `base` knows.
AcceptOutcome accept_checks(const RunFile& run, const RunFile& base, const std::vector<std::string>& globs);
// write_run's text of accept_checks(run, base, globs).baseline, without copying a
// record: the proposed baseline of a failing diff may hold a million checks.
std::string accepted_baseline_text(const RunFile& run, const RunFile& base, const std::vector<std::string>& globs);
// The same text written to `path` as it is produced (core/atomic_file.h), never held
// in memory whole. Throws driftgate::Error when the file cannot be written.
void write_accepted_baseline(const std::string& path, const RunFile& run, const RunFile& base,
                             const std::vector<std::string>& globs);
// The same from digests (what `driftgate diff` holds): check lines read in canonical
// layout are copied as they were read (for files driftgate wrote, the same bytes; a
// hand-edited number keeps its form, with the same value), the others written from
// their records.
void write_accepted_baseline(const std::string& path, const RunDigest& run, const RunDigest& base,
                             const std::vector<std::string>& globs);

// `id` as a glob that matches exactly it (\\ before * ? [ ] and \\).
std::string glob_escape(const std::string& id);

// `text` as one POSIX shell word: unchanged when only safe characters, else single-quoted.
std::string shell_quote(const std::string& text);

}  // namespace driftgate

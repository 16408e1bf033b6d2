// Taking a run's new values for selected checks into a baseline ("accepting").
//
// When a change to a model or a backend moves numbers on purpose, the gate keeps
// failing until the baseline says the new values are right. Refreshing the whole
// baseline from the run would also bless every unrelated change, so acceptance is
// per check: the checks matching the given globs take the run's record (or are
// dropped when the run no longer has them), unless the old record already holds the
// run's values; every other check keeps the old baseline's record. Who accepted what, when and why is kept in the store
// beside the baseline (an append-only log of JSON lines), so a reviewer sees it in the PR.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.h"
#include "differ/run_digest.h"

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
  RunFile baseline;                   // canonical (sorted) baseline for the run's commit and environment
  std::vector<std::string> accepted;  // matching ids whose record now comes from the run, sorted
  std::vector<std::string> removed;   // matching ids absent from the run, dropped, sorted
  // Matching checks whose baseline record already holds the run's values (the same
  // line up to its timings): kept as they were, so that a refresh changes only what
  // changed and a reviewer is not shown a million new latencies.
  size_t unchanged = 0;
};

// fnmatch(3) without flags: '*' also matches '/'; a backslash quotes the next character.
bool matches_any(std::string_view id, const std::vector<std::string>& globs);

// The new baseline for `run`'s commit: `base`'s checks, with those matching
// `globs` replaced by (or, absent from the run, removed in favour of) the run's,
// unless the base's already holds the run's values.
// The header is the run's (shard 0 of 1), plus experiments only `base` knows.
AcceptOutcome accept_checks(const RunFile& run, const RunFile& base, const std::vector<std::string>& globs);

// What accepting `globs` makes of `base`, as pointers into two digests (what
// accept_checks does on parsed runs and the proposal of a failing diff on the
// digests it holds, differ/baseline_proposal.h). One merge in id order.
struct AcceptedDigests {
  RunHeader header;                          // as accept_checks'
  std::vector<const CheckDigest*> checks;    // the new baseline's checks, in id order
  std::vector<const CheckDigest*> changed;   // run checks taken (replacing or added), in id order
  std::vector<const CheckDigest*> replaced;  // base checks that `changed` replaced, in id order
  std::vector<const CheckDigest*> dropped;   // base checks removed (absent from the run), in id order
  size_t unchanged = 0;                      // as AcceptOutcome's
};
// `with_checks` false: `checks` is left empty (a proposal needs only the changes).
AcceptedDigests accept_digests(const RunDigest& run, const RunDigest& base, const std::vector<std::string>& globs,
                               bool with_checks = true);

// `id` as a glob that matches exactly it (\\ before * ? [ ] and \\).
std::string glob_escape(const std::string& id);

// `text` as one POSIX shell word: unchanged when only safe characters, else single-quoted.
std::string shell_quote(const std::string& text);

}  // namespace driftgate

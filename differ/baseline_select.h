// Choosing the baseline a run is compared with.
//
// A pull request must be judged against what it branched from, not against the
// tip of main nor against a machine with other libraries: the start is the merge
// base of the run's commit and the target branch (or the commit itself when no
// base is known), and the baseline is the nearest first-parent ancestor of the
// start (start included, bounded walk) that has a baseline for the same
// environment key. One exception comes first: a baseline accepted on the branch
// itself (`baseline accept` for the run's commit or a first parent above the
// start, with an acceptance log) is the refresh the user asked for, so it wins,
// with a note. The same holds after the branch is merged: walking first parents, a
// merge commit met before any baseline of its own brings in the newest baseline
// accepted on the branch it merged (its second parent's first parents, down to where
// they meet the first parent), with a note; plain `baseline update` baselines on a
// merged branch do not count, only accepted ones. Finding none is a neutral outcome with a reason;
// comparing across environments happens only when asked (allow_env_mismatch, or against_env naming
// the environment to compare with: what an upgrade changes) and is marked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/environment.h"
#include "core/git_repo.h"
#include "core/record.h"
#include "differ/baseline_store.h"

namespace driftgate {

inline constexpr int k_default_max_walk = 200;

struct SelectionRequest {
  std::string head_sha;                      // the run's commit (header.commit.sha)
  std::optional<std::string> base_revision;  // the target branch: a revision or SHA (CI base SHA)
  Environment environment;                   // the run's environment; its key selects baselines
  int max_walk = k_default_max_walk;         // commits looked at, the start included
  bool allow_env_mismatch = false;           // fall back to the nearest baseline of another environment
  bool load = true;                          // false: only choose; the caller loads it (diff: as a digest)
  // Compare with the nearest baseline of exactly this environment key (an upgrade gate: the
  // run under LibTorch 2.6 against the 1.13 baselines). Wins over allow_env_mismatch.
  std::optional<std::string> against_env = std::nullopt;
};

struct BaselineSelection {
  bool found = false;
  std::string sha;                  // the baseline's commit
  std::string env_key;              // the baseline's environment key
  int steps = 0;                    // first-parent steps from start_sha to sha (0: the start itself;
                                    // for a merged branch's accepted baseline: to the merge commit)
  std::string start_sha;            // where the walk began: the merge base, or the run's commit
  bool env_mismatch = false;        // the baseline is of another environment (allow_env_mismatch)
  std::string env_changes;          // baseline environment -> run environment, "onednn 2.6.3 -> 3.1"
  std::optional<RunFile> baseline;  // the baseline read in full (unless the request said not to load it)
  std::string reason;               // when !found: why, in one line
  std::vector<std::string> notes;   // things the user should know either way (shallow-clone fallback)
};

// The text of the note added when a shallow clone lacks the merge base.
extern const char* const k_shallow_clone_note;

// Chooses the baseline. Throws driftgate::Error when the run's commit or the base
// revision is unknown to a full clone (a shallow clone falls back with a note).
BaselineSelection select_baseline(const GitRepo& repo, const BaselineStore& store, const SelectionRequest& request);

}  // namespace driftgate

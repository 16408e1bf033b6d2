// The proposal a failing diff writes: what `baseline accept` of the gated checks
// would change in the baseline, and only that.
//
// A proposal holds the new baseline's header, the check lines the run would put in
// (changed or added) and the ids it would drop; the checks it does not name keep the
// baseline's lines. So a proposal is as large as the change, not as the suite: a
// million-check gate with a thousand regressions proposes a thousand lines (1 MB),
// where a whole proposed baseline was another gigabyte to write and to upload.
// `driftgate baseline accept --proposal FILE --reason ...` applies it to the
// baseline it was made from, which it names; that baseline must still hold what the
// diff saw for the checks the proposal changes (a fingerprint of them), or the
// proposal is refused and the diff must be run again.
//
// The file is JSON lines:
//   {"type":"proposal","schema":1,"env_key":K,"base_sha":B,"run_sha":R,"globs":[...],
//    "base_checks":N,"touched":T,"fingerprint":F,"changes":C,"drops":D}
//   the new baseline's header line
//   C check lines (the run's, as written), in id order
//   D lines {"type":"drop","id":ID}, in id order
//   {"type":"end","changes":C,"drops":D}
// N is the base's check count; T and F cover the base's checks the proposal replaces
// or drops (their ids, status, message and max_abs, in id order).
#pragma once

#include <string>
#include <vector>

#include "core/record.h"
#include "differ/baseline_accept.h"
#include "differ/run_digest.h"

namespace driftgate {

struct BaselineProposal {
  std::string env_key;
  std::string base_sha;  // the baseline it was made from
  std::string run_sha;   // the commit whose baseline it proposes
  std::vector<std::string> globs;
  size_t base_checks = 0;
  size_t touched = 0;
  std::string fingerprint;
  RunHeader header;                  // the new baseline's
  std::vector<CheckRecord> changes;  // in id order
  std::vector<std::string> drops;    // in id order
};

// What write_baseline_proposal wrote: how many checks it changes and drops.
struct ProposalCounts {
  size_t changes = 0;
  size_t drops = 0;
  size_t unchanged = 0;  // matching checks the base already holds with the run's values
};

// Writes the proposal of accepting `globs` from `run` into `base` (both read as
// digests, `base` the baseline the diff chose) to `path`, atomically (temporary file
// and rename). Throws driftgate::Error when it cannot be written.
ProposalCounts write_baseline_proposal(const std::string& path, const RunDigest& run, const RunDigest& base,
                                       const std::vector<std::string>& globs);

// Reads a proposal. Throws driftgate::Error "<path>:<line>: <what>" on anything but a
// whole, well-formed proposal (a truncated one lacks its end line).
BaselineProposal read_baseline_proposal(const std::string& path);

// The baseline `proposal` gives from `base`, with accept_checks' outcome (accepted:
// the changed ids; removed: the dropped). Throws driftgate::Error when `base` is not
// the baseline the proposal was made from, or no longer holds what it held then for
// the checks the proposal changes.
// `base` is taken by value: a caller done with it moves it in (a million records).
AcceptOutcome apply_baseline_proposal(const BaselineProposal& proposal, RunFile base, const std::string& proposal_path);

}  // namespace driftgate

// A run file read for diffing: what the differ needs of each check, not all of it.
//
// `driftgate diff` of a million checks against a million-check baseline reads about
// two gigabytes. Building a full CheckRecord (~1.5 KB, a dozen allocations) for every
// line of both files cost more than everything else the diff does, and almost all of
// it is thrown away: the diff looks at a check's id, experiment, output, status,
// message and max_abs, the proposed baseline copies the line itself.
//
// read_run_digest maps the file and keeps, per check, views into its bytes:
//   - a line in the canonical layout check_to_json_line writes (printable ASCII, the
//     writer's members in its order, no tier-2/3 or mitigation members: nearly every
//     line of a real run) is read by one pass that mirrors the writer
//     (core/check_line_fast.h) and validates every value's type and grammar as it goes.
//     Numbers may be in any JSON form within its limits (1e-5 as well as the writer's
//     1e-05): a hand-edited line reads to the same values, and is copied as it is;
//   - any other line is read in full by the strict reader (core/check_line.h; the same one
//     pass in full mode first), and its digest points into that record.
// The acceptance contract is read_run_file's: a file is accepted only when
// read_run_file accepts it, with the same values. Whenever the digest reader refuses
// anything (a malformed line, a duplicated id, a summary that does not match), the
// strict reader reads the whole file again and throws its own error, so messages are
// exactly read_run_file's "<file>:<line>: ..." ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/check_line_fast.h"
#include "core/record.h"
#include "core/text_compare.h"

namespace driftgate {

// The text a digest's `line` views point into: a read-only mapping of the file, or
// bytes held in memory.
class RunBytes {
 public:
  virtual ~RunBytes() = default;
  virtual std::string_view text() const = 0;
};

struct RunDigest {
  RunHeader header;
  RunSummary summary;
  // In id order when read from a file (read_run_digest, digest_run_text); in the run's
  // order for digest_view and digest_of.
  std::vector<CheckDigest> checks;
  // The permutation of `checks` in id order (ids are unique: the reader refuses repeats).
  std::vector<size_t> id_order;

  // Which digest this is, and which one vouched for its lines (`like`): twins refer to it.
  uint64_t serial = 0;
  uint64_t like_serial = 0;  // 0: none

  // What the views point into; keep the digest (not a copy of its vectors) alive while they are used.
  std::shared_ptr<const RunBytes> bytes;
  // Ids, experiment and output names of checks read from a file, copied together while
  // each line was at hand: later passes (sorts, merges, summaries) touch these few
  // megabytes instead of a cache line of the mapped file per check.
  // A baseline read with a `like` shares like's blocks: its checks vouched for by
  // like's keep like's views of the same names.
  std::vector<std::shared_ptr<char[]>> names;
  std::vector<std::unique_ptr<const CheckRecord>> records;  // checks read in full
  std::shared_ptr<const RunFile> run;                       // a digest made of a parsed run (digest_of)
};

// Reads `path` as read_run_file does (same acceptance, same errors), on two threads.
// `like`: a digest read before (a diff's run, when reading its baseline) whose
// canonical lines vouch for this file's lines that equal them up to their timings
// (read_check_like), so those are not scanned again. The result shares like's name
// blocks (its vouched checks keep like's views of id, experiment and output), so it
// stays valid after `like` is gone.
RunDigest read_run_digest(const std::string& path, const RunDigest* like = nullptr, const InputKind& kind = k_run_file);
// The same over bytes already in memory (a git note), named `name_for_messages`.
RunDigest digest_run_text(std::string text, const std::string& name_for_messages, const RunDigest* like = nullptr);
// A digest over a parsed run: its views point into `run`'s records (lines are written
// out by check_to_json_line when needed), which it keeps alive.
RunDigest digest_of(std::shared_ptr<const RunFile> run);
// The same over a run the caller keeps alive while the digest is used.
RunDigest digest_view(const RunFile& run);

// Walks the checks of `run` and `baseline` (each in id order, `id_order`) together in id
// order: `visit(r, b)` once per id, with the indices into their `checks` and SIZE_MAX
// for the side that lacks it. When `baseline` was read with `run` as its `like`, the
// twins pair checks without comparing their ids.
template <typename Visit>
void merge_by_id(const RunDigest& run, const RunDigest& baseline, Visit&& visit) {
  const std::vector<size_t>& run_order = run.id_order;
  const std::vector<size_t>& base_order = baseline.id_order;
  const bool twins = baseline.like_serial != 0 && baseline.like_serial == run.serial;
  size_t r = 0;
  size_t b = 0;
  while (r < run_order.size() || b < base_order.size()) {
    if (r == run_order.size()) {
      visit(SIZE_MAX, base_order[b++]);
      continue;
    }
    if (b == base_order.size()) {
      visit(run_order[r++], SIZE_MAX);
      continue;
    }
    const CheckDigest& now = run.checks[run_order[r]];
    const CheckDigest& was = baseline.checks[base_order[b]];
    if (twins && was.twin == run_order[r]) {
      visit(run_order[r++], base_order[b++]);
    } else if (text_less(now.id, was.id)) {
      visit(run_order[r++], SIZE_MAX);
    } else if (text_less(was.id, now.id)) {
      visit(SIZE_MAX, base_order[b++]);
    } else {
      visit(run_order[r++], base_order[b++]);
    }
  }
}

// The check's line: `line` as it was read when set (the writer's bytes for every line
// driftgate wrote; a hand edit's number forms are kept), else check_to_json_line(*record).
std::string check_line_of(const CheckDigest& check);

}  // namespace driftgate

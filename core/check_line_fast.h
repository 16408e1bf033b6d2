// The fast reader of check lines: one pass over a line in the writer's layout
// (core/check_line.h), for read_run_file's whole records and the diff's digests.
//
// A run or baseline of a million checks is a million check lines; building an nlohmann
// DOM for each (~44 MB/s) made `driftgate diff` two orders of magnitude slower than
// reading the files. This reader never reports an error of its own: a line in any other
// form (other member order, escapes, non-ASCII, tier-2/3 or mitigation members, -0) is
// "not mine" and goes to the strict reader, so it only ever accepts lines the strict
// reader accepts, with the same values. fuzz_check_line_fast and
// tests/core/check_line_test.cc (every edit of a line) hold it to that, with the strict
// reader as oracle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/check_line.h"

namespace driftgate {

// Reads one "type":"check" line in the writer's layout into `check`. False (and
// `check` unspecified) when the line must go to the strict reader instead.
bool read_canonical_record(std::string_view line, CheckRecord& check);

// ---- the digests: what a diff keeps of a check (differ/run_digest.h) ----

// A check's latency members (CheckRecord's reference_ms, target_ms and their
// interquartile ranges; nan ranges where the line has none).
struct CheckTimings {
  double reference_ms = 0.0;
  double target_ms = 0.0;
  double reference_iqr_ms = __builtin_nan("");
  double target_iqr_ms = __builtin_nan("");
};

struct CheckDigest {
  std::string_view id;
  std::string_view experiment;
  std::string_view output;
  std::string_view message;
  // The check's line as it was read (no newline; in its text a '\n' follows it): set
  // when the line was in canonical layout, empty when `record` holds the check.
  std::string_view line;
  const CheckRecord* record = nullptr;  // the check read in full (owned by the RunDigest), or null
  CheckStatus status = CheckStatus::k_pass;
  bool has_stats = false;
  double max_abs = 0.0;  // stats.max_abs when has_stats
  // Canonical lines: the bytes before the "timings_ms" member (the rest of the line is
  // timings only); 0 otherwise.
  uint32_t timings_at = 0;
  // Read with a `like` digest (read_run_digest): the index in like's checks of the check
  // that vouched for this one (the same id), or k_no_twin.
  uint32_t twin = k_no_twin;
  static constexpr uint32_t k_no_twin = UINT32_MAX;
  // Canonical lines: the "timings_ms" member's values, converted by the same pass that
  // checks them, while the line is at hand (read them with timings_of). The latency
  // table wants them for every check: read again from the mapped line later, they cost
  // a cache miss per check (~0.3 s of a million-check diff, for 32 bytes a check here).
  CheckTimings timings;
};

// Reads one check line in the canonical form (see above) into `digest`, with views
// into `line`. False when the line is in any other form (the caller reads it in full);
// true only for lines that read_run_file's check reader accepts with the same id,
// experiment, output, status, message and max_abs.
bool read_canonical_check(std::string_view line, CheckDigest& digest);

// A check's latency members (CheckRecord's reference_ms, target_ms and their
// interquartile ranges; nan ranges where the line has none): from its record, or as
// its canonical line's "timings_ms" member was converted when the line was read.
CheckTimings timings_of(const CheckDigest& check);
// Reads `line` as `like` (a check read in canonical form) when the two are the same
// bytes up to like's timings and the rest of `line` is a canonical timings member: then
// read_canonical_check would accept it with like's values, and `digest` is like's with
// views into `line` and the timings of `line`. False otherwise. A baseline line identical to the run's line for
// the same check (the common case) is so vouched for without being scanned again.
// The digest's message and line view `line`; its id, experiment and output are like's
// views (equal text), so `like` must outlive it unless the caller copies them.
bool read_check_like(std::string_view line, const CheckDigest& like, CheckDigest& digest);

// What read_canonical_check_at remembers between lines of one text (blocks of a check
// that its neighbours repeat byte for byte): its views point into that text, so a memo
// is for one text only. Empty views: nothing remembered.
struct CanonicalMemo {
  std::string_view tolerance;
  std::string_view observed;
  // The last "stats" object read: its bytes, where each of its members (k_stats_members'
  // order, an absent optional one empty) ends in them, and its max_abs. A member the
  // next line repeats byte for byte, up to and with the byte after it, reads the same.
  std::string_view stats;
  uint32_t stats_ends[k_stats_member_count] = {};
  double stats_max_abs = 0.0;
  std::string_view timings;     // the last timings member (and the line's closing brace)
  CheckTimings timings_values;  // its values
};

// The same two over the line at the start of `text`, a run of lines whose last byte
// is '\n' (what read_run_digest holds: it need not find each line's end first). The
// length of the line read (its '\n' follows it), or 0 where the one-line function
// would say false for that line.
size_t read_canonical_check_at(std::string_view text, CheckDigest& digest, CanonicalMemo* memo = nullptr);
size_t read_check_like_at(std::string_view text, const CheckDigest& like, CheckDigest& digest);

}  // namespace driftgate

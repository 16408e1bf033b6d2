// The JSON line of one check record: its one writer and the fast path of its reading.
//
// A run or baseline of a million checks is a million of these lines; building an
// nlohmann DOM for each (~44 MB/s) made `driftgate diff` two orders of magnitude
// slower than reading the files. A check line has two readers:
//   - the strict reader (record.cc's parse_check over the strict JSON parser), which
//     reads every line and owns every error ("<file>:<line>: ..."), and
//   - the fast path, read_canonical_record here and the digest readers of
//     core/run_digest.h, all one pass (canonical_check.cc) over the layout
//     append_check_json_* write. It never reports an error of its own: a line in any
//     other form (other member order, escapes, non-ASCII, tier-2/3 or mitigation
//     members, -0) is "not mine" and goes to the strict reader, so the fast path only
//     ever accepts lines the strict reader accepts, with the same values (the fuzz
//     target fuzz_canonical_check and tests/core/run_digest_test.cc hold it to that).
// And one writer: check_to_json_line (record.cc) is append_check_json_begin, the
// optional tier-2/3 members, append_check_json_end; the bytes are what nlohmann's dump
// of the same ordered object writes (key order, number format, escaping).
#pragma once

#include <string>
#include <string_view>

#include "core/record.h"

namespace driftgate {

// check_to_json_line(check) is begin + the members record.cc adds itself (kept in
// step with the DOM it replaced: a member's compact dump is the same bytes inside
// the object) + end.
// The object's opening and its members from "type" through "stats".
void append_check_json_begin(std::string& out, const CheckRecord& check);
// "timings_ms" and the closing brace.
void append_check_json_end(std::string& out, const CheckRecord& check);

// Reads one "type":"check" line in the writer's layout into `check`. False (and
// `check` unspecified) when the line must go to the strict reader instead.
bool read_canonical_record(std::string_view line, CheckRecord& check);

}  // namespace driftgate

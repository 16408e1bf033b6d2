// The JSON line of one check record, read and written without a JSON DOM.
//
// A run or baseline of a million checks is a million of these lines; building an
// nlohmann DOM for each (~44 MB/s) made `driftgate diff` two orders of magnitude
// slower than reading the files. This codec is the fast path of record.cc:
//   - append_check_json_* write exactly the bytes nlohmann's dump of the same
//     ordered object writes (key order, number format, escaping); strings it cannot
//     vouch for (escapes, non-ASCII) are handed to nlohmann itself.
//   - CheckLineParser reads a check line with simdjson into a CheckRecord. It never
//     reports an error of its own: when a line is anything but a well-formed check it
//     can read exactly as the strict reader would (wrong types, missing or duplicated
//     keys, unknown names, escapes, -0, numbers out of range), it says "not mine" and
//     parse_run reads that line with the nlohmann reader, which accepts it or throws
//     the reader's one error with file:line. So the fast path can only ever accept
//     lines the strict reader accepts, with the same values.
#pragma once

#include <memory>
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

class CheckLineParser {
 public:
  CheckLineParser();
  ~CheckLineParser();
  CheckLineParser(const CheckLineParser&) = delete;
  CheckLineParser& operator=(const CheckLineParser&) = delete;

  // Reads one "type":"check" line into `check`. False (and `check` unspecified)
  // when the line must go to the strict reader instead.
  bool parse(std::string_view line, CheckRecord& check);

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace driftgate

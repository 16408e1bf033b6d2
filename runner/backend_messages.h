// What a backend printed on stderr, made fit for the record.
//
// It exists because LibTorch talks on stderr ("Logging before InitGoogleLogging()",
// "an output with one or more elements was resized", deprecation warnings once per
// forward under LibTorch 2.x): flooding the terminal while none of it reached the
// record, although such a warning can be the symptom of a kernel bug. An isolated
// child's stderr goes to a file the runner reads after each step (runner/backend_run.h);
// these functions turn those bytes into the record's messages: one line each,
// deterministic (glog's time, thread and pid prefix dropped), printable, bounded,
// deduplicated with a count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/record.h"

namespace driftgate {

// A message's text is cut to this many bytes (a UTF-8 character is never split).
inline constexpr size_t k_backend_message_max = 400;
// Distinct messages kept per backend in one check; the rest are counted in one line.
inline constexpr size_t k_backend_messages_per_backend = 20;
inline constexpr const char* k_more_backend_messages = "(further lines, not kept)";

// The lines of `bytes` (a last line without a newline included), each normalized:
// glog's "W1206 02:13:00.123456 12345 " (or "W20261206 ...") prefix dropped (the
// severity letter kept, as "W "), trailing whitespace and carriage returns dropped, invisible characters escaped,
// cut to k_backend_message_max; empty lines left out.
std::vector<std::string> message_lines(std::string_view bytes);

// Adds `lines` printed by `backend` to `messages`: a line equal to one already there
// for the same backend raises its count; at most k_backend_messages_per_backend
// distinct lines per backend, then one k_more_backend_messages entry counts the rest.
void add_backend_messages(std::vector<BackendMessage>& messages, const std::string& backend,
                          const std::vector<std::string>& lines);

}  // namespace driftgate

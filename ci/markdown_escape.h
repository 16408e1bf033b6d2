// Making untrusted text inert in a PR/MR comment.
//
// Experiment names, check ids, messages and notes come from configs and run files,
// which a pull request controls. In a comment they must not ping anyone (@team),
// inject HTML (<img src=...>, </details>), links ([x](https://evil)) or break the
// layout (backticks, newlines). Two forms: a code span for identifiers and
// messages, escaped prose for everything else. Both are used by comment_body.h;
// nothing untrusted reaches a comment by another path.
#pragma once

#include <string>

namespace driftgate {

// U+200D ZERO WIDTH JOINER: placed after '@' so no mention is formed.
inline constexpr const char* k_zero_width_joiner = "\xE2\x80\x8D";

// `text` as an inline code span whose fence is longer than any backtick run in it;
// line breaks become spaces, '|' is escaped for tables. Markdown, HTML, links and
// mentions are inert inside a code span on GitHub and GitLab.
std::string code_span(const std::string& text);

// `text` as prose: HTML special characters become entities, markdown punctuation
// is backslash-escaped, '@' is followed by a zero-width joiner, line breaks become
// spaces, "://" is broken so no bare URL is autolinked.
std::string escape_text(const std::string& text);

// `text` cut to at most `max_bytes` bytes without splitting a UTF-8 sequence,
// with "..." appended when cut.
std::string truncate_utf8(const std::string& text, size_t max_bytes);

// Number of Unicode code points in UTF-8 `text`.
size_t utf8_length(const std::string& text);

// Number of UTF-16 code units of UTF-8 `text` (code points above U+FFFF count twice).
// GitHub's "characters" limits are checked with this, the stricter reading.
size_t utf16_length(const std::string& text);

}  // namespace driftgate

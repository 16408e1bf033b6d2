// Control and bidirectional-formatting characters in text that came from inputs.
//
// A check id with a NUL in it is cut there by a shell (another check's id); a name
// with U+202E RIGHT-TO-LEFT OVERRIDE shows its characters in an order other than the
// one a reader or a shell acts on (CVE-2021-42574, "Trojan Source"). So:
//   - ids and names read from run files, baselines and configs must be printable:
//     require_printable refuses them with the character named and the text escaped;
//   - every rendered output (markdown, HTML, text, suggested shell commands) shows
//     such characters escaped (escape_invisible), whatever their source.
// "Invisible" here: C0 controls and DEL, C1 controls (U+0080-U+009F), the Unicode
// bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A-U+202E,
// U+2066-U+2069), zero-width characters (U+200B-U+200D, U+2060, U+FEFF), the line
// and paragraph separators U+2028 and U+2029, and bytes that are not UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace driftgate {

// "" when `text` is printable UTF-8; else its first invisible character, named:
// "U+202E (a bidirectional formatting character)", "U+0000 (a control character)",
// "the byte 0xE9 (not UTF-8)".
std::string first_invisible(std::string_view text);

// `text` with each invisible character written as an escape: "\x00" for a control
// character or a byte that is not UTF-8, "\u202e" for the others. Printable text,
// backslashes included, is unchanged; with `keep_whitespace`, so are tab and line
// feed (for renderers that lay out or replace them themselves; a carriage return,
// which lets a terminal overwrite a line, is always escaped).
std::string escape_invisible(std::string_view text, bool keep_whitespace = false);

// `text` as one shell word in ANSI-C quoting, $'...' (bash, zsh, ksh; POSIX.1-2024
// sh): each byte of an invisible character as \xHH, '\'' and '\\' backslashed. A
// shell pastes back exactly `text`, and the terminal shows no control or bidi
// character. For text that needs no escape a plain '...' quote is simpler.
std::string ansi_c_quote(std::string_view text);

// Throws driftgate::Error "<what> 'a\u202eb' holds U+202E (...); ..." when `text`
// is not printable.
void require_printable(std::string_view text, const std::string& what);

}  // namespace driftgate

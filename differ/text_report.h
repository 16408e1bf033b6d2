// The terminal rendering of a diff report: what a developer reads in a shell.
//
// Markdown is for PR comments; in a terminal its backticks and tables are noise.
// This renderer tells the same story from the same Report as plain lines, with
// ANSI colour only when asked (the command decides: a TTY or --color=always).
// Text from run files (check ids, messages) has its control characters replaced,
// so a check name cannot move the cursor or recolour the terminal.
#pragma once

#include <string>

#include "differ/report.h"

namespace driftgate {

struct TextOptions {
  bool color = false;  // ANSI colour escapes
};

// The whole report, ending with a newline.
std::string render_text(const Report& report, const TextOptions& options = {});

// Only the verdict line ("driftgate: FAIL - 2 regressed, 1 fixed"), no newline: `diff -q --format text`.
std::string render_text_verdict_line(const Report& report, const TextOptions& options = {});

// `text` with every control character (C0, DEL) shown as '?', newlines as spaces.
std::string terminal_safe(const std::string& text);

}  // namespace driftgate

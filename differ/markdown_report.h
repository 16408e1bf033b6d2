// The markdown rendering of a diff report: the PR/MR comment and the terminal summary.
//
// The first line is the verdict so that a sticky comment, a job log and `-q`
// output all start with the answer. Worst first: the gated checks are listed
// open, everything else is folded in a <details> block, and the whole comment
// stays within a byte budget (GitHub rejects comments over 65,536 characters)
// with a notice saying how many checks were left out. Everything that comes from a run file (check
// ids, messages, hashes, environment values) is put in code spans or escaped:
// a check name can contain `|`, backticks, `<script>` or an @mention, and a PR
// comment must neither break, run HTML nor ping anyone.
#pragma once

#include <cstddef>
#include <string>

#include "differ/report.h"

namespace driftgate {

// Checks listed per class before "... and N more (see report.json)".
inline constexpr int k_markdown_checks_per_class = 50;

// The default byte budget of a summary: below GitHub's 65,536-character comment limit.
inline constexpr size_t k_default_markdown_budget = 65000;

// The smallest budget accepted: the verdict, the counts and the truncation notice fit.
inline constexpr size_t k_min_markdown_budget = 2000;

// The whole summary, ending with a newline, at most `budget` bytes unless the
// part before the check lists alone is longer.
std::string render_markdown(const Report& report, size_t budget = k_default_markdown_budget);

// Only the verdict line ("**driftgate: FAIL** — 2 regressed, 1 fixed"), no newline.
std::string render_verdict_line(const Report& report);

// `text` as an inline code span whose fence is longer than any backtick run in it;
// newlines become spaces. Markdown, HTML and mentions are inert inside it.
std::string markdown_code(const std::string& text);

// `text` as plain markdown prose: punctuation that markdown or HTML would interpret
// is backslash-escaped and an @ cannot start a mention.
std::string markdown_text(const std::string& text);

}  // namespace driftgate

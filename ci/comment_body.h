// The markdown posted to a pull request, merge request, check run or job summary,
// rendered from report.json and fitted to the surface's size limit.
//
// Order of importance: the verdict line and counts first, the worst (gated)
// checks next, every other changed check inside <details>. When the limit is near,
// whole entries are dropped from the end and a notice says how many and links the
// full report artifact, so the body is always valid markdown and never cut mid-line.
// All text from the report goes through markdown_escape.h.
//
// An appendix (the markdown trend from driftgate trend --markdown) follows the
// finished summary as a folded <details> section, only when the summary is whole
// and the appendix fits what it left of the limit; otherwise a one-line notice
// (when that fits) says it was left out and why. The summary is rendered exactly
// as without an appendix either way.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace driftgate {

// A surface's size limit and how it counts.
struct BodyBudget {
  size_t limit = 0;
  bool bytes = false;  // false: characters, counted as UTF-16 code units (emoji count twice)
};

inline constexpr BodyBudget k_github_comment_budget{65536, false};
inline constexpr BodyBudget k_github_check_summary_budget{65535, true};
inline constexpr BodyBudget k_gitlab_note_budget{1000000, false};
inline constexpr BodyBudget k_step_summary_budget{1024 * 1024, true};

// Gated checks shown under "Worst regressions" before the rest go into <details>.
inline constexpr int k_worst_checks_shown = 10;

// Markdown appended after the summary, folded under `title`. Our own output
// (driftgate trend --markdown), but of any size: it never displaces the summary.
struct CommentAppendix {
  std::string title;       // the <details> summary, e.g. "Trend on main" (escaped when rendered)
  std::string markdown;    // "" : no appendix
  bool oversized = false;  // the file was larger than what was read (markdown holds its first part)
};

struct BodyOptions {
  std::string marker;        // hidden sticky marker line ("" for none)
  std::string key;           // matrix key shown in the title ("" for none)
  std::string artifact_url;  // link to the full report ("" for none); must be http(s)
  BodyBudget budget = k_github_comment_budget;
  CommentAppendix appendix = {};  // after the summary when it fits ("" markdown: none)
  // Plain text (escaped) quoted in bold under the title, e.g. why the status
  // differs from the report's verdict ("" for none).
  std::string notice = {};
};

// report.json comes from the gate run, which a fork's pull request controls, so it is
// bounded before it is parsed: a real report is a few MB at most (3,000 checks: ~1.5 MB)
// and nests 4 levels deep.
inline constexpr size_t k_report_max_bytes = 32 * 1024 * 1024;
inline constexpr int k_report_max_depth = 32;

// The deepest nesting of arrays and objects in JSON `text`, counted without parsing
// (brackets inside strings do not count); counting stops at `limit` + 1.
int json_nesting_depth(const std::string& text, int limit);

// A report.json document checked for the fields the body needs. Throws
// driftgate::Error naming `path` and the field when it is not a driftgate report,
// is larger than k_report_max_bytes or nests deeper than k_report_max_depth.
nlohmann::json parse_report(const std::string& text, const std::string& path);

// The body, within options.budget. Throws driftgate::Error when even the summary
// does not fit (a budget under a few hundred characters) or the artifact URL is not http(s).
std::string render_comment_body(const nlohmann::json& report, const BodyOptions& options);

// "driftgate: FAIL - 2 regressed, 1 missing": the verdict in one line of plain text
// (also the commit status description, which GitHub caps at 140 characters).
std::string verdict_line(const nlohmann::json& report);

// Size of `text` as `budget` counts it.
size_t measure(const std::string& text, const BodyBudget& budget);

}  // namespace driftgate

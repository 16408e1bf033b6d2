// The trend as one self-contained HTML page: inline CSS and SVG, no script
// libraries, no network, so it opens from a CI artifact or a mail attachment.
// Hovering a point shows the commit (SHA, subject, author, date) through SVG
// <title>; the commit table carries the same. All record and commit text is escaped.
#pragma once

#include <cstddef>
#include <string>

#include "differ/trend.h"

namespace driftgate {

struct TrendHtmlOptions {
  size_t max_check_lines = 8;     // individual checks drawn per error chart (stepped ones first)
  size_t max_step_rows = 200;     // rows of the step-change table; the rest are counted
  size_t max_latency_lines = 8;   // (backend, input) lines per latency chart; the rest are counted
  size_t max_latency_rows = 200;  // rows of each environment's newest-latency table; the rest are counted
};

std::string render_trend_html(const TrendData& trend, const TrendHtmlOptions& options);

// "a1b2c3d subject\n2026-11-29 23:53 +0000, author": the hover text of a commit.
std::string commit_hover_text(const CommitDetails& commit);

}  // namespace driftgate

// The trend as markdown a pull-request comment can embed: a table of the newest
// commits, the step changes and environment changes, one mermaid `xychart-beta`
// line chart of the pass rate per environment (GitHub renders it), and per
// environment the newest baseline's latency per backend (information, not gated).
#pragma once

#include <cstddef>
#include <string>

#include "differ/trend.h"

namespace driftgate {

struct TrendMarkdownOptions {
  size_t max_rows = 20;          // newest commits in the table
  size_t max_chart_points = 20;  // newest baselines per chart (fewer when commit numbers are long)
  size_t max_steps = 20;         // step groups (commit ranges) listed, and checks listed per group
  size_t max_latency_rows = 40;  // rows of each environment's latency table
};

std::string render_trend_markdown(const TrendData& trend, const TrendMarkdownOptions& options);

}  // namespace driftgate

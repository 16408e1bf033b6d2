#include "differ/trend_markdown.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "differ/html_escape.h"
#include "differ/latency.h"
#include "differ/svg_chart.h"

namespace driftgate {

namespace {

std::string short_sha(const std::string& sha) { return sha.substr(0, 7); }

BackendRate total_rate(const TrendPoint& point) {
  BackendRate total;
  for (const auto& rate : point.rates) {
    total.passed += rate.passed;
    total.counted += rate.counted;
  }
  return total;
}

std::string percent_value(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", fraction * 100.0);
  return buffer;
}

// The largest max_abs over the checks of one point of `env`.
double highest_error(const EnvSeries& env, size_t point) {
  double highest = std::nan("");
  for (const auto& check : env.checks) {
    double value = check.max_abs[point];
    if (!std::isnan(value) && (std::isnan(highest) || value > highest)) {
      highest = value;
    }
  }
  return highest;
}

void commit_table(std::ostringstream& md, const TrendData& trend, const TrendMarkdownOptions& options) {
  std::vector<std::map<size_t, size_t>> point_of(trend.envs.size());
  md << "| # | commit | subject | date |";
  for (size_t e = 0; e < trend.envs.size(); ++e) {
    md << " pass `" << trend.envs[e].env_key.substr(0, 8) << "` | max error |";
    for (size_t p = 0; p < trend.envs[e].points.size(); ++p) {
      point_of[e][trend.envs[e].points[p].commit] = p;
    }
  }
  md << "\n|---:|---|---|---|";
  for (size_t e = 0; e < trend.envs.size(); ++e) {
    md << "---:|---:|";
  }
  md << "\n";
  size_t rows = 0;
  for (size_t c = trend.commits.size(); c-- > 0 && rows < options.max_rows; ++rows) {
    const CommitDetails& commit = trend.commits[c];
    md << "| " << c + 1 << " | `" << short_sha(commit.sha) << "` | " << markdown_cell_escape(commit.subject) << " | "
       << markdown_cell_escape(format_commit_date(commit)) << " |";
    for (size_t e = 0; e < trend.envs.size(); ++e) {
      auto it = point_of[e].find(c);
      if (it == point_of[e].end()) {
        md << " — | — |";
        continue;
      }
      BackendRate rate = total_rate(trend.envs[e].points[it->second]);
      md << " " << (rate.counted == 0 ? "n/a" : percent_value(pass_fraction(rate)) + "%") << " (" << rate.passed << "/"
         << rate.counted << ") | " << short_number(highest_error(trend.envs[e], it->second)) << " |";
    }
    md << "\n";
  }
  if (trend.commits.size() > options.max_rows) {
    md << "\n" << trend.commits.size() - options.max_rows << " older commits not shown.\n";
  }
}

void changes(std::ostringstream& md, const TrendData& trend, const TrendMarkdownOptions& options) {
  if (!trend.markers.empty()) {
    md << "\n**Environment changes**\n\n";
    for (const auto& marker : trend.markers) {
      md << "- `" << short_sha(trend.commits[marker.commit].sha) << "` " << markdown_cell_escape(marker.description)
         << " (`" << marker.from_key << "` -> `" << marker.to_key << "`)\n";
    }
  }
  md << "\n**Step changes** (" << trend.steps.size() << ")\n\n";
  if (trend.steps.empty()) {
    md << "None.\n";
    return;
  }
  auto step_line = [&](const StepChange& step) {
    md << "- `" << short_sha(trend.commits[step.last_before].sha) << "..."
       << short_sha(trend.commits[step.first_after].sha) << "` " << markdown_cell_escape(step.check_id) << ": max_abs "
       << short_number(step.before) << " -> " << short_number(step.after) << " (env "
       << (step.from_env_key.empty() ? "" : "`" + step.from_env_key.substr(0, 8) + "` -> ") << "`"
       << step.env_key.substr(0, 8) << "`)\n";
  };
  // One line per cause (commit range and environment), worst first; its checks folded.
  std::vector<StepGroup> groups = group_steps(trend.steps);
  size_t listed = 0;
  for (const auto& group : groups) {
    if (listed++ == options.max_steps) {
      md << "- ... and " << groups.size() - options.max_steps << " more commit ranges\n";
      break;
    }
    if (group.steps.size() == 1) {
      step_line(*group.steps.front());
      continue;
    }
    const StepChange& first = *group.steps.front();
    md << "- `" << short_sha(trend.commits[first.last_before].sha) << "..."
       << short_sha(trend.commits[first.first_after].sha) << "` " << group.steps.size() << " checks, "
       << describe_factors(group) << " (env "
       << (first.from_env_key.empty() ? "" : "`" + first.from_env_key.substr(0, 8) + "` -> ") << "`"
       << first.env_key.substr(0, 8) << "`); worst " << markdown_cell_escape(first.check_id) << "\n";
    md << "<details><summary>the " << group.steps.size() << " checks</summary>\n\n";
    size_t shown = 0;
    for (const StepChange* step : group.steps) {
      if (shown++ == options.max_steps) {
        md << "- ... and " << group.steps.size() - options.max_steps << " more\n";
        break;
      }
      step_line(*step);
    }
    md << "\n</details>\n\n";
  }
}

// Mermaid's xychart-beta (GitHub and GitLab render it): the x labels are the commits' numbers
// in the table's # column, quoted; mermaid prints every label, so the chart keeps as many
// of the newest points as fit a comment's width without labels running into each other
// (60 digits in all: 20 points up to commit 999). The init directive gives the line a
// colour that shows on the light and the dark theme (mermaid's default is a pale one).
void chart(std::ostringstream& md, const EnvSeries& env, size_t max_points) {
  if (env.points.empty()) {
    return;
  }
  size_t digits = std::to_string(env.points.back().commit + 1).size();
  max_points = std::max<size_t>(2, std::min(max_points, 60 / digits));
  size_t first = env.points.size() > max_points ? env.points.size() - max_points : 0;
  if (env.points.size() - first < 2) {
    return;
  }
  md << "\n```mermaid\n%%{init: {\"themeVariables\": {\"xyChart\": {\"plotColorPalette\": \"#1f77b4\"}}}}%%\n"
     << "xychart-beta\n  title \"Pass rate, environment " << env.env_key
     << "\"\n  x-axis \"commit # (as in the table)\" [";
  for (size_t p = first; p < env.points.size(); ++p) {
    md << (p == first ? "" : ", ") << "\"" << env.points[p].commit + 1 << "\"";
  }
  md << "]\n  y-axis \"pass rate (%)\" 0 --> 100\n  line [";
  for (size_t p = first; p < env.points.size(); ++p) {
    BackendRate rate = total_rate(env.points[p]);
    md << (p == first ? "" : ", ") << (rate.counted == 0 ? "0" : percent_value(pass_fraction(rate)));
  }
  md << "]\n```\n";
}

std::string ms_text(double value) {
  if (std::isnan(value)) {
    return "-";
  }
  char text[32];
  std::snprintf(text, sizeof text, value >= 100.0 ? "%.0f" : value >= 10.0 ? "%.1f" : "%.2f", value);
  return text;
}

// The newest baseline's latency per (experiment, input, backend) of `env`, with the ratio to
// the reference and, where the series has an older point, the change against its oldest one.
void latency_table(std::ostringstream& md, const TrendData& trend, const EnvSeries& env,
                   const TrendMarkdownOptions& options) {
  if (env.latency.empty() || env.points.empty()) {
    return;
  }
  size_t newest = env.points.size() - 1;
  const std::vector<LatencySeries> shown = collapse_latency_inputs(env.latency, k_latency_inputs_shown);
  md << "\n**Latency per backend**, environment `" << env.env_key.substr(0, 8) << "` at `"
     << short_sha(trend.commits[env.points[newest].commit].sha)
     << "`: median and IQR (ms) of the timed forwards after warm-up; information, never gated, and "
        "only comparable within one environment; an experiment of more than "
     << k_latency_inputs_shown << " inputs: the median over its inputs\n\n"
     << "| experiment | input | backend | median | IQR | vs reference | oldest | change |\n"
     << "|---|---|---|---:|---:|---:|---|---:|\n";
  double reference_ms = std::nan("");
  const LatencySeries* previous = nullptr;
  size_t rows = 0;
  for (const LatencySeries& latency : shown) {
    if (previous == nullptr || previous->experiment != latency.experiment || previous->input != latency.input) {
      reference_ms = std::nan("");
    }
    previous = &latency;
    double median = newest < latency.median_ms.size() ? latency.median_ms[newest] : std::nan("");
    double iqr = newest < latency.iqr_ms.size() ? latency.iqr_ms[newest] : std::nan("");
    if (latency.reference) {
      reference_ms = median;
    }
    if (rows++ == options.max_latency_rows) {
      md << "\n" << shown.size() - options.max_latency_rows << " more rows not shown.\n";
      break;
    }
    LatencyRow row{latency.experiment, latency.input, latency.backend, latency.reference, median, iqr, reference_ms};
    // The series' oldest point with a time, when it is older than the newest baseline.
    std::string oldest = "";
    std::string change = "";
    for (size_t p = 0; p < newest && p < latency.median_ms.size(); ++p) {
      double before = latency.median_ms[p];
      if (std::isnan(before)) {
        continue;
      }
      oldest = ms_text(before) + " (`" + short_sha(trend.commits[env.points[p].commit].sha) + "`)";
      if (!std::isnan(median) && before > 0.0) {
        char percent[32];
        std::snprintf(percent, sizeof percent, "%+.0f%%", 100.0 * (median / before - 1.0));
        change = percent;
      }
      break;
    }
    md << "| " << markdown_cell_escape(latency.experiment) << " | " << markdown_cell_escape(latency.input) << " | "
       << markdown_cell_escape(latency.backend) << (latency.reference ? " (reference)" : "") << " | " << ms_text(median)
       << " | " << ms_text(iqr) << " | " << latency_ratio(row) << " | " << oldest << " | " << change << " |\n";
  }
}

}  // namespace

std::string render_trend_markdown(const TrendData& trend, const TrendMarkdownOptions& options) {
  std::ostringstream md;
  md << "### driftgate trend: `" << markdown_cell_escape(trend.branch) << "`\n\n"
     << trend.commits.size() << " first-parent commits, " << trend.baselines << " baselines, " << trend.envs.size()
     << " environment" << (trend.envs.size() == 1 ? "" : "s") << ", " << trend.steps.size() << " step change"
     << (trend.steps.size() == 1 ? "" : "s") << ".\n\n";
  commit_table(md, trend, options);
  changes(md, trend, options);
  for (const auto& env : trend.envs) {
    chart(md, env, options.max_chart_points);
  }
  for (const auto& env : trend.envs) {
    latency_table(md, trend, env, options);
  }
  return md.str();
}

}  // namespace driftgate

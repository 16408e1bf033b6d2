#include "differ/trend_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "differ/html_escape.h"
#include "differ/latency.h"
#include "differ/svg_chart.h"
#include "differ/trend_html_sections.h"

namespace driftgate {

namespace {

constexpr size_t k_max_x_ticks = 12;

const char* const k_style = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1140px;color:#1f2328;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
p.note{color:#57606a;margin:4px 0 8px}code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
table{border-collapse:collapse;font-size:13px;margin:6px 0}th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}tr:hover td{background:#fff8c5}
svg.chart{display:block;margin:6px 0;font:11px system-ui,sans-serif}svg .grid{stroke:#eaeef2}svg .frame{fill:none;stroke:#8c959f}
svg .tick{stroke:#8c959f}svg .title{font-size:13px;font-weight:600}svg .label{fill:#57606a}
svg circle:hover{r:5;stroke:#000;fill-opacity:1}svg .series:hover path{stroke-width:3}
.up{color:#cf222e;font-weight:600}.down{color:#1a7f37;font-weight:600}
)";

// Up to k_max_x_ticks commit labels spread over the axis, the newest always included.
std::vector<std::pair<double, std::string>> commit_ticks(const TrendData& trend) {
  std::vector<std::pair<double, std::string>> ticks;
  size_t count = trend.commits.size();
  if (count == 0) {
    return ticks;
  }
  size_t stride = (count + k_max_x_ticks - 1) / k_max_x_ticks;
  for (size_t c = (count - 1) % stride; c < count; c += stride) {
    ticks.emplace_back(static_cast<double>(c), short_sha(trend.commits[c].sha));
  }
  return ticks;
}

std::vector<ChartMarker> environment_markers(const TrendData& trend) {
  std::vector<ChartMarker> markers;
  for (const auto& marker : trend.markers) {
    ChartMarker chart_marker;
    chart_marker.x = static_cast<double>(marker.commit) - 0.5;
    chart_marker.label = marker.description;
    chart_marker.title = "environment " + marker.from_key + " -> " + marker.to_key + " at " +
                         short_sha(trend.commits[marker.commit].sha) + ": " + marker.description;
    markers.push_back(chart_marker);
  }
  return markers;
}

LineChart time_chart(const TrendData& trend, std::string title, std::string y_label) {
  LineChart chart;
  chart.title = std::move(title);
  chart.x_label = "commit on " + trend.branch + " (first parent, oldest left)";
  chart.y_label = std::move(y_label);
  chart.x_ticks = commit_ticks(trend);
  chart.markers = environment_markers(trend);
  return chart;
}

std::string series_label(const TrendData& trend, const std::string& name, const std::string& env_key) {
  return trend.envs.size() > 1 ? name + " [" + env_key.substr(0, 8) + "]" : name;
}

std::string pass_rate_chart(const TrendData& trend) {
  LineChart chart = time_chart(trend, "Pass rate per target backend", "pass rate");
  chart.auto_y = false;
  chart.y_min = 0.0;
  chart.y_max = 1.0;
  chart.percent_y = true;
  for (const auto& env : trend.envs) {
    for (size_t b = 0; b < env.backends.size(); ++b) {
      ChartSeries series;
      series.name = series_label(trend, env.backends[b], env.env_key);
      series.color = series_color(chart.series.size());
      for (const auto& point : env.points) {
        const BackendRate& rate = point.rates[b];
        ChartPoint chart_point{static_cast<double>(point.commit), pass_fraction(rate), ""};
        if (rate.counted > 0) {
          chart_point.title = commit_hover_text(trend.commits[point.commit]) + "\n" + series.name + ": " +
                              percent(chart_point.y) + " (" + std::to_string(rate.passed) + "/" +
                              std::to_string(rate.counted) + ")";
        }
        series.points.push_back(chart_point);
      }
      chart.series.push_back(std::move(series));
    }
  }
  return render_svg(chart);
}

// The checks drawn one by one: those with a step change first (largest step first),
// then those with the largest newest error.
std::vector<const CheckSeries*> chosen_checks(const EnvSeries& env, const TrendData& trend, size_t limit) {
  std::vector<const CheckSeries*> chosen;
  std::set<std::string> taken;
  std::map<std::string, const CheckSeries*> by_id;
  for (const auto& check : env.checks) {
    by_id[check.id] = &check;
  }
  std::vector<const StepChange*> steps;
  for (const auto& step : trend.steps) {
    // A step across an environment change is drawn on both sides: its old level here, its new one there.
    if ((step.env_key == env.env_key || step.from_env_key == env.env_key) && by_id.count(step.check_id) != 0) {
      steps.push_back(&step);
    }
  }
  std::stable_sort(steps.begin(), steps.end(), [](const StepChange* a, const StepChange* b) {
    return std::fabs(std::log10(a->after / a->before)) > std::fabs(std::log10(b->after / b->before));
  });
  for (const StepChange* step : steps) {
    if (chosen.size() < limit && taken.insert(step->check_id).second) {
      chosen.push_back(by_id[step->check_id]);
    }
  }
  std::vector<const CheckSeries*> rest;
  for (const auto& check : env.checks) {
    if (taken.count(check.id) == 0) {
      rest.push_back(&check);
    }
  }
  auto newest = [](const CheckSeries* check) {
    for (auto it = check->max_abs.rbegin(); it != check->max_abs.rend(); ++it) {
      if (!std::isnan(*it)) {
        return *it;
      }
    }
    return -1.0;
  };
  std::stable_sort(rest.begin(), rest.end(),
                   [&](const CheckSeries* a, const CheckSeries* b) { return newest(a) > newest(b); });
  for (size_t i = 0; i < rest.size() && chosen.size() < limit; ++i) {
    chosen.push_back(rest[i]);
  }
  return chosen;
}

// Which error a chart draws: max_abs, or max_abs / max|reference| (relative).
struct ErrorMetric {
  bool relative = false;
  const char* label() const { return relative ? "relative error" : "max_abs"; }
  const std::vector<double>& of(const CheckSeries& check) const { return relative ? check.relative : check.max_abs; }
};

ChartSeries error_series(const TrendData& trend, const EnvSeries& env, const std::string& name,
                         const std::vector<double>& values, double floor, const ErrorMetric& metric = {}) {
  ChartSeries series;
  series.name = name;
  for (size_t p = 0; p < env.points.size(); ++p) {
    size_t commit = env.points[p].commit;
    double value = p < values.size() ? values[p] : std::nan("");
    ChartPoint point{static_cast<double>(commit), std::isnan(value) ? value : std::max(value, floor), ""};
    if (!std::isnan(value)) {
      point.title =
          commit_hover_text(trend.commits[commit]) + "\n" + name + ": " + metric.label() + " " + short_number(value);
    }
    series.points.push_back(point);
  }
  return series;
}

// One marker per commit where steps of `env` begin: the step drawn where it happened, below
// the environment markers' labels, the check names and levels on hover.
std::vector<ChartMarker> step_markers(const TrendData& trend, const EnvSeries& env) {
  std::map<size_t, std::vector<const StepChange*>> by_commit;
  for (const auto& step : trend.steps) {
    if (step.env_key == env.env_key) {
      by_commit[step.first_after].push_back(&step);
    }
  }
  std::vector<ChartMarker> markers;
  for (const auto& [commit, steps] : by_commit) {
    ChartMarker marker;
    marker.x = static_cast<double>(commit) - 0.5;
    marker.color = "#cf222e";
    marker.label_row = 1 + static_cast<int>(markers.size() % 2);
    double factor = steps[0]->after / steps[0]->before;
    marker.label = steps.size() > 1 ? std::to_string(steps.size()) + " steps"
                   : factor >= 1.0  ? "step \u00d7" + short_number(factor) + " worse"
                                    : "step \u00d7" + short_number(1.0 / factor) + " better";
    marker.title = "step change at " + short_sha(trend.commits[steps[0]->last_before].sha) + "..." +
                   short_sha(trend.commits[commit].sha) + ":";
    for (const StepChange* step : steps) {
      marker.title +=
          "\n" + step->check_id + ": max_abs " + short_number(step->before) + " -> " + short_number(step->after);
    }
    markers.push_back(std::move(marker));
  }
  return markers;
}

std::string error_chart(const TrendData& trend, const EnvSeries& env, const TrendHtmlOptions& options,
                        const ErrorMetric& metric = {}) {
  LineChart chart = metric.relative
                        ? time_chart(trend, "Relative error per check, log scale (environment " + env.env_key + ")",
                                     "max |target - reference| / max |reference| (log scale)")
                        : time_chart(trend, "Max abs error per check, log scale (environment " + env.env_key + ")",
                                     "max |target - reference| (log scale)");
  for (auto& marker : step_markers(trend, env)) {
    chart.markers.push_back(std::move(marker));
  }
  chart.log_y = true;
  constexpr double k_floor = 1e-12;
  std::vector<double> highest(env.points.size(), std::nan(""));
  std::vector<double> median(env.points.size(), std::nan(""));
  std::vector<double> column;
  for (size_t p = 0; p < env.points.size(); ++p) {
    column.clear();
    for (const auto& check : env.checks) {
      const std::vector<double>& values = metric.of(check);
      if (p < values.size() && !std::isnan(values[p])) {
        column.push_back(values[p]);
      }
    }
    if (column.empty()) {
      continue;
    }
    auto middle = column.begin() + static_cast<std::ptrdiff_t>(column.size() / 2);
    std::nth_element(column.begin(), middle, column.end());
    median[p] = *middle;
    highest[p] = *std::max_element(column.begin(), column.end());
  }
  ChartSeries top = error_series(trend, env, "max over all " + std::to_string(env.checks.size()) + " checks", highest,
                                 k_floor, metric);
  top.color = "#57606a";
  top.dashed = true;
  ChartSeries middle = error_series(trend, env, "median over all checks", median, k_floor, metric);
  middle.color = "#afb8c1";
  middle.dashed = true;
  chart.series.push_back(std::move(top));
  chart.series.push_back(std::move(middle));
  for (const CheckSeries* check : chosen_checks(env, trend, options.max_check_lines)) {
    ChartSeries series = error_series(trend, env, check->id, metric.of(*check), k_floor, metric);
    series.color = series_color(chart.series.size() - 2);
    chart.series.push_back(std::move(series));
  }
  return render_svg(chart);
}

std::string sweep_chart(const EnvSeries& env, const TrendData& trend) {
  LineChart chart;
  size_t newest = env.points.empty() ? 0 : env.points.back().commit;
  chart.title = "Tolerance sweep at " + short_sha(trend.commits[newest].sha) + " (environment " + env.env_key + ")";
  chart.x_label = "atol (at each check's configured rtol), log scale";
  chart.y_label = "pass rate";
  chart.log_x = true;
  chart.auto_y = false;
  chart.y_min = 0.0;
  chart.y_max = 1.0;
  chart.percent_y = true;
  chart.height = 280;
  for (const auto& curve : env.sweep) {
    ChartSeries series;
    series.name = curve.backend;
    series.color = series_color(chart.series.size());
    for (size_t i = 0; i < curve.atol.size(); ++i) {
      series.points.push_back(
          {curve.atol[i], curve.pass_rate[i],
           curve.backend + ": " + percent(curve.pass_rate[i]) + " pass at atol " + short_number(curve.atol[i])});
    }
    chart.series.push_back(std::move(series));
  }
  if (env.configured_atol > 0.0) {
    chart.markers.push_back({env.configured_atol, "configured atol " + short_number(env.configured_atol),
                             "the atol most checks of this baseline were judged with", "#57606a"});
  }
  return render_svg(chart);
}

// "4.21", "41.4", "412"; "-" for NaN (the precision of `run`'s latency table).
std::string ms_text(double value) {
  if (std::isnan(value)) {
    return "-";
  }
  char text[32];
  std::snprintf(text, sizeof text, value >= 100.0 ? "%.0f" : value >= 10.0 ? "%.1f" : "%.2f", value);
  return text;
}

// "cpu_bf16 · img0": the name of one latency line.
std::string latency_name(const LatencySeries& series) { return series.backend + " \u00b7 " + series.input; }

// One chart per experiment of `env`: a line per (backend, input), the median ms over commits,
// on a log scale when the medians drawn span more than a decade.
std::string latency_charts(const TrendData& trend, const EnvSeries& env, const std::vector<LatencySeries>& shown,
                           const TrendHtmlOptions& options) {
  std::string html;
  for (size_t first = 0; first < shown.size();) {
    const std::string& experiment = shown[first].experiment;
    size_t end = first;
    while (end < shown.size() && shown[end].experiment == experiment) {
      ++end;
    }
    LineChart chart = time_chart(trend, "Latency per backend: " + experiment + " (environment " + env.env_key + ")",
                                 "median ms per forward");
    double low = INFINITY;
    double high = 0.0;
    for (size_t i = first; i < end && chart.series.size() < options.max_latency_lines; ++i) {
      const LatencySeries& latency = shown[i];
      ChartSeries series;
      series.name = latency_name(latency) + (latency.reference ? " (reference)" : "");
      series.color = series_color(chart.series.size());
      series.dashed = latency.reference;
      for (size_t p = 0; p < env.points.size() && p < latency.median_ms.size(); ++p) {
        size_t commit = env.points[p].commit;
        double median = latency.median_ms[p];
        double iqr = p < latency.iqr_ms.size() ? latency.iqr_ms[p] : std::nan("");
        ChartPoint point{static_cast<double>(commit), median > 0.0 ? median : std::nan(""), ""};
        if (median > 0.0) {
          low = std::min(low, median);
          high = std::max(high, median);
          point.title = commit_hover_text(trend.commits[commit]) + "\n" + series.name + ": median " + ms_text(median) +
                        " ms, IQR " + (std::isnan(iqr) ? std::string("n/a") : ms_text(iqr) + " ms");
        }
        series.points.push_back(std::move(point));
      }
      chart.series.push_back(std::move(series));
    }
    chart.log_y = high > 10.0 * low;
    if (chart.log_y) {
      chart.y_label = "median ms per forward (log scale)";
    }
    html += render_svg(chart);
    if (end - first > chart.series.size()) {
      html += "<p class=\"note\">" + std::to_string(end - first - chart.series.size()) +
              " more (backend, input) lines of <code>" + html_escape(experiment) + "</code> not drawn.</p>\n";
    }
    first = end;
  }
  return html;
}

// The newest baseline's medians of `env`, with each target's ratio to the reference on the same input.
std::string latency_table(const TrendData& trend, const EnvSeries& env, const std::vector<LatencySeries>& shown,
                          const TrendHtmlOptions& options) {
  if (env.points.empty()) {
    return "";
  }
  size_t newest = env.points.size() - 1;
  auto at = [&](const std::vector<double>& values) { return newest < values.size() ? values[newest] : std::nan(""); };
  std::string html = "<p class=\"note\">Newest baseline of this environment, <code>" +
                     html_escape(short_sha(trend.commits[env.points[newest].commit].sha)) +
                     "</code>:</p>\n<table><tr><th>experiment</th><th>input</th><th>backend</th><th>median ms</th>"
                     "<th>IQR ms</th><th>vs reference</th></tr>\n";
  double reference_ms = std::nan("");
  const LatencySeries* previous = nullptr;
  size_t rows = 0;
  for (const LatencySeries& latency : shown) {
    // The reference comes first among its input's series; an input whose reference never ran has none.
    if (previous == nullptr || previous->experiment != latency.experiment || previous->input != latency.input) {
      reference_ms = std::nan("");
    }
    previous = &latency;
    if (latency.reference) {
      reference_ms = at(latency.median_ms);
    }
    if (rows++ == options.max_latency_rows) {
      html += "<tr><td colspan=\"6\">... and " + std::to_string(shown.size() - options.max_latency_rows) +
              " more rows</td></tr>\n";
      break;
    }
    LatencyRow row{latency.experiment,    latency.input,      latency.backend, latency.reference,
                   at(latency.median_ms), at(latency.iqr_ms), reference_ms};
    html += "<tr><td><code>" + html_escape(latency.experiment) + "</code></td><td><code>" + html_escape(latency.input) +
            "</code></td><td><code>" + html_escape(latency.backend) + "</code>" +
            (latency.reference ? " (reference)" : "") + "</td><td class=\"num\">" + ms_text(row.median_ms) +
            "</td><td class=\"num\">" + ms_text(row.iqr_ms) + "</td><td class=\"num\">" + latency_ratio(row) +
            "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string latency_section(const TrendData& trend, const TrendHtmlOptions& options) {
  std::string html =
      "<h2 id=\"latency\">Latency per backend</h2>\n<p class=\"note\">Median milliseconds of one forward per "
      "backend and input, over commits: each baseline's steady-state latency (the median and interquartile range "
      "of the timed forwards after warm-up, as <code>run</code> recorded them; hover a point for its IQR and "
      "commit). Latency is information, never gated. It depends on the machine: lines are drawn per environment "
      "only (its key includes the CPU's instruction set and the thread count, not the CPU model or the load, so "
      "compare points with care). Dashed: the reference. Gaps: the backend did not run there, or the baseline "
      "has no timings. An experiment of more than " +
      std::to_string(k_latency_inputs_shown) +
      " inputs is drawn as one line per backend, at each commit the median over its inputs (of the medians and "
      "of the IQRs), as <code>run</code>'s table shows it.</p>\n";
  bool any = false;
  for (const auto& env : trend.envs) {
    if (env.latency.empty()) {
      continue;
    }
    any = true;
    const std::vector<LatencySeries> shown = collapse_latency_inputs(env.latency, k_latency_inputs_shown);
    html += latency_charts(trend, env, shown, options);
    html += latency_table(trend, env, shown, options);
  }
  if (!any) {
    html +=
        "<p class=\"note\">No baseline on these commits carries latency (run files from before timings, or "
        "nothing ran).</p>\n";
  }
  return html;
}

}  // namespace

std::string commit_hover_text(const CommitDetails& commit) {
  return short_sha(commit.sha) + " " + commit.subject + "\n" + format_commit_date(commit) + ", " + commit.author;
}

std::string render_trend_html(const TrendData& trend, const TrendHtmlOptions& options) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>driftgate trend: "
       << html_escape(trend.branch) << "</title>\n<style>" << k_style << "</style></head><body>\n";
  html << "<h1>driftgate trend: <code>" << html_escape(trend.branch) << "</code></h1>\n<p class=\"note\">"
       << trend.commits.size() << " first-parent commits, " << trend.baselines << " baselines in " << trend.envs.size()
       << " environment" << (trend.envs.size() == 1 ? "" : "s") << ", " << trend.steps.size() << " step change"
       << (trend.steps.size() == 1 ? "" : "s") << ", " << trend.markers.size() << " environment change"
       << (trend.markers.size() == 1 ? "" : "s") << ". Hover a point for its commit.</p>\n";
  html << "<p class=\"note\"><a href=\"#pass-rate\">pass rate</a> &#183; <a href=\"#environment-changes\">"
          "environment changes</a> &#183; <a href=\"#steps\">step changes</a> &#183; <a href=\"#max-error\">max "
          "error</a> &#183; <a href=\"#relative-error\">relative error</a> &#183; <a href=\"#sweep\">tolerance "
          "sweep</a> &#183; <a href=\"#latency\">latency</a> &#183; <a href=\"#layers\">per-layer error</a> "
          "&#183; <a href=\"#commits\">commits</a></p>\n";
  html << environments_section(trend);
  html << "<h2 id=\"pass-rate\">Pass rate</h2>\n" << pass_rate_chart(trend);
  html << markers_section(trend);
  html << steps_section(trend, options);
  html << "<h2 id=\"max-error\">Max error</h2>\n<p class=\"note\">Dashed: the largest and the median max_abs over all "
          "checks; "
          "solid: up to "
       << options.max_check_lines
       << " checks, those with a step change first, then those with the largest newest error. Errors below 1e-12 "
          "(exact zeros included) are drawn at 1e-12.</p>\n";
  for (const auto& env : trend.envs) {
    html << error_chart(trend, env, options);
  }
  html << "<h2 id=\"relative-error\">Relative error</h2>\n<p class=\"note\">The same checks' max_abs divided by "
          "the largest |reference| value of their output (the output's scale): rescaling the logits moves max_abs by "
          "the scale factor and leaves this line where it was. Drawn where the reference is not all zeros.</p>\n";
  for (const auto& env : trend.envs) {
    html << error_chart(trend, env, options, ErrorMetric{true});
  }
  html << "<h2 id=\"sweep\">Tolerance sweep</h2>\n<p class=\"note\">Pass rate of the newest baseline of each "
          "environment had it "
          "been judged with another atol, computed from each check's recorded <code>min_atol</code> without "
          "re-running, under the assert_close rule (|a-b| &lt;= atol + rtol*|b|, at each check's configured rtol). "
          "Checks that fail for another reason (crash, shape, non-finite) never pass. Task checks (tier 3) are "
          "judged by their task tolerances, not by atol: they are counted apart, below each chart.</p>\n";
  for (const auto& env : trend.envs) {
    html << sweep_chart(env, trend);
    if (!env.task_rates.empty()) {
      html << "<p class=\"note\">Task checks of this baseline (not in the curves):";
      for (const auto& [backend, rate] : env.task_rates) {
        html << " <code>" << html_escape(backend) << "</code> " << rate.passed << "/" << rate.counted << " pass ("
             << percent(pass_fraction(rate)) << ")" << (&rate == &env.task_rates.back().second ? "." : ";");
      }
      html << "</p>\n";
    }
  }
  html << latency_section(trend, options);
  html << layers_section(trend);
  html << commits_section(trend);
  html << "</body></html>\n";
  return html.str();
}

}  // namespace driftgate

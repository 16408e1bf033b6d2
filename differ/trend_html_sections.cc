#include "differ/trend_html_sections.h"

#include <cmath>
#include <map>
#include <sstream>

#include "differ/html_escape.h"
#include "differ/svg_chart.h"

namespace driftgate {

namespace {

constexpr size_t k_max_layer_charts = 12;

// Passed and counted over all backends of one point.
BackendRate total_rate(const TrendPoint& point) {
  BackendRate total;
  for (const auto& rate : point.rates) {
    total.passed += rate.passed;
    total.counted += rate.counted;
  }
  return total;
}

std::string commit_cell(const CommitDetails& commit) {
  return "<code title=\"" + html_escape(commit.sha) + "\">" + html_escape(short_sha(commit.sha)) + "</code>";
}

std::string step_factor(const StepChange& step) {
  double factor = step.after / step.before;
  if (factor >= 1.0) {
    return "<span class=\"up\">&#215;" + html_escape(short_number(factor)) + " worse</span>";
  }
  return "<span class=\"down\">&#215;" + html_escape(short_number(1.0 / factor)) + " better</span>";
}

// A layer's name without its " (source.py:line)" suffix, for the marker; the tooltip keeps all of it.
std::string layer_short_name(const std::string& name) {
  size_t source = name.rfind(" (");
  return source == std::string::npos || source == 0 ? name : name.substr(0, source);
}

// The axis shows the module path ("layer2.0.conv1"), or the op for top-level values ("aten::flatten#1").
std::string layer_tick_label(const std::string& name) {
  std::string short_name = layer_short_name(name);
  size_t slash = short_name.find('/');
  if (slash == std::string::npos) {
    return short_name;
  }
  return slash == 0 ? short_name.substr(1) : short_name.substr(0, slash);
}

std::string layer_chart(const TrendData& trend, const LayerProfile& profile) {
  LineChart chart;
  chart.title = profile.check_id + " at " + short_sha(trend.commits[profile.commit].sha) + " (environment " +
                profile.env_key + ")";
  chart.x_label = "layer (network order; gaps: fused or removed by the target, not observable)";
  chart.y_label = "range-normalized error (log)";
  chart.log_y = true;
  chart.height = 260;
  ChartSeries series;
  series.name = "target vs reference";
  series.color = series_color(0);
  ChartSeries floor;
  floor.name = "fp32 noise floor (vs float64)";
  floor.color = series_color(2);
  ChartSeries threshold;
  threshold.name = "divergence threshold";
  threshold.color = "#57606a";
  threshold.dashed = true;
  size_t stride = profile.layers.size() / 10 + 1;
  for (size_t i = 0; i < profile.layers.size(); ++i) {
    const LayerError& layer = profile.layers[i];
    double x = static_cast<double>(i);
    if (layer.observable) {
      series.points.push_back({x, std::max(layer.delta, 1e-12), layer.layer + ": error " + short_number(layer.delta)});
    } else {
      series.points.push_back({x, std::nan(""), ""});  // a gap, not a fake zero
    }
    if (layer.noise_floor > 0.0) {
      floor.points.push_back(
          {x, std::max(layer.noise_floor, 1e-12), layer.layer + ": noise floor " + short_number(layer.noise_floor)});
    }
    if (layer.threshold > 0.0 && std::isfinite(layer.threshold)) {
      threshold.points.push_back({x, layer.threshold, ""});
    }
    if (i % stride == 0) {
      chart.x_ticks.emplace_back(x, layer_tick_label(layer.layer));
    }
    if (!profile.first_divergent.empty() && layer.layer == profile.first_divergent) {
      chart.markers.push_back({x, "first divergent: " + layer_short_name(layer.layer),
                               "first layer over its threshold: " + layer.layer, "#cf222e"});
    }
  }
  chart.series.push_back(std::move(series));
  if (!floor.points.empty()) {
    chart.series.push_back(std::move(floor));
  }
  if (!threshold.points.empty()) {
    chart.series.push_back(std::move(threshold));
  }
  return render_svg(chart);
}

}  // namespace

std::string short_sha(const std::string& sha) { return sha.substr(0, 7); }

std::string percent(double fraction) {
  if (std::isnan(fraction)) {
    return "n/a";
  }
  std::ostringstream text;
  text.precision(fraction == 1.0 || fraction == 0.0 ? 0 : 1);
  text << std::fixed << fraction * 100.0 << "%";
  return text.str();
}

std::string environments_section(const TrendData& trend) {
  std::ostringstream html;
  html
      << "<h2 id=\"environments\">Environments</h2>\n<table><tr><th>key</th><th>baselines</th><th>keyed fields (newest "
         "baseline)</th></tr>\n";
  for (const auto& env : trend.envs) {
    html << "<tr><td><code>" << html_escape(env.env_key) << "</code></td><td class=\"num\">" << env.points.size()
         << "</td><td>";
    std::string separator;
    for (const auto& [field, value] : env.environment.keyed) {
      html << separator << html_escape(field) << " <code>" << html_escape(value) << "</code>";
      separator = ", ";
    }
    html << "</td></tr>\n";
  }
  html << "</table>\n";
  return html.str();
}

std::string markers_section(const TrendData& trend) {
  std::ostringstream html;
  html << "<h2 id=\"environment-changes\">Environment changes</h2>\n";
  if (trend.markers.empty()) {
    html << "<p class=\"note\">None: consecutive baselines share their environment keys.</p>\n";
    return html.str();
  }
  html << "<table><tr><th>first commit</th><th>subject</th><th>from</th><th>to</th><th>what changed</th></tr>\n";
  for (const auto& marker : trend.markers) {
    const CommitDetails& commit = trend.commits[marker.commit];
    html << "<tr><td>" << commit_cell(commit) << "</td><td>" << html_escape(commit.subject) << "</td><td><code>"
         << html_escape(marker.from_key) << "</code></td><td><code>" << html_escape(marker.to_key) << "</code></td><td>"
         << html_escape(marker.description) << "</td></tr>\n";
  }
  html << "</table>\n";
  return html.str();
}

std::string steps_section(const TrendData& trend, const TrendHtmlOptions& options) {
  std::ostringstream html;
  html << "<h2 id=\"steps\">Step changes</h2>\n<p class=\"note\">Found by the least-squares segmentation of "
          "log10(max_abs) of "
          "each check "
          "within one environment, and across each environment change (median of the last baselines before it "
          "against the first after it; the environment column shows old &#8594; new); a step is listed when the "
          "level moves by at least the minimum effect. The "
          "change happened after the first commit of the range and at or before the second.</p>\n";
  if (trend.steps.empty()) {
    html << "<p>No step changes.</p>\n";
    return html.str();
  }
  // One row per cause (commit range and environment), worst first; every check below, folded.
  std::vector<StepGroup> groups = group_steps(trend.steps);
  html << "<table><tr><th>commit range</th><th>subject of the first new commit</th><th>environment</th>"
          "<th class=\"num\">checks</th><th>change</th><th>worst check</th></tr>\n";
  size_t group_rows = 0;
  for (const auto& group : groups) {
    if (group_rows++ == options.max_step_rows) {
      break;
    }
    const StepChange& first = *group.steps.front();
    const CommitDetails& after = trend.commits[first.first_after];
    html << "<tr><td>" << commit_cell(trend.commits[first.last_before]) << "..." << commit_cell(after) << "</td><td>"
         << html_escape(after.subject) << "</td><td>"
         << (first.from_env_key.empty() ? "" : "<code>" + html_escape(first.from_env_key) + "</code> &#8594; ")
         << "<code>" << html_escape(first.env_key) << "</code></td><td class=\"num\">" << group.steps.size()
         << "</td><td>" << html_escape(describe_factors(group)) << "</td><td><code>" << html_escape(first.check_id)
         << "</code></td></tr>\n";
  }
  html << "</table>\n";
  if (groups.size() > options.max_step_rows) {
    html << "<p class=\"note\">" << groups.size() - options.max_step_rows << " more commit ranges not listed.</p>\n";
  }
  html << "<details><summary>Every step change, one row per check (" << trend.steps.size() << ")</summary>\n";
  html << "<table><tr><th>commit range</th><th>subject of the first new commit</th><th>environment</th>"
          "<th>check</th><th class=\"num\">max_abs before</th><th class=\"num\">after</th><th>change</th></tr>\n";
  size_t rows = 0;
  for (const auto& step : trend.steps) {
    if (rows++ == options.max_step_rows) {
      break;
    }
    const CommitDetails& after = trend.commits[step.first_after];
    html << "<tr><td>" << commit_cell(trend.commits[step.last_before]) << "..." << commit_cell(after) << "</td><td>"
         << html_escape(after.subject) << "</td><td>"
         << (step.from_env_key.empty() ? "" : "<code>" + html_escape(step.from_env_key) + "</code> &#8594; ")
         << "<code>" << html_escape(step.env_key) << "</code></td><td><code>" << html_escape(step.check_id)
         << "</code></td><td class=\"num\">" << html_escape(short_number(step.before)) << "</td><td class=\"num\">"
         << html_escape(short_number(step.after)) << "</td><td>" << step_factor(step) << "</td></tr>\n";
  }
  html << "</table>\n";
  if (trend.steps.size() > options.max_step_rows) {
    html << "<p class=\"note\">" << trend.steps.size() - options.max_step_rows
         << " more step changes not listed.</p>\n";
  }
  html << "</details>\n";
  return html.str();
}

std::string layers_section(const TrendData& trend) {
  std::ostringstream html;
  html << "<h2 id=\"layers\">Per-layer error (tier 2)</h2>\n";
  if (trend.layers.empty()) {
    html << "<p class=\"note\">No baseline on these commits carries a tier-2 per-layer profile (the "
            "<code>localization</code> object the runner adds to failing checks with <code>activations: "
            "on_failure</code>, or to every check with <code>always</code>), so there are no per-layer curves to "
            "draw.</p>\n";
    return html.str();
  }
  html << "<p class=\"note\">The newest tier-2 profile of each check that has one: the target's error against the "
          "reference at every layer, the fp32 noise floor (float32 rounding alone) and the threshold above which a "
          "layer counts as divergent; the first divergent layer is marked.</p>\n";
  size_t drawn = 0;
  for (const auto& profile : trend.layers) {
    if (drawn++ == k_max_layer_charts) {
      html << "<p class=\"note\">" << trend.layers.size() - k_max_layer_charts << " more profiles not drawn.</p>\n";
      break;
    }
    html << layer_chart(trend, profile);
  }
  return html.str();
}

std::string commits_section(const TrendData& trend) {
  std::ostringstream html;
  html << "<h2 "
          "id=\"commits\">Commits</h2>\n<table><tr><th>#</th><th>commit</th><th>subject</th><th>author</th><th>date</"
          "th>";
  std::vector<std::map<size_t, BackendRate>> rates(trend.envs.size());
  for (size_t e = 0; e < trend.envs.size(); ++e) {
    html << "<th>pass rate <code>" << html_escape(trend.envs[e].env_key.substr(0, 8)) << "</code></th>";
    for (const auto& point : trend.envs[e].points) {
      rates[e][point.commit] = total_rate(point);
    }
  }
  html << "</tr>\n";
  for (size_t c = trend.commits.size(); c-- > 0;) {
    const CommitDetails& commit = trend.commits[c];
    html << "<tr><td class=\"num\">" << c + 1 << "</td><td>" << commit_cell(commit) << "</td><td>"
         << html_escape(commit.subject) << "</td><td>" << html_escape(commit.author) << "</td><td>"
         << html_escape(format_commit_date(commit)) << "</td>";
    for (const auto& env_rates : rates) {
      auto it = env_rates.find(c);
      if (it == env_rates.end()) {
        html << "<td class=\"num\">&#8212;</td>";
        continue;
      }
      html << "<td class=\"num\">" << percent(pass_fraction(it->second)) << " (" << it->second.passed << "/"
           << it->second.counted << ")</td>";
    }
    html << "</tr>\n";
  }
  html << "</table>\n";
  return html.str();
}

}  // namespace driftgate

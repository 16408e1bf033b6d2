// The trend renderers: HTML (inline SVG, escaped text, per-layer charts when
// profiles exist), markdown (table, escaped cells, mermaid chart) and the SVG chart.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "differ/html_escape.h"
#include "differ/latency.h"
#include "differ/svg_chart.h"
#include "differ/trend.h"
#include "differ/trend_html.h"
#include "differ/trend_markdown.h"

namespace driftgate {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t found = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++found;
  }
  return found;
}

// Three commits of one environment, one check stepping up at the third; the check id
// and a subject carry markup that must come out as text.
TrendData sample_trend() {
  TrendData trend;
  trend.branch = "main";
  for (int i = 0; i < 3; ++i) {
    trend.commits.push_back(
        {std::string(40, static_cast<char>('a' + i)), "subject " + std::to_string(i), "dev", 1767225600 + 3600 * i, 0});
  }
  trend.commits[2].subject = "fix <script>alert(1)</script> | pipe";
  EnvSeries env;
  env.env_key = "0123456789abcdef";
  env.environment.keyed["onednn"] = "3.1";
  env.backends = {"frozen"};
  for (size_t c = 0; c < 3; ++c) {
    TrendPoint point;
    point.commit = c;
    point.rates = {BackendRate{c == 2 ? 0 : 1, 1}};
    env.points.push_back(point);
  }
  env.checks.push_back({"m/<in>/cpu_fp32~frozen/out", "frozen", {1e-6, 1e-6, 1e-3}});
  env.sweep.push_back(make_sweep_curve("frozen", {1e-3}, 5));
  env.configured_atol = 1e-4;
  trend.envs.push_back(env);
  trend.steps.push_back({env.env_key, env.checks[0].id, 1, 2, 1e-6, 1e-3});
  trend.markers.push_back({1, "fedcba9876543210", env.env_key, "onednn 2.6.3 -> 3.1"});
  trend.baselines = 3;
  return trend;
}

TEST(HtmlEscapeTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(markdown_cell_escape("a|b `c`\nd<e>"), "a&#124;b &#96;c&#96; d&lt;e&gt;");
  EXPECT_EQ(html_escape("a\xE2\x80\xAE"
                        "b\x01"),
            "a\\u202eb\\x01");
}

TEST(TrendHtmlTest, IsOneSelfContainedPageWithEscapedText) {
  std::string html = render_trend_html(sample_trend(), TrendHtmlOptions{});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  EXPECT_EQ(count(html, "<svg"), 4u);  // pass rate, max error, relative error, sweep
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("fix &lt;script&gt;alert(1)&lt;/script&gt; | pipe"), std::string::npos);
  EXPECT_NE(html.find("m/&lt;in&gt;/cpu_fp32~frozen/out"), std::string::npos);
  EXPECT_EQ(html.find("m/<in>"), std::string::npos);
}

TEST(TrendHtmlTest, ShowsStepsMarkersAndHoverText) {
  std::string html = render_trend_html(sample_trend(), TrendHtmlOptions{});
  EXPECT_NE(html.find(">bbbbbbb</code>...<code title=\"" + std::string(40, 'c') + "\">ccccccc</code>"),
            std::string::npos);
  EXPECT_NE(html.find("&#215;1000 worse"), std::string::npos);
  EXPECT_NE(html.find("onednn 2.6.3 -&gt; 3.1</text>"), std::string::npos);
  EXPECT_NE(html.find("<title>ccccccc fix &lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("2026-01-01 02:00 +0000, dev"), std::string::npos);
  EXPECT_NE(html.find("no per-layer curves to draw"), std::string::npos);
}

TEST(TrendHtmlTest, MarksTheStepOnTheErrorChartBelowTheEnvironmentLabel) {
  std::string html = render_trend_html(sample_trend(), TrendHtmlOptions{});
  size_t chart = html.find("Max abs error per check");
  ASSERT_NE(chart, std::string::npos);
  std::string svg = html.substr(chart, html.find("</svg>", chart) - chart);
  EXPECT_NE(svg.find("<title>step change at bbbbbbb...ccccccc:\nm/&lt;in&gt;/cpu_fp32~frozen/out: max_abs 1e-06 -&gt; "
                     "0.001</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("step \u00d71000 worse</text>"), std::string::npos) << svg;
  // The environment label sits on the first line (y 46), the step label one line lower (y 59).
  EXPECT_NE(svg.find("y=\"46\" fill=\"#b45309\">onednn 2.6.3 -&gt; 3.1</text>"), std::string::npos) << svg;
  size_t step_label = svg.find("y=\"59\" fill=\"#cf222e\">step");
  ASSERT_NE(step_label, std::string::npos) << svg;
  EXPECT_GT(step_label, svg.rfind("<g class=\"series\"")) << "labels are drawn over the lines, on a white box";
  size_t pass_chart = html.find("Pass rate per target backend");
  EXPECT_EQ(html.substr(pass_chart, html.find("</svg>", pass_chart) - pass_chart).find("step change at"),
            std::string::npos)
      << "steps are per check: only the error chart marks them";
}

TEST(TrendHtmlTest, LayerChartLeavesGapsMarksTheFirstDivergentLayerAndDrawsThresholds) {
  TrendData trend = sample_trend();
  LayerProfile profile{trend.envs[0].env_key, "m/x/cpu_fp32~frozen/out", 2, {}, "layer2/aten::add#1 (resnet.py:9)"};
  profile.layers = {{"conv1/aten::_convolution#1 (conv.py:459)", 1e-7, 1e-8, 1e-5, true},
                    {"bn1/aten::batch_norm#1 (functional.py:2450)", 0.0, 0.0, 1e-5, false},
                    {"layer2/aten::add#1 (resnet.py:9)", 1e-3, 2e-7, 1e-5, true}};
  trend.layers.push_back(profile);
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  size_t at = html.find("<svg", html.find("id=\"layers\""));
  std::string svg = html.substr(at, html.find("</svg>", at) - at);
  EXPECT_EQ(svg.find("bn1/aten::batch_norm#1 (functional.py:2450): error"), std::string::npos)
      << "a fused layer has no error to draw";
  EXPECT_EQ(count(svg.substr(0, svg.find("</g>", svg.find("<g class=\"series\""))), " M"), 2u)
      << "the not-observable layer breaks the error line";
  EXPECT_NE(svg.find(">first divergent: layer2/aten::add#1</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">divergence threshold</text>"), std::string::npos);
  EXPECT_NE(svg.find(">conv1</text>"), std::string::npos) << "ticks name the module";
  EXPECT_EQ(svg.find("(conv.py:459)</text>"), std::string::npos) << "no source suffix on the axis";
}

TEST(TrendHtmlTest, DrawsPerLayerCurvesWhenProfilesExist) {
  TrendData trend = sample_trend();
  trend.layers.push_back(
      {trend.envs[0].env_key,
       "m/<in>/cpu_fp32~frozen/out",
       2,
       {{"conv1", 1e-7, 1e-8, 0.0, true}, {"layer1.0.bn<1>", 1e-5, 0.0, 0.0, true}, {"fc", 1e-3, 2e-7, 0.0, true}},
       ""});
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  EXPECT_EQ(count(html, "<svg"), 5u);  // the four above and the per-layer curves
  EXPECT_EQ(html.find("no per-layer curves to draw"), std::string::npos);
  EXPECT_NE(html.find("layer1.0.bn&lt;1&gt;: error 1e-05"), std::string::npos);
  EXPECT_NE(html.find("fc: noise floor 2e-07"), std::string::npos);
  EXPECT_EQ(html.find("layer1.0.bn&lt;1&gt;: noise floor"), std::string::npos) << "a zero floor is not drawn";
  EXPECT_NE(html.find(">conv1</text>"), std::string::npos);
}

// sample_trend() with latency: experiment m on input <in> (markup that must come out as
// text), reference cpu_fp32 2.0, 2.1, 2.2 ms and frozen 1.0, nothing at commit 1, 1.3 ms;
// experiment n: frozen alone, 100 ms at commit 2.
TrendData latency_trend() {
  const double nan = std::nan("");
  TrendData trend = sample_trend();
  trend.envs[0].latency = {{"m", "<in>", "cpu_fp32", true, {2.0, 2.1, 2.2}, {0.1, 0.2, 0.3}},
                           {"m", "<in>", "frozen", false, {1.0, nan, 1.3}, {nan, nan, 0.05}},
                           {"n", "x", "frozen", false, {nan, nan, 100.0}, {nan, nan, 4.0}}};
  return trend;
}

TEST(TrendHtmlTest, DrawsOneLatencyChartPerExperimentWithTheMediansOverCommits) {
  std::string html = render_trend_html(latency_trend(), TrendHtmlOptions{});
  EXPECT_EQ(count(html, "<svg"), 6u);  // sample_trend's 4, and one latency chart per experiment
  size_t chart = html.find("Latency per backend: m (environment 0123456789abcdef)</text>");
  ASSERT_NE(chart, std::string::npos);
  size_t svg_at = html.rfind("<svg", chart);
  std::string svg = html.substr(svg_at, html.find("</svg>", chart) - svg_at);
  EXPECT_NE(svg.find(">median ms per forward</text>"), std::string::npos) << "1.0 to 2.2 ms: a linear axis\n" << svg;
  EXPECT_EQ(svg.find("log scale"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>ccccccc fix &lt;script&gt;alert(1)&lt;/script&gt; | pipe\n2026-01-01 02:00 +0000, dev\n"
                     "frozen \u00b7 &lt;in&gt;: median 1.30 ms, IQR 0.05 ms</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("frozen \u00b7 &lt;in&gt;: median 1.00 ms, IQR n/a</title>"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "frozen \u00b7 &lt;in&gt;: median"), 2u) << "no point where nothing ran";
  EXPECT_NE(svg.find("cpu_fp32 \u00b7 &lt;in&gt; (reference): median 2.10 ms, IQR 0.20 ms"), std::string::npos);
  EXPECT_EQ(svg.find("\u00b7 x"), std::string::npos) << "experiment n has its own chart";
  EXPECT_EQ(html.find("<in>"), std::string::npos);
  EXPECT_NE(html.find("Latency per backend: n (environment 0123456789abcdef)</text>"), std::string::npos);
  // The newest baseline's table: medians, ranges and the ratio to the reference on the same input;
  // input x has no reference time, so no ratio.
  EXPECT_NE(html.find("<td><code>&lt;in&gt;</code></td><td><code>frozen</code></td><td class=\"num\">1.30</td><td "
                      "class=\"num\">0.05</td><td class=\"num\">x0.59</td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<td><code>x</code></td><td><code>frozen</code></td><td class=\"num\">100</td><td "
                      "class=\"num\">4.00</td><td class=\"num\"></td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<code>cpu_fp32</code> (reference)</td><td class=\"num\">2.20</td>"), std::string::npos);
}

TEST(TrendHtmlTest, LatencyOverADecadeIsOnALogScaleAndLinesBeyondTheLimitAreCounted) {
  TrendData trend = latency_trend();
  trend.envs[0].latency[0].median_ms[0] = 0.2;  // the reference from 0.2 to 2.2 ms: more than a decade
  TrendHtmlOptions options;
  options.max_latency_lines = 1;
  std::string html = render_trend_html(trend, options);
  size_t chart = html.find("Latency per backend: m (environment");
  ASSERT_NE(chart, std::string::npos);
  size_t svg_at = html.rfind("<svg", chart);
  std::string svg = html.substr(svg_at, html.find("</svg>", chart) - svg_at);
  EXPECT_NE(svg.find(">median ms per forward (log scale)</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("frozen \u00b7"), std::string::npos) << "one line: the reference";
  EXPECT_NE(html.find("1 more (backend, input) lines of <code>m</code> not drawn."), std::string::npos);
}

TEST(TrendMarkdownTest, LatencyTableOfTheNewestBaselineWithTheChangeSinceTheOldest) {
  std::string md = render_trend_markdown(latency_trend(), TrendMarkdownOptions{});
  EXPECT_NE(md.find("**Latency per backend**, environment `01234567` at `ccccccc`"), std::string::npos) << md;
  EXPECT_NE(md.find("| m | &lt;in&gt; | cpu_fp32 (reference) | 2.20 | 0.30 |  | 2.00 (`aaaaaaa`) | +10% |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| m | &lt;in&gt; | frozen | 1.30 | 0.05 | x0.59 | 1.00 (`aaaaaaa`) | +30% |\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| n | x | frozen | 100 | 4.00 |  |  |  |\n"), std::string::npos) << md;
  EXPECT_EQ(render_trend_markdown(sample_trend(), TrendMarkdownOptions{}).find("Latency"), std::string::npos);
}

TEST(TrendLatencyCollapseTest, AnExperimentOfManyInputsIsOneLinePerBackendOfMedians) {
  const double nan = std::nan("");
  // Experiment m on 4 inputs (more than k_latency_inputs_shown = 3), n on 1.
  std::vector<LatencySeries> latency = {
      {"m", "a", "cpu_fp32", true, {1, 4}, {0.1, nan}},    {"m", "a", "frozen", false, {10, nan}, {1, nan}},
      {"m", "b", "cpu_fp32", true, {2, 8}, {0.3, nan}},    {"m", "b", "frozen", false, {20, nan}, {2, nan}},
      {"m", "c", "cpu_fp32", true, {3, 6}, {0.2, nan}},    {"m", "c", "frozen", false, {30, nan}, {nan, nan}},
      {"m", "d", "cpu_fp32", true, {nan, 10}, {nan, nan}}, {"m", "d", "frozen", false, {40, nan}, {4, nan}},
      {"n", "x", "frozen", false, {5, 6}, {0.5, 0.6}}};
  ASSERT_EQ(k_latency_inputs_shown, 3u);
  std::vector<LatencySeries> shown = collapse_latency_inputs(latency, k_latency_inputs_shown);
  ASSERT_EQ(shown.size(), 3u);
  EXPECT_EQ(shown[0].input, "4 inputs");
  EXPECT_EQ(shown[0].backend, "cpu_fp32");
  EXPECT_TRUE(shown[0].reference);
  ASSERT_EQ(shown[0].median_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(shown[0].median_ms[0], 2.0);  // median of 1, 2, 3 (d has none)
  EXPECT_DOUBLE_EQ(shown[0].median_ms[1], 7.0);  // of 4, 8, 6, 10: (6 + 8) / 2
  EXPECT_DOUBLE_EQ(shown[0].iqr_ms[0], 0.2);     // of 0.1, 0.3, 0.2
  EXPECT_TRUE(std::isnan(shown[0].iqr_ms[1]));
  EXPECT_EQ(shown[1].backend, "frozen");
  EXPECT_FALSE(shown[1].reference);
  EXPECT_DOUBLE_EQ(shown[1].median_ms[0], 25.0);  // of 10, 20, 30, 40
  EXPECT_TRUE(std::isnan(shown[1].median_ms[1]));
  EXPECT_DOUBLE_EQ(shown[1].iqr_ms[0], 2.0);  // of 1, 2, 4
  EXPECT_EQ(shown[2].input, "x");             // one input: as it is
  EXPECT_EQ(shown[2].median_ms, (std::vector<double>{5, 6}));

  TrendData trend = sample_trend();
  trend.commits.erase(trend.commits.begin());
  trend.envs[0].points.erase(trend.envs[0].points.begin());
  trend.envs[0].points[0].commit = 0;
  trend.envs[0].points[1].commit = 1;
  trend.envs[0].checks[0].max_abs = {1e-6, 1e-3};
  trend.envs[0].checks[0].relative = {};
  trend.steps.clear();
  trend.markers.clear();
  trend.envs[0].latency = latency;
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  EXPECT_NE(html.find("frozen \u00b7 4 inputs: median 25.0 ms, IQR 2.00 ms</title>"), std::string::npos) << html;
  EXPECT_EQ(html.find("frozen \u00b7 a"), std::string::npos);
  EXPECT_NE(html.find("<td><code>4 inputs</code></td><td><code>frozen</code></td><td class=\"num\">-</td>"),
            std::string::npos);
  std::string md = render_trend_markdown(trend, TrendMarkdownOptions{});
  EXPECT_NE(md.find("| m | 4 inputs | cpu_fp32 (reference) | 7.00 | - |  | 2.00 (`bbbbbbb`) | +250% |\n"),
            std::string::npos)
      << md;
}

TEST(TrendMarkdownTest, TableStepsAndMermaidChart) {
  std::string md = render_trend_markdown(sample_trend(), TrendMarkdownOptions{});
  EXPECT_NE(md.find("| 3 | `ccccccc` | fix &lt;script&gt;alert(1)&lt;/script&gt; &#124; pipe |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("0.0% (0/1) | 0.001 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- `bbbbbbb...ccccccc` m/&lt;in&gt;/cpu_fp32~frozen/out: max_abs 1e-06 -> 0.001"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("```mermaid\n%%{init: {\"themeVariables\": {\"xyChart\": {\"plotColorPalette\": \"#1f77b4\"}}}}%%\n"
                    "xychart-beta\n  title \"Pass rate, environment 0123456789abcdef\"\n"),
            std::string::npos)
      << md;
  EXPECT_NE(
      md.find("  x-axis \"commit # (as in the table)\" [\"1\", \"2\", \"3\"]\n  y-axis \"pass rate (%)\" 0 --> 100\n"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("line [100.0, 100.0, 0.0]\n```"), std::string::npos) << md;
}

// Mermaid draws every x label: long commit numbers keep fewer points, so labels never touch.
TEST(TrendMarkdownTest, MermaidKeepsAsManyNewestPointsAsTheirLabelsFit) {
  TrendData trend;
  trend.branch = "main";
  EnvSeries env;
  env.env_key = "0123456789abcdef";
  env.backends = {"frozen"};
  for (size_t c = 0; c < 1200; ++c) {
    trend.commits.push_back({std::string(40, 'a'), "s", "dev", 1767225600, 0});
    env.points.push_back({c, {BackendRate{1, 1}}});
  }
  trend.envs.push_back(env);
  std::string md = render_trend_markdown(trend, TrendMarkdownOptions{});
  EXPECT_NE(md.find("[\"1186\", "), std::string::npos) << "4-digit labels: the newest 15 points";
  EXPECT_EQ(md.find("\"1185\""), std::string::npos);
  EXPECT_NE(md.find(", \"1200\"]"), std::string::npos);
  trend.commits.resize(500);
  trend.envs[0].points.resize(500);
  md = render_trend_markdown(trend, TrendMarkdownOptions{});
  EXPECT_NE(md.find("[\"481\", "), std::string::npos) << "3-digit labels: the newest 20 points";
  EXPECT_EQ(md.find("\"480\""), std::string::npos);
}

TEST(SvgChartTest, LogAxisTicksAndGapsAtNaN) {
  LineChart chart;
  chart.log_y = true;
  chart.series.push_back({"s", "#000", {{0, 1e-6, "a"}, {1, std::nan(""), ""}, {2, 1e-3, "c"}, {3, 1e-4, ""}}});
  std::string svg = render_svg(chart);
  EXPECT_NE(svg.find(">1e-06</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0.001</text>"), std::string::npos);
  EXPECT_EQ(count(svg, " M"), 2u);       // the NaN breaks the line
  EXPECT_EQ(count(svg, "<circle"), 2u);  // only points with a title hover
}

TEST(SvgChartTest, ALogAxisEndsAtTheDecadeTheDataEndsOn) {
  LineChart chart;
  chart.log_x = true;
  chart.series.push_back({"s", "#000", {{1e-9, 0.5, "a"}, {1e-2, 1.0, "b"}}});
  std::string svg = render_svg(chart);
  EXPECT_NE(svg.find(">1e-09</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">0.01</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(">0.1</text>"), std::string::npos) << "no empty decade after the last point";
  EXPECT_EQ(svg.find(">1e-10</text>"), std::string::npos) << "no empty decade before the first point";
}

TEST(SvgChartTest, FitTextCutsToTheWidthAndKeepsShortText) {
  EXPECT_EQ(fit_text("conv1", 100), "conv1");
  std::string cut = fit_text(std::string(100, 'a'), 130);
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
  EXPECT_LE(estimated_text_width(cut), 130);
  EXPECT_GT(estimated_text_width(cut), 110);
  EXPECT_EQ(estimated_text_width("\u00d7\u00d7"), estimated_text_width("xx")) << "characters, not UTF-8 bytes";
}

// The x positions of the legend's line samples (the only 3 px wide lines), in drawing order.
// Plain string search: std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers.
std::vector<int> legend_lefts(const std::string& svg) {
  std::vector<int> lefts;
  const std::string start = "<line x1=\"";
  for (size_t at = svg.find(start); at != std::string::npos; at = svg.find(start, at + 1)) {
    size_t end = svg.find("/>", at);
    if (svg.substr(at, end - at).find("stroke-width=\"3\"") != std::string::npos) {
      lefts.push_back(std::stoi(svg.substr(at + start.size())));
    }
  }
  return lefts;
}

TEST(SvgChartTest, LegendColumnsAreAsWideAsTheLongestName) {
  LineChart chart;
  std::string long_name = "resnet18/chelsea_224/cpu_fp32~onednn_off_channels_last/logits";
  for (int i = 0; i < 4; ++i) {
    chart.series.push_back({long_name + std::to_string(i), "#000", {{0, 1, "a"}, {1, 2, "b"}}});
  }
  std::vector<int> lefts = legend_lefts(render_svg(chart));
  ASSERT_EQ(lefts.size(), 4u);
  int needed = estimated_text_width(long_name + "0");
  EXPECT_GE(lefts[1] - lefts[0], needed + 28) << "the second column starts after the first name ends";
  EXPECT_EQ(lefts[2], lefts[0]) << "two long names per row on a 1100 px chart";
  chart.series.resize(2);
  chart.series[0].name = "a";
  chart.series[1].name = "b";
  lefts = legend_lefts(render_svg(chart));
  EXPECT_EQ(lefts[1] - lefts[0], 160) << "short names keep a minimum column";
}

TEST(SvgChartTest, CrowdedTickLabelsAreCutAndEdgeMarkerLabelsReadLeftwards) {
  LineChart chart;
  for (int i = 0; i < 12; ++i) {
    chart.x_ticks.emplace_back(i, "layer" + std::to_string(i) + ".0.downsample.0/aten::_convolution#1");
  }
  chart.series.push_back({"s", "#000", {{0, 1, "a"}, {11, 2, "b"}}});
  chart.markers.push_back({11.0, "a long marker label near the right edge", "t"});
  std::string svg = render_svg(chart);
  EXPECT_EQ(svg.find("downsample.0/aten::_convolution#1</text>"), std::string::npos) << "labels are cut";
  EXPECT_NE(svg.find(">layer0.0....</text>"), std::string::npos) << "90 px between ticks: 9 characters and ..." << svg;
  EXPECT_NE(svg.find("text-anchor=\"end\" fill=\"#b45309\">a long marker label"), std::string::npos) << svg;
}

TEST(SvgChartTest, DenseSeriesKeepHoverDotsButDoNotDrawThem) {
  LineChart chart;
  ChartSeries sparse{"sparse", "#000", {}};
  ChartSeries dense{"dense", "#111", {}};
  for (int i = 0; i < 400; ++i) {
    dense.points.push_back({static_cast<double>(i), 1.0, "p" + std::to_string(i)});
    if (i % 40 == 0) {
      sparse.points.push_back({static_cast<double>(i), 2.0, "q" + std::to_string(i)});
    }
  }
  chart.series = {sparse, dense};
  std::string svg = render_svg(chart);
  EXPECT_EQ(count(svg, "<circle"), 410u) << "every titled point still hovers";
  EXPECT_EQ(count(svg, "fill=\"#111\" fill-opacity=\"0\"><title>p"), 400u) << "400 points in 1000 px: dots hidden";
  EXPECT_EQ(count(svg, "fill=\"#000\"><title>q"), 10u) << "100 px apart: dots drawn";
}

TEST(SvgChartTest, NonPositiveValuesAreLeftOutOnALogScale) {
  LineChart chart;
  chart.log_y = true;
  chart.series.push_back({"s", "#000", {{0, 0.0, "zero"}, {1, 1e-3, "one"}}});
  std::string svg = render_svg(chart);
  EXPECT_EQ(count(svg, "<circle"), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

}  // namespace
}  // namespace driftgate

// The trend renderers: HTML (inline SVG, escaped text, per-layer charts when
// profiles exist), markdown (table, escaped cells, mermaid chart) and the SVG chart.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "differ/html_escape.h"
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
}

TEST(TrendHtmlTest, IsOneSelfContainedPageWithEscapedText) {
  std::string html = render_trend_html(sample_trend(), TrendHtmlOptions{});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  EXPECT_EQ(count(html, "<svg"), 3u);  // pass rate, max error, sweep
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

TEST(TrendHtmlTest, DrawsPerLayerCurvesWhenProfilesExist) {
  TrendData trend = sample_trend();
  trend.layers.push_back({trend.envs[0].env_key,
                          "m/<in>/cpu_fp32~frozen/out",
                          2,
                          {{"conv1", 1e-7, 1e-8}, {"layer1.0.bn<1>", 1e-5, 0.0}, {"fc", 1e-3, 2e-7}}});
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  EXPECT_EQ(count(html, "<svg"), 4u);
  EXPECT_EQ(html.find("no per-layer curves to draw"), std::string::npos);
  EXPECT_NE(html.find("layer1.0.bn&lt;1&gt;: error 1e-05"), std::string::npos);
  EXPECT_NE(html.find("fc: noise floor 2e-07"), std::string::npos);
  EXPECT_EQ(html.find("layer1.0.bn&lt;1&gt;: noise floor"), std::string::npos) << "a zero floor is not drawn";
  EXPECT_NE(html.find(">conv1</text>"), std::string::npos);
}

TEST(TrendMarkdownTest, TableStepsAndMermaidChart) {
  std::string md = render_trend_markdown(sample_trend(), TrendMarkdownOptions{});
  EXPECT_NE(md.find("| `ccccccc` | fix &lt;script&gt;alert(1)&lt;/script&gt; &#124; pipe |"), std::string::npos) << md;
  EXPECT_NE(md.find("0.0% (0/1) | 0.001 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- `bbbbbbb...ccccccc` m/&lt;in&gt;/cpu_fp32~frozen/out: max_abs 1e-06 -> 0.001"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("```mermaid\nxychart-beta\n"), std::string::npos);
  EXPECT_NE(md.find("x-axis [\"aaaaaaa\", \"bbbbbbb\", \"ccccccc\"]"), std::string::npos) << md;
  EXPECT_NE(md.find("line [100.0, 100.0, 0.0]"), std::string::npos) << md;
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

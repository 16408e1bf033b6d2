// A small, dependency-free SVG line chart for reports that must open offline
// (a CI artifact, a mail attachment): axes, linear or log10 scales, series with
// hoverable points (<title> tooltips, no script), vertical event markers and a
// legend. Every piece of text is HTML-escaped here, so callers pass raw strings.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace driftgate {

struct ChartPoint {
  double x = 0.0;
  double y = 0.0;     // NaN: a gap in the line
  std::string title;  // tooltip; "" draws no hover point
};

struct ChartSeries {
  std::string name;
  std::string color;  // CSS colour
  std::vector<ChartPoint> points;
  bool dashed = false;
  double width = 1.5;
};

// A vertical line across the plot at x, e.g. an environment change.
struct ChartMarker {
  double x = 0.0;
  std::string label;  // short text at the top of the line
  std::string title;  // tooltip
  std::string color = "#b45309";
  int label_row = 0;  // 0: the label at the top of the plot; each row lower by one line (keeps labels apart)
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  double y_min = 0.0;  // with auto_y false; for log scales, positive
  double y_max = 1.0;
  bool auto_y = true;                                   // fit the y range to the data
  bool percent_y = false;                               // y tick labels as percentages of 1
  std::vector<std::pair<double, std::string>> x_ticks;  // explicit labelled ticks; empty: numeric ticks
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> markers;
  int width = 1100;
  int height = 300;  // of the plot area plus axes, without the legend
};

// The chart as an <svg> element (no XML prolog), sized width x (height + legend).
std::string render_svg(const LineChart& chart);

// Colour number i of a palette that stays distinguishable for ~10 series.
const char* series_color(size_t i);

// A number for an axis or a table: "1e-05", "0.25", "3.2e+02".
std::string short_number(double value);

// The width in pixels `text` takes in the chart's 11px sans-serif font, estimated
// generously (6.5 px per character) so that labels laid out by it do not touch.
int estimated_text_width(const std::string& text);

// `text` cut to at most `max_width` estimated pixels, ending in "..." when cut
// (the whole text stays available in the point tooltips).
std::string fit_text(const std::string& text, int max_width);

}  // namespace driftgate

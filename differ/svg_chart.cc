#include "differ/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "differ/html_escape.h"

namespace driftgate {

namespace {

constexpr int k_margin_left = 72;
constexpr int k_margin_right = 16;
constexpr int k_margin_top = 34;
constexpr int k_margin_bottom = 46;
constexpr int k_legend_row = 18;
constexpr int k_legend_min_item_width = 160;
constexpr int k_legend_swatch_width = 28;  // the line sample and the gap before the name
constexpr int k_legend_gap = 18;
constexpr double k_char_width = 6.5;  // px per character at 11px, generous for digits and capitals
constexpr int k_marker_label_row = 13;

// Maps data coordinates to pixels on one axis, linear or log10.
class Scale {
 public:
  Scale(double low, double high, double from, double to, bool log)
      : m_log(log), m_low(transform(low)), m_high(transform(high)), m_from(from), m_to(to) {
    if (!(m_high > m_low)) {
      m_high = m_low + 1.0;
    }
  }
  double transform(double value) const { return m_log ? std::log10(value) : value; }
  double operator()(double value) const {
    return m_from + (transform(value) - m_low) / (m_high - m_low) * (m_to - m_from);
  }

 private:
  bool m_log;
  double m_low;
  double m_high;
  double m_from;
  double m_to;
};

std::string px(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

bool usable(double value, bool log) { return std::isfinite(value) && (!log || value > 0.0); }

// The data range of the x or y values of all series, widened when empty or flat.
std::pair<double, double> data_range(const LineChart& chart, bool x_axis) {
  bool log = x_axis ? chart.log_x : chart.log_y;
  double low = std::numeric_limits<double>::infinity();
  double high = -low;
  for (const auto& series : chart.series) {
    for (const auto& point : series.points) {
      double value = x_axis ? point.x : point.y;
      if (usable(value, log) && usable(x_axis ? point.y : point.x, x_axis ? chart.log_y : chart.log_x)) {
        low = std::min(low, value);
        high = std::max(high, value);
      }
    }
  }
  if (x_axis) {
    for (const auto& marker : chart.markers) {
      low = std::min(low, marker.x);
      high = std::max(high, marker.x);
    }
    for (const auto& tick : chart.x_ticks) {
      low = std::min(low, tick.first);
      high = std::max(high, tick.first);
    }
  }
  if (!std::isfinite(low)) {
    return log ? std::make_pair(1e-8, 1.0) : std::make_pair(0.0, 1.0);
  }
  if (log) {
    // Whole decades around the data; a value on a decade (1e-4, up to log10's rounding) ends the axis there.
    return {std::pow(10.0, std::floor(std::log10(low) + 1e-9)), std::pow(10.0, std::ceil(std::log10(high) - 1e-9))};
  }
  if (high == low) {
    return {low - 0.5, high + 0.5};
  }
  return {low, high};
}

// Tick positions: whole decades on a log scale, ~6 round steps on a linear one.
std::vector<double> ticks(double low, double high, bool log) {
  std::vector<double> values;
  if (log) {
    int first = static_cast<int>(std::ceil(std::log10(low) - 1e-9));
    int last = static_cast<int>(std::floor(std::log10(high) + 1e-9));
    int stride = std::max(1, (last - first) / 8 + 1);
    for (int e = first; e <= last; e += stride) {
      values.push_back(std::pow(10.0, e));
    }
    return values;
  }
  double raw = (high - low) / 6.0;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= raw) {
      break;
    }
  }
  for (double value = std::ceil(low / step) * step; value <= high + step * 1e-9; value += step) {
    values.push_back(std::fabs(value) < step * 1e-9 ? 0.0 : value);
  }
  return values;
}

constexpr double k_min_dot_spacing = 6.0;  // px between neighbouring points below which dots are hidden

// Draws the line and, per titled point, a dot carrying the tooltip. Where neighbouring points
// lie closer than k_min_dot_spacing the dots would merge into a band hiding the line, so they
// stay transparent: still there to hover (and enlarged on hover by the page's CSS), not drawn.
void draw_series(std::ostringstream& svg, const ChartSeries& series, const Scale& x, const Scale& y,
                 const LineChart& chart) {
  double spacing = std::numeric_limits<double>::infinity();
  for (size_t i = 1; i < series.points.size(); ++i) {
    if (usable(series.points[i].x, chart.log_x) && usable(series.points[i - 1].x, chart.log_x)) {
      spacing = std::min(spacing, std::fabs(x(series.points[i].x) - x(series.points[i - 1].x)));
    }
  }
  bool dense = spacing < k_min_dot_spacing;
  svg << "<g class=\"series\"><title>" << html_escape(series.name) << "</title>";
  std::string path;
  bool pen_down = false;
  for (const auto& point : series.points) {
    if (!usable(point.x, chart.log_x) || !usable(point.y, chart.log_y)) {
      pen_down = false;
      continue;
    }
    path += (pen_down ? " L" : " M") + px(x(point.x)) + " " + px(y(point.y));
    pen_down = true;
  }
  svg << "<path d=\"" << path << "\" fill=\"none\" stroke=\"" << html_escape(series.color) << "\" stroke-width=\""
      << px(series.width) << "\"" << (series.dashed ? " stroke-dasharray=\"5 3\"" : "") << "/>";
  for (const auto& point : series.points) {
    if (point.title.empty() || !usable(point.x, chart.log_x) || !usable(point.y, chart.log_y)) {
      continue;
    }
    svg << "<circle cx=\"" << px(x(point.x)) << "\" cy=\"" << px(y(point.y)) << "\" r=\"2.5\" fill=\""
        << html_escape(series.color) << "\"" << (dense ? " fill-opacity=\"0\"" : "") << "><title>"
        << html_escape(point.title) << "</title></circle>";
  }
  svg << "</g>\n";
}

void draw_axes(std::ostringstream& svg, const LineChart& chart, const Scale& x, const Scale& y,
               std::pair<double, double> x_range, std::pair<double, double> y_range, int plot_bottom, int plot_right) {
  svg << "<g class=\"axes\">";
  for (double value : ticks(y_range.first, y_range.second, chart.log_y)) {
    std::string label = chart.percent_y ? short_number(value * 100.0) + "%" : short_number(value);
    svg << "<line x1=\"" << k_margin_left << "\" x2=\"" << plot_right << "\" y1=\"" << px(y(value)) << "\" y2=\""
        << px(y(value)) << "\" class=\"grid\"/><text x=\"" << k_margin_left - 6 << "\" y=\"" << px(y(value) + 4)
        << "\" text-anchor=\"end\">" << html_escape(label) << "</text>";
  }
  std::vector<std::pair<double, std::string>> x_ticks = chart.x_ticks;
  if (x_ticks.empty()) {
    for (double value : ticks(x_range.first, x_range.second, chart.log_x)) {
      x_ticks.emplace_back(value, short_number(value));
    }
  }
  // Each label gets the room to its neighbours, so long names (layers) are cut rather than overlap.
  double spacing = plot_right - k_margin_left;
  for (size_t i = 1; i < x_ticks.size(); ++i) {
    spacing = std::min(spacing, std::fabs(x(x_ticks[i].first) - x(x_ticks[i - 1].first)));
  }
  for (const auto& [value, label] : x_ticks) {
    svg << "<line x1=\"" << px(x(value)) << "\" x2=\"" << px(x(value)) << "\" y1=\"" << plot_bottom << "\" y2=\""
        << plot_bottom + 5 << "\" class=\"tick\"/><text x=\"" << px(x(value)) << "\" y=\"" << plot_bottom + 18
        << "\" text-anchor=\"middle\">" << html_escape(fit_text(label, static_cast<int>(spacing) - 8)) << "</text>";
  }
  svg << "<rect x=\"" << k_margin_left << "\" y=\"" << k_margin_top << "\" width=\"" << plot_right - k_margin_left
      << "\" height=\"" << plot_bottom - k_margin_top << "\" class=\"frame\"/>";
  svg << "<text x=\"" << (k_margin_left + plot_right) / 2 << "\" y=\"" << plot_bottom + 38
      << "\" text-anchor=\"middle\" class=\"label\">" << html_escape(chart.x_label) << "</text>";
  svg << "<text transform=\"translate(14 " << (k_margin_top + plot_bottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\" class=\"label\">" << html_escape(chart.y_label) << "</text>";
  svg << "<text x=\"" << k_margin_left << "\" y=\"20\" class=\"title\">" << html_escape(chart.title) << "</text>";
  svg << "</g>\n";
}

// Legend columns as wide as the longest name (cut to the plot width), so names never run into the next.
int legend_item_width(const LineChart& chart) {
  int widest = 0;
  for (const auto& series : chart.series) {
    widest = std::max(widest, estimated_text_width(series.name));
  }
  int available = chart.width - k_margin_left - k_margin_right;
  return std::min(available, std::max(k_legend_min_item_width, k_legend_swatch_width + widest + k_legend_gap));
}

void draw_legend(std::ostringstream& svg, const LineChart& chart, int top, int per_row, int item_width) {
  for (size_t i = 0; i < chart.series.size(); ++i) {
    int column = static_cast<int>(i) % per_row;
    int row = static_cast<int>(i) / per_row;
    int left = k_margin_left + column * item_width;
    int middle = top + row * k_legend_row + 9;
    const ChartSeries& series = chart.series[i];
    svg << "<line x1=\"" << left << "\" x2=\"" << left + 22 << "\" y1=\"" << middle << "\" y2=\"" << middle
        << "\" stroke=\"" << html_escape(series.color) << "\" stroke-width=\"3\""
        << (series.dashed ? " stroke-dasharray=\"5 3\"" : "") << "/><text x=\"" << left + k_legend_swatch_width
        << "\" y=\"" << middle + 4 << "\">"
        << html_escape(fit_text(series.name, item_width - k_legend_swatch_width - k_legend_gap)) << "</text>";
  }
}

}  // namespace

const char* series_color(size_t i) {
  static const char* const k_palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                          "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
  return k_palette[i % (sizeof k_palette / sizeof k_palette[0])];
}

std::string short_number(double value) {
  if (!std::isfinite(value)) {
    return std::isnan(value) ? "n/a" : (value > 0 ? "inf" : "-inf");
  }
  char buffer[32];
  double magnitude = std::fabs(value);
  if (value == 0.0 || (magnitude >= 1e-3 && magnitude < 1e4)) {
    std::snprintf(buffer, sizeof buffer, "%.4g", value);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.2g", value);
  }
  return buffer;
}

int estimated_text_width(const std::string& text) {
  size_t characters = 0;
  for (unsigned char byte : text) {
    characters += (byte & 0xC0) != 0x80 ? 1 : 0;  // UTF-8 continuation bytes are part of one character
  }
  return static_cast<int>(std::ceil(static_cast<double>(characters) * k_char_width));
}

std::string fit_text(const std::string& text, int max_width) {
  if (estimated_text_width(text) <= max_width) {
    return text;
  }
  std::string cut;
  for (size_t i = 0; i < text.size(); ++i) {
    bool starts_character = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts_character && estimated_text_width(cut + "...") + static_cast<int>(k_char_width) > max_width) {
      break;
    }
    cut += text[i];
  }
  return cut + "...";
}

std::string render_svg(const LineChart& chart) {
  int item_width = legend_item_width(chart);
  int per_row = std::max(1, (chart.width - k_margin_left - k_margin_right) / item_width);
  int legend_rows = static_cast<int>((chart.series.size() + static_cast<size_t>(per_row) - 1) / per_row);
  int total_height = chart.height + legend_rows * k_legend_row + 6;
  int plot_right = chart.width - k_margin_right;
  int plot_bottom = chart.height - k_margin_bottom;
  std::pair<double, double> x_range = data_range(chart, true);
  std::pair<double, double> y_range =
      chart.auto_y ? data_range(chart, false) : std::make_pair(chart.y_min, chart.y_max);
  Scale x(x_range.first, x_range.second, k_margin_left + 8, plot_right - 8, chart.log_x);
  Scale y(y_range.first, y_range.second, plot_bottom, k_margin_top, chart.log_y);
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" << chart.width << "\" height=\""
      << total_height << "\" viewBox=\"0 0 " << chart.width << " " << total_height << "\" role=\"img\">\n";
  draw_axes(svg, chart, x, y, x_range, y_range, plot_bottom, plot_right);
  for (const auto& marker : chart.markers) {
    svg << "<g class=\"marker\"><title>" << html_escape(marker.title) << "</title><line x1=\"" << px(x(marker.x))
        << "\" x2=\"" << px(x(marker.x)) << "\" y1=\"" << k_margin_top << "\" y2=\"" << plot_bottom << "\" stroke=\""
        << html_escape(marker.color) << "\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/></g>\n";
  }
  for (const auto& series : chart.series) {
    draw_series(svg, series, x, y, chart);
  }
  // Marker labels last, on a white box, so that lines crossing them do not hide them. Each reads
  // rightwards from its line, or leftwards where it would leave the plot.
  for (const auto& marker : chart.markers) {
    int width = estimated_text_width(marker.label);
    bool left_of_line = x(marker.x) + 4 + width > plot_right;
    double text_x = left_of_line ? x(marker.x) - 4 : x(marker.x) + 4;
    int baseline = k_margin_top + 12 + k_marker_label_row * marker.label_row;
    svg << "<g class=\"marker\"><title>" << html_escape(marker.title) << "</title><rect x=\""
        << px(left_of_line ? text_x - width - 1 : text_x - 1) << "\" y=\"" << baseline - 10 << "\" width=\""
        << width + 2 << "\" height=\"" << k_marker_label_row << "\" fill=\"#fff\" fill-opacity=\"0.85\"/><text x=\""
        << px(text_x) << "\" y=\"" << baseline << "\"" << (left_of_line ? " text-anchor=\"end\"" : "") << " fill=\""
        << html_escape(marker.color) << "\">" << html_escape(marker.label) << "</text></g>\n";
  }
  draw_legend(svg, chart, chart.height, per_row, item_width);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace driftgate

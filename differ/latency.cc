#include "differ/latency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>

namespace driftgate {
namespace {

// What one (experiment, input, reference~target) prefix of check ids recorded.
struct PairTimes {
  CheckTimings timings;
  bool timed = false;
};

std::string format_ms(double value) {
  if (std::isnan(value)) {
    return "-";
  }
  char text[32];
  std::snprintf(text, sizeof text, value >= 100.0 ? "%.0f" : value >= 10.0 ? "%.1f" : "%.2f", value);
  return text;
}

}  // namespace

std::vector<LatencyRow> latency_rows(const RunDigest& run) {
  // Check ids are "<experiment>/<input>/<reference>~<target>/<output>": the id without its
  // output names the pair. A time of 0 means the backend produced nothing on the input.
  std::map<std::string_view, PairTimes> pairs;
  for (const CheckDigest& check : run.checks) {
    if (check.id.size() <= check.output.size()) {
      continue;
    }
    PairTimes& pair = pairs[check.id.substr(0, check.id.size() - check.output.size())];
    if (!pair.timed) {
      CheckTimings timings = timings_of(check);
      if (timings.target_ms > 0.0 || timings.reference_ms > 0.0) {
        pair.timings = timings;
        pair.timed = true;
      }
    }
  }
  std::vector<LatencyRow> rows;
  for (const ExperimentHeader& experiment : run.header.experiments) {
    for (const std::string& input : experiment.inputs) {
      LatencyRow reference{experiment.name, input, experiment.reference, true};
      std::vector<LatencyRow> targets;
      for (const std::string& target : experiment.targets) {
        LatencyRow row{experiment.name, input, target, false};
        auto it = pairs.find(make_check_id(experiment.name, input, experiment.reference, target, ""));
        if (it != pairs.end() && it->second.timed) {
          const CheckTimings& timings = it->second.timings;
          if (timings.target_ms > 0.0) {
            row.median_ms = timings.target_ms;
            row.iqr_ms = timings.target_iqr_ms;
          }
          if (timings.reference_ms > 0.0 && std::isnan(reference.median_ms)) {
            reference.median_ms = timings.reference_ms;
            reference.iqr_ms = timings.reference_iqr_ms;
          }
        }
        targets.push_back(std::move(row));
      }
      reference.reference_median_ms = reference.median_ms;
      rows.push_back(reference);
      for (LatencyRow& row : targets) {
        row.reference_median_ms = reference.median_ms;
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

std::string latency_ratio(const LatencyRow& row) {
  if (row.reference || std::isnan(row.median_ms) || std::isnan(row.reference_median_ms) ||
      row.reference_median_ms <= 0.0) {
    return "";
  }
  char text[32];
  std::snprintf(text, sizeof text, "x%.2f", row.median_ms / row.reference_median_ms);
  return text;
}

std::string render_latency_text(const std::vector<LatencyRow>& rows) {
  if (std::none_of(rows.begin(), rows.end(), [](const LatencyRow& row) { return !std::isnan(row.median_ms); })) {
    return "";
  }
  std::vector<std::vector<std::string>> cells = {{"experiment", "input", "backend", "median ms", "IQR ms", "vs ref"}};
  std::string last_experiment;
  std::string last_input;
  for (const LatencyRow& row : rows) {
    const bool same_input = row.experiment == last_experiment && row.input == last_input;
    cells.push_back({row.experiment == last_experiment ? "" : row.experiment, same_input ? "" : row.input,
                     row.backend + (row.reference ? " (reference)" : ""), format_ms(row.median_ms),
                     format_ms(row.iqr_ms), latency_ratio(row)});
    last_experiment = row.experiment;
    last_input = row.input;
  }
  std::vector<size_t> widths(cells.front().size(), 0);
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) {
      widths[c] = std::max(widths[c], line[c].size());
    }
  }
  std::string text =
      "latency per forward: median and interquartile range of the timed forwards after warm-up (not gated)\n";
  for (const auto& line : cells) {
    std::string out;
    for (size_t c = 0; c < line.size(); ++c) {
      const bool number = c >= 3;
      std::string pad(widths[c] - line[c].size(), ' ');
      out += "  " + (number ? pad + line[c] : line[c] + pad);
    }
    while (!out.empty() && out.back() == ' ') {
      out.pop_back();
    }
    text += out + "\n";
  }
  return text;
}

}  // namespace driftgate

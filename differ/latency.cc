#include "differ/latency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>
#include <tuple>

#include "differ/markdown_report.h"

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

double median_of(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }), values.end());
  if (values.empty()) {
    return __builtin_nan("");
  }
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

}  // namespace

std::vector<LatencyRow> latency_rows(const RunDigest& run) {
  // Check ids are "<experiment>/<input>/<reference>~<target>/<output>": the id without its
  // output names the pair. A time of 0 means the backend produced nothing on the input.
  // The checks of one pair are neighbours in id order and in run order alike, so a run of
  // a million checks costs one comparison per check and one lookup per pair.
  std::map<std::string_view, PairTimes> pairs;
  std::string_view last;
  PairTimes* pair = nullptr;
  for (const CheckDigest& check : run.checks) {
    if (check.id.size() <= check.output.size()) {
      continue;
    }
    const std::string_view prefix = check.id.substr(0, check.id.size() - check.output.size());
    if (pair == nullptr || prefix != last) {
      pair = &pairs[prefix];
      last = prefix;
    }
    if (!pair->timed) {
      CheckTimings timings = timings_of(check);
      if (timings.target_ms > 0.0 || timings.reference_ms > 0.0) {
        pair->timings = timings;
        pair->timed = true;
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

void add_baseline_latency(std::vector<LatencyRow>& rows, const RunDigest& baseline) {
  std::map<std::tuple<std::string, std::string, std::string>, const LatencyRow*> before;
  const std::vector<LatencyRow> baseline_rows = latency_rows(baseline);
  for (const LatencyRow& row : baseline_rows) {
    before[{row.experiment, row.input, row.backend}] = &row;
  }
  for (LatencyRow& row : rows) {
    auto it = before.find({row.experiment, row.input, row.backend});
    if (it != before.end()) {
      row.baseline_median_ms = it->second->median_ms;
      row.baseline_iqr_ms = it->second->iqr_ms;
    }
  }
}

std::vector<LatencyRow> collapse_latency_rows(const std::vector<LatencyRow>& rows, size_t limit) {
  std::vector<LatencyRow> out;
  for (size_t begin = 0; begin < rows.size();) {
    size_t end = begin;
    std::vector<std::string> backends;
    std::vector<std::string> inputs;
    while (end < rows.size() && rows[end].experiment == rows[begin].experiment) {
      if (std::find(inputs.begin(), inputs.end(), rows[end].input) == inputs.end()) {
        inputs.push_back(rows[end].input);
      }
      if (std::find(backends.begin(), backends.end(), rows[end].backend) == backends.end()) {
        backends.push_back(rows[end].backend);
      }
      ++end;
    }
    if (inputs.size() <= limit) {
      out.insert(out.end(), rows.begin() + static_cast<std::ptrdiff_t>(begin),
                 rows.begin() + static_cast<std::ptrdiff_t>(end));
    } else {
      for (const std::string& backend : backends) {
        LatencyRow row;
        std::vector<double> median, iqr, reference, baseline, baseline_iqr;
        for (size_t i = begin; i < end; ++i) {
          if (rows[i].backend == backend) {
            row = rows[i];
            median.push_back(rows[i].median_ms);
            iqr.push_back(rows[i].iqr_ms);
            reference.push_back(rows[i].reference_median_ms);
            baseline.push_back(rows[i].baseline_median_ms);
            baseline_iqr.push_back(rows[i].baseline_iqr_ms);
          }
        }
        row.input = std::to_string(inputs.size()) + " inputs";
        row.median_ms = median_of(median);
        row.iqr_ms = median_of(iqr);
        row.reference_median_ms = median_of(reference);
        row.baseline_median_ms = median_of(baseline);
        row.baseline_iqr_ms = median_of(baseline_iqr);
        out.push_back(std::move(row));
      }
    }
    begin = end;
  }
  return out;
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

std::string render_latency_text(const std::vector<LatencyRow>& all_rows) {
  if (std::none_of(all_rows.begin(), all_rows.end(),
                   [](const LatencyRow& row) { return !std::isnan(row.median_ms); })) {
    return "";
  }
  const std::vector<LatencyRow> rows = collapse_latency_rows(all_rows, k_latency_inputs_shown);
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
      "latency per forward: median and interquartile range of the timed forwards after warm-up (not gated;\n"
      "  an experiment of more than " +
      std::to_string(k_latency_inputs_shown) +
      " inputs: the median over its inputs of each number, the run file has them all)\n";
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

std::string render_latency_markdown(const std::vector<LatencyRow>& all_rows) {
  if (std::none_of(all_rows.begin(), all_rows.end(),
                   [](const LatencyRow& row) { return !std::isnan(row.median_ms); })) {
    return "";
  }
  const std::vector<LatencyRow> rows = collapse_latency_rows(all_rows, k_latency_inputs_shown);
  const bool baseline =
      std::any_of(rows.begin(), rows.end(), [](const LatencyRow& row) { return !std::isnan(row.baseline_median_ms); });
  std::string text =
      "\n<details><summary>Latency per forward, ms: median and IQR of the timed forwards after warm-up "
      "(information, not gated; an experiment of more than " +
      std::to_string(k_latency_inputs_shown) +
      " inputs: the median over its inputs)</summary>\n\n| experiment | input | backend | median | IQR | vs reference "
      "|";
  text += baseline ? " baseline median | change |\n|---|---|---|---:|---:|---:|---:|---:|\n"
                   : "\n|---|---|---|---:|---:|---:|\n";
  for (const LatencyRow& row : rows) {
    text += "| " + markdown_code(row.experiment) + " | " + markdown_code(row.input) + " | " +
            markdown_code(row.backend) + (row.reference ? " (reference)" : "") + " | " + format_ms(row.median_ms) +
            " | " + format_ms(row.iqr_ms) + " | " + latency_ratio(row) + " |";
    if (baseline) {
      std::string change;
      if (!std::isnan(row.median_ms) && row.baseline_median_ms > 0.0) {
        char percent[32];
        std::snprintf(percent, sizeof percent, "%+.0f%%", 100.0 * (row.median_ms / row.baseline_median_ms - 1.0));
        change = percent;
      }
      text += " " + format_ms(row.baseline_median_ms) + " | " + change + " |";
    }
    text += "\n";
  }
  return text + "\n</details>\n";
}

}  // namespace driftgate

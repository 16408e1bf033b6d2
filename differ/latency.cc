#include "differ/latency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/text_compare.h"
#include "differ/markdown_report.h"

namespace driftgate {
namespace {

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

// The first time of each (experiment, input, reference~target) of a run: its checks' ids
// without their output, in id order, each with the first of its checks' timings that
// says a backend ran (a time of 0 means it produced nothing on the input).
struct PairTime {
  std::string_view prefix;
  CheckTimings timings;
  bool timed = false;
};

std::vector<PairTime> pair_times(const RunDigest& run) {
  // Checks of one pair are neighbours in id order, so this is one comparison per check.
  std::vector<PairTime> pairs;
  for (size_t index : run.id_order) {
    const CheckDigest& check = run.checks[index];
    if (check.id.size() <= check.output.size()) {
      continue;
    }
    const std::string_view prefix = check.id.substr(0, check.id.size() - check.output.size());
    if (pairs.empty() || !same_text(pairs.back().prefix, prefix)) {
      pairs.push_back(PairTime{prefix, {}, false});
    }
    PairTime& pair = pairs.back();
    if (!pair.timed) {
      CheckTimings timings = timings_of(check);
      if (timings.target_ms > 0.0 || timings.reference_ms > 0.0) {
        pair.timings = timings;
        pair.timed = true;
      }
    }
  }
  // In id order the prefixes are sorted already unless a name holds a '/' (then a
  // shorter prefix may follow a longer one): sorted here when they are not.
  auto less = [](const PairTime& x, const PairTime& y) { return text_less(x.prefix, y.prefix); };
  if (!std::is_sorted(pairs.begin(), pairs.end(), less)) {
    std::stable_sort(pairs.begin(), pairs.end(), less);
    // A pair split by the sort's neighbours is one again, timed if any part was.
    std::vector<PairTime> joined;
    for (PairTime& pair : pairs) {
      if (!joined.empty() && same_text(joined.back().prefix, pair.prefix)) {
        if (!joined.back().timed && pair.timed) {
          joined.back() = pair;
        }
      } else {
        joined.push_back(pair);
      }
    }
    pairs = std::move(joined);
  }
  return pairs;
}

}  // namespace

std::vector<LatencyRow> latency_rows(const RunDigest& run) {
  const std::vector<PairTime> pairs = pair_times(run);
  auto less = [](const PairTime& x, std::string_view key) { return text_less(x.prefix, key); };
  std::vector<LatencyRow> rows;
  size_t count = 0;
  for (const ExperimentHeader& experiment : run.header.experiments) {
    count += experiment.inputs.size() * (experiment.targets.size() + 1);
  }
  rows.reserve(count);
  std::string key;
  for (const ExperimentHeader& experiment : run.header.experiments) {
    for (const std::string& input : experiment.inputs) {
      // The pairs of this input share "<experiment>/<input>/<reference>~": one search for
      // where they start, then each target's among them (a million-check run: no string
      // search over all pairs per target).
      const std::string common = make_check_id(experiment.name, input, experiment.reference, "", "");
      const std::string stem = common.substr(0, common.size() - 1);  // without the '/' after the target
      auto first = std::lower_bound(pairs.begin(), pairs.end(), stem, less);
      auto last = first;
      while (last != pairs.end() && last->prefix.size() >= stem.size() &&
             same_bytes(last->prefix.data(), stem.data(), stem.size())) {
        ++last;
      }
      LatencyRow reference{experiment.name, input, experiment.reference, true};
      const size_t reference_at = rows.size();
      rows.push_back(reference);
      for (const std::string& target : experiment.targets) {
        LatencyRow row{experiment.name, input, target, false};
        key.assign(stem).append(target).append("/");
        auto it = std::lower_bound(first, last, key, less);
        if (it != last && same_text(it->prefix, key) && it->timed) {
          const CheckTimings& timings = it->timings;
          if (timings.target_ms > 0.0) {
            row.median_ms = timings.target_ms;
            row.iqr_ms = timings.target_iqr_ms;
          }
          if (timings.reference_ms > 0.0 && std::isnan(rows[reference_at].median_ms)) {
            rows[reference_at].median_ms = timings.reference_ms;
            rows[reference_at].iqr_ms = timings.reference_iqr_ms;
          }
        }
        rows.push_back(std::move(row));
      }
      const double reference_ms = rows[reference_at].median_ms;
      for (size_t i = reference_at; i < rows.size(); ++i) {
        rows[i].reference_median_ms = reference_ms;
      }
    }
  }
  return rows;
}

void add_baseline_latency(std::vector<LatencyRow>& rows, const RunDigest& baseline) {
  add_baseline_latency(rows, latency_rows(baseline));
}

void add_baseline_latency(std::vector<LatencyRow>& rows, const std::vector<LatencyRow>& before) {
  auto same_row = [](const LatencyRow& x, const LatencyRow& y) {
    return x.backend == y.backend && x.input == y.input && x.experiment == y.experiment;
  };
  // Both are in header order: with the same experiments, inputs and targets (nearly
  // always), row i of each is the same row; the rest are found by name.
  std::unordered_map<std::string, const LatencyRow*> by_name;
  auto key = [](const LatencyRow& row) { return row.experiment + '\n' + row.input + '\n' + row.backend; };
  for (size_t i = 0; i < rows.size(); ++i) {
    LatencyRow& row = rows[i];
    const LatencyRow* was = nullptr;
    if (i < before.size() && same_row(before[i], row)) {
      was = &before[i];
    } else {
      if (by_name.empty()) {  // names hold no '\n' (they are printable)
        by_name.reserve(before.size());
        for (const LatencyRow& old : before) {
          by_name.emplace(key(old), &old);
        }
      }
      auto it = by_name.find(key(row));
      was = it != by_name.end() ? it->second : nullptr;
    }
    if (was != nullptr) {
      row.baseline_median_ms = was->median_ms;
      row.baseline_iqr_ms = was->iqr_ms;
    }
  }
}

std::vector<LatencyRow> collapse_latency_rows(const std::vector<LatencyRow>& rows, size_t limit) {
  // One experiment's rows at a time: its inputs counted and its backends grouped in the
  // order they first appear, in one pass over the rows (a million-check run has a million
  // rows). Each input lists the same backends in the same order, so a row's backend is
  // mostly the one at its place in the input's list; any other is found by name.
  struct Backend {
    std::string_view name;
    size_t last = 0;  // the backend's last row, whose names the collapsed row keeps
    std::vector<double> median, iqr, reference, baseline, baseline_iqr;
  };
  std::vector<LatencyRow> out;
  for (size_t begin = 0; begin < rows.size();) {
    size_t end = begin;
    std::set<std::string_view> inputs;
    std::map<std::string_view, size_t> index;  // backend name -> its place in `backends`
    std::vector<Backend> backends;
    size_t place = 0;  // the row's place in its input's rows
    for (; end < rows.size() && rows[end].experiment == rows[begin].experiment; ++end) {
      const LatencyRow& row = rows[end];
      if (end == begin || row.input != rows[end - 1].input) {
        inputs.insert(row.input);
        place = 0;
      }
      size_t at = place < backends.size() && backends[place].name == row.backend ? place : backends.size();
      if (at == backends.size()) {
        auto [found, added] = index.emplace(row.backend, backends.size());
        if (added) {
          backends.push_back(Backend{row.backend, 0, {}, {}, {}, {}, {}});
        }
        at = found->second;
      }
      ++place;
      Backend& backend = backends[at];
      backend.last = end;
      backend.median.push_back(row.median_ms);
      backend.iqr.push_back(row.iqr_ms);
      backend.reference.push_back(row.reference_median_ms);
      backend.baseline.push_back(row.baseline_median_ms);
      backend.baseline_iqr.push_back(row.baseline_iqr_ms);
    }
    if (inputs.size() <= limit) {
      out.insert(out.end(), rows.begin() + static_cast<std::ptrdiff_t>(begin),
                 rows.begin() + static_cast<std::ptrdiff_t>(end));
    } else {
      for (Backend& backend : backends) {
        LatencyRow row = rows[backend.last];
        row.input = std::to_string(inputs.size()) + " inputs";
        row.median_ms = median_of(std::move(backend.median));
        row.iqr_ms = median_of(std::move(backend.iqr));
        row.reference_median_ms = median_of(std::move(backend.reference));
        row.baseline_median_ms = median_of(std::move(backend.baseline));
        row.baseline_iqr_ms = median_of(std::move(backend.baseline_iqr));
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

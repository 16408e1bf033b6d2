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
  // The middle one (and the largest below it for an even count) put in place, the rest
  // left unsorted: the same numbers as a full sort's middle, in linear time.
  const size_t middle = values.size() / 2;
  auto at = values.begin() + static_cast<std::ptrdiff_t>(middle);
  std::nth_element(values.begin(), at, values.end());
  if (values.size() % 2 == 1) {
    return *at;
  }
  return (*std::max_element(values.begin(), at) + *at) / 2.0;
}

// The first time of each (experiment, input, reference~target) of an input's checks:
// the pair's prefix "<target>/" after the input's stem (see input_times), in that
// text's order, each with the first of its checks, in id order, whose timings say a
// backend ran (a time of 0 means it produced nothing on the input), or null.
struct PairTime {
  std::string_view rest;
  const CheckDigest* timed = nullptr;
};

bool ran(const CheckTimings& timings) { return timings.target_ms > 0.0 || timings.reference_ms > 0.0; }

// The pairs of the checks whose ids start with `stem` into `pairs` (cleared first).
// Those checks follow one another in id order: one search for where they start, then a
// walk of them. Checks of one pair are neighbours in id order, so this is one
// comparison per check. Found per input, not for the whole run at once: a million-check
// run needs no million-entry table for a table that shows a thousand rows.
void pair_times(const RunDigest& run, std::string_view stem, std::vector<PairTime>& pairs) {
  pairs.clear();
  auto first = std::partition_point(run.id_order.begin(), run.id_order.end(),
                                    [&run, stem](size_t index) { return text_less(run.checks[index].id, stem); });
  for (auto at = first; at != run.id_order.end(); ++at) {
    const CheckDigest& check = run.checks[*at];
    if (check.id.size() < stem.size() || !same_bytes(check.id.data(), stem.data(), stem.size())) {
      break;
    }
    if (check.id.size() <= stem.size() + check.output.size()) {
      continue;  // no pair's prefix: not an id make_check_id writes
    }
    const std::string_view rest = check.id.substr(stem.size(), check.id.size() - stem.size() - check.output.size());
    if (pairs.empty() || !same_text(pairs.back().rest, rest)) {
      pairs.push_back(PairTime{rest, nullptr});
    }
    PairTime& pair = pairs.back();
    if (pair.timed == nullptr && ran(timings_of(check))) {
      pair.timed = &check;
    }
  }
  // In id order the prefixes are sorted already unless a name holds a '/' (then a
  // shorter prefix may follow a longer one): sorted here when they are not.
  auto less = [](const PairTime& x, const PairTime& y) { return text_less(x.rest, y.rest); };
  if (!std::is_sorted(pairs.begin(), pairs.end(), less)) {
    std::stable_sort(pairs.begin(), pairs.end(), less);
    // A pair split by the sort's neighbours is one again, timed if any part was.
    std::vector<PairTime> joined;
    for (PairTime& pair : pairs) {
      if (!joined.empty() && same_text(joined.back().rest, pair.rest)) {
        if (joined.back().timed == nullptr && pair.timed != nullptr) {
          joined.back() = pair;
        }
      } else {
        joined.push_back(pair);
      }
    }
    pairs = std::move(joined);
  }
}

}  // namespace

namespace {

// One backend's numbers on one input (nan: it has none).
struct Times {
  double median = __builtin_nan("");
  double iqr = __builtin_nan("");
};

// An experiment's targets as the tail of a pair's prefix ("<target>/"), in that text's
// order, each with its place in the header's targets.
std::vector<std::pair<std::string, size_t>> sorted_target_tails(const ExperimentHeader& experiment) {
  std::vector<std::pair<std::string, size_t>> tails;
  for (size_t j = 0; j < experiment.targets.size(); ++j) {
    tails.emplace_back(experiment.targets[j] + "/", j);
  }
  std::sort(tails.begin(), tails.end(), [](const auto& x, const auto& y) { return text_less(x.first, y.first); });
  return tails;
}

// The times of `experiment`'s backends on `input` into `times`: [0] the reference's,
// [1 + j] target j's. The checks of this input share the stem
// "<experiment>/<input>/<reference>~": their pairs (pair_times, into `pairs`) are walked
// once beside the targets in the same order (a million-check run: no search per target).
void input_times(const RunDigest& run, const ExperimentHeader& experiment, const std::string& input,
                 const std::vector<std::pair<std::string, size_t>>& tails, std::vector<PairTime>& pairs,
                 std::vector<Times>& times, std::vector<Times>& references) {
  times.assign(experiment.targets.size() + 1, Times{});
  references.assign(experiment.targets.size(), Times{});  // the reference's time beside each target
  const std::string common = make_check_id(experiment.name, input, experiment.reference, "", "");
  const std::string_view stem(common.data(), common.size() - 1);  // without the '/' after the target
  pair_times(run, stem, pairs);
  auto pair = pairs.begin();
  auto tail = tails.begin();
  while (pair != pairs.end() && tail != tails.end()) {
    if (!same_text(pair->rest, tail->first)) {
      if (text_less(pair->rest, tail->first)) {
        ++pair;  // a pair of no listed target
      } else {
        ++tail;  // a target with no pair
      }
      continue;
    }
    if (pair->timed != nullptr) {
      const CheckTimings timings = timings_of(*pair->timed);
      if (timings.target_ms > 0.0) {
        times[1 + tail->second] = Times{timings.target_ms, timings.target_iqr_ms};
      }
      if (timings.reference_ms > 0.0) {
        references[tail->second] = Times{timings.reference_ms, timings.reference_iqr_ms};
      }
    }
    ++pair;
    ++tail;
  }
  // The reference's time: beside the first target, in the header's order, that has one.
  for (const Times& reference : references) {
    if (!std::isnan(reference.median)) {
      times[0] = reference;
      break;
    }
  }
}

}  // namespace

std::vector<LatencyRow> latency_rows(const RunDigest& run, size_t collapse_over) {
  std::vector<PairTime> pairs;  // one input's at a time
  std::vector<LatencyRow> rows;
  std::vector<Times> times;
  std::vector<Times> references;
  for (const ExperimentHeader& experiment : run.header.experiments) {
    const size_t backends = experiment.targets.size() + 1;
    const std::vector<std::pair<std::string, size_t>> tails = sorted_target_tails(experiment);
    auto name_of = [&experiment](size_t b) -> const std::string& {
      return b == 0 ? experiment.reference : experiment.targets[b - 1];
    };
    if (experiment.inputs.size() <= collapse_over) {
      for (const std::string& input : experiment.inputs) {
        input_times(run, experiment, input, tails, pairs, times, references);
        for (size_t b = 0; b < backends; ++b) {
          LatencyRow row{experiment.name, input, name_of(b), b == 0};
          row.median_ms = times[b].median;
          row.iqr_ms = times[b].iqr;
          row.reference_median_ms = times[0].median;
          rows.push_back(std::move(row));
        }
      }
      continue;
    }
    // collapse_latency_rows's rows made directly: no row per input is ever built. Each
    // backend's reference_median_ms is the median of the same numbers (the reference's
    // median on each input), the reference's own median_ms: found once.
    const size_t inputs = experiment.inputs.size();
    std::vector<std::vector<double>> median(backends), iqr(backends);
    for (size_t b = 0; b < backends; ++b) {
      median[b].reserve(inputs);
      iqr[b].reserve(inputs);
    }
    for (const std::string& input : experiment.inputs) {
      input_times(run, experiment, input, tails, pairs, times, references);
      for (size_t b = 0; b < backends; ++b) {
        median[b].push_back(times[b].median);
        iqr[b].push_back(times[b].iqr);
      }
    }
    const double reference_median = median_of(median[0]);
    for (size_t b = 0; b < backends; ++b) {
      LatencyRow row{experiment.name, std::to_string(inputs) + " inputs", name_of(b), b == 0};
      row.median_ms = b == 0 ? reference_median : median_of(std::move(median[b]));
      row.iqr_ms = median_of(std::move(iqr[b]));
      row.reference_median_ms = reference_median;
      row.collapsed = true;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

void add_baseline_latency(std::vector<LatencyRow>& rows, const std::vector<LatencyRow>& before) {
  // Rows of collapsed experiments match whatever their input counts: the baseline's
  // numbers are then its own medians over its inputs.
  auto same_row = [](const LatencyRow& x, const LatencyRow& y) {
    return x.backend == y.backend && x.collapsed == y.collapsed && (x.collapsed || x.input == y.input) &&
           x.experiment == y.experiment;
  };
  // Both are in header order: with the same experiments, inputs and targets (nearly
  // always), row i of each is the same row; the rest are found by name.
  std::unordered_map<std::string, const LatencyRow*> by_name;
  auto key = [](const LatencyRow& row) {
    return row.experiment + '\n' + (row.collapsed ? std::string("\n") : row.input) + '\n' + row.backend;
  };
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
        row.collapsed = true;
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

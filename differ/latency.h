// Each backend's latency per input, as the run recorded it: the table `run` prints, the
// diff's markdown shows beside the baseline's and the trend draws over commits.
//
// A check line carries the steady-state latency of its reference and its target on its
// input (median and interquartile range of the timed forwards after warm-up:
// Experiment::latency_*). Every output of one (input, target) repeats the same numbers;
// this reads them once per (experiment, input, backend). Latency never enters a
// verdict: the tables are information only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "differ/run_digest.h"

namespace driftgate {

struct LatencyRow {
  std::string experiment;
  std::string input;
  std::string backend;
  bool reference = false;  // the experiment's reference (listed first per input)
  // Median and q3 - q1 of the timed forwards in ms; nan where the backend did not run
  // on the input (a crash, a timeout, a skip) or a record has no range.
  double median_ms = __builtin_nan("");
  double iqr_ms = __builtin_nan("");
  double reference_median_ms = __builtin_nan("");  // the reference's on the same input
  // The baseline's for the same (experiment, input, backend); nan where it has none.
  double baseline_median_ms = __builtin_nan("");
  double baseline_iqr_ms = __builtin_nan("");
  // One row for all inputs of its experiment (input "N inputs"): each number the median
  // over the inputs (collapse_latency_rows, or latency_rows with collapse_over).
  bool collapsed = false;
};

// The rows of `run` in header order: per experiment, per input, the reference and then
// each target. An (input, target) none of whose checks has a time (0: nothing ran)
// gets nan.
// `collapse_over`: an experiment of more inputs comes as collapse_latency_rows would
// make it (one row per backend), computed without a row per input (a million-check
// diff needs no million rows for a table that shows a thousand).
std::vector<LatencyRow> latency_rows(const RunDigest& run, size_t collapse_over = SIZE_MAX);

// Sets each row's baseline_* from the rows of `baseline` (same experiment, input and
// backend; a collapsed row from the baseline's collapsed row: its medians over its own
// inputs).
// `before`: latency_rows of the baseline, with the same collapse_over as `rows`.
void add_baseline_latency(std::vector<LatencyRow>& rows, const std::vector<LatencyRow>& before);

// "x2.17" (median over the reference's median), "" where either is unknown.
std::string latency_ratio(const LatencyRow& row);

// The tables below show an experiment of more than this many inputs as one row per
// backend: each number the median over its inputs.
constexpr size_t k_latency_inputs_shown = 3;

// The rows of an experiment with more than `limit` inputs as one row per backend (in order
// of first appearance): each number the median over the inputs of that number (nan ones
// left out), the input column "N inputs". Other experiments' rows as they are. A table of
// 16 inputs x 5 backends says no more than this, and the run file keeps every row.
std::vector<LatencyRow> collapse_latency_rows(const std::vector<LatencyRow>& rows, size_t limit);

// The plain-text table `run` prints (empty when no row has a time): one line per row,
// columns aligned, the reference marked.
std::string render_latency_text(const std::vector<LatencyRow>& rows);

// The folded table of the diff's markdown summary, with the baseline's medians and the
// change where there is a baseline; empty when no row has a time.
std::string render_latency_markdown(const std::vector<LatencyRow>& rows);

}  // namespace driftgate

// differ/latency.h: one row per (experiment, input, backend) from the check lines,
// read alike from a run in memory and from its canonical text, with the numbers the
// test wrote into the checks (not recomputed by the code under test).
#include "differ/latency.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/record.h"

namespace driftgate {
namespace {

CheckRecord timed_check(const std::string& input, const std::string& target, const std::string& output,
                        double reference_ms, double target_ms) {
  CheckRecord check;
  check.experiment = "m";
  check.input = input;
  check.reference = "cpu_fp32";
  check.target = target;
  check.output = output;
  check.id = make_check_id(check.experiment, input, check.reference, target, output);
  check.tolerance.atol = 1e-5;
  check.tolerance.rtol = 1.3e-6;
  check.reference_ms = reference_ms;
  check.target_ms = target_ms;
  check.reference_iqr_ms = reference_ms / 10.0;
  check.target_iqr_ms = target_ms / 10.0;
  return check;
}

RunFile two_inputs_run() {
  RunFile run;
  run.header.commit = {"0123456789abcdef0123456789abcdef01234567", "main", false};
  ExperimentHeader experiment;
  experiment.name = "m";
  experiment.inputs = {"a", "b"};
  experiment.reference = "cpu_fp32";
  experiment.targets = {"cpu_bf16", "frozen"};
  run.header.experiments.push_back(experiment);
  // Two outputs of (a, cpu_bf16) repeat one measurement; (b, frozen) crashed: time 0.
  run.checks = {timed_check("a", "cpu_bf16", "out[0]", 4.0, 10.0), timed_check("a", "cpu_bf16", "out[1]", 4.0, 10.0),
                timed_check("a", "frozen", "out[0]", 4.0, 3.0), timed_check("b", "cpu_bf16", "out[0]", 8.0, 6.0),
                timed_check("b", "frozen", "out[0]", 8.0, 0.0)};
  run.checks.back().status = CheckStatus::k_crash_target;
  run.summary = summarize(run.header, run.checks);
  return run;
}

void expect_rows(const std::vector<LatencyRow>& rows) {
  ASSERT_EQ(rows.size(), 6U);
  EXPECT_EQ(rows[0].backend, "cpu_fp32");
  EXPECT_TRUE(rows[0].reference);
  EXPECT_DOUBLE_EQ(rows[0].median_ms, 4.0);
  EXPECT_DOUBLE_EQ(rows[0].iqr_ms, 0.4);
  EXPECT_EQ(rows[1].backend, "cpu_bf16");
  EXPECT_DOUBLE_EQ(rows[1].median_ms, 10.0);
  EXPECT_EQ(latency_ratio(rows[1]), "x2.50");
  EXPECT_EQ(latency_ratio(rows[2]), "x0.75");
  EXPECT_EQ(rows[3].input, "b");
  EXPECT_DOUBLE_EQ(rows[3].median_ms, 8.0);
  EXPECT_EQ(latency_ratio(rows[4]), "x0.75");
  EXPECT_EQ(rows[5].backend, "frozen");
  EXPECT_TRUE(std::isnan(rows[5].median_ms));  // crashed: no time, not 0 ms
  EXPECT_EQ(latency_ratio(rows[5]), "");
}

TEST(Latency, RowsFromARunInMemory) {
  RunFile run = two_inputs_run();
  expect_rows(latency_rows(digest_view(run)));
}

TEST(Latency, RowsFromTheRunsCanonicalText) {
  RunFile run = two_inputs_run();
  std::ostringstream text;
  write_run(text, run);
  RunDigest digest = digest_run_text(text.str(), "run.jsonl");
  ASSERT_EQ(digest.checks.size(), 5U);
  EXPECT_EQ(digest.checks[0].record, nullptr);  // read from the line's timings member
  expect_rows(latency_rows(digest));
}

// Names that hold a '/' (a target "t/2", outputs "z/w", an input "a/b") put a pair's
// checks apart in id order and its prefixes out of order ("...~t/0" < "...~t/2/out" <
// "...~t/z/w"), and inputs "a", "a/b" and "a-x" share a beginning: each pair still gets
// the first of its checks, in id order, that has a time. The numbers are the ones
// written into the checks below.
TEST(Latency, NamesWithSlashesAndInputsThatShareABeginning) {
  RunFile run;
  run.header.commit = {"0123456789abcdef0123456789abcdef01234567", "main", false};
  ExperimentHeader experiment;
  experiment.name = "m";
  experiment.inputs = {"a", "a/b", "a-x"};
  experiment.reference = "cpu_fp32";
  experiment.targets = {"t", "t/2"};
  run.header.experiments.push_back(experiment);
  run.checks = {
      timed_check("a", "t", "0", 0.0, 0.0),        // nothing ran for this output
      timed_check("a", "t", "1", 4.0, 10.0),       // the first time of (a, t)
      timed_check("a", "t/2", "out", 4.0, 20.0),   // between those of (a, t) in id order
      timed_check("a", "t", "z/w", 4.0, 99.0),     // a later time of (a, t): not the one shown
      timed_check("a/b", "t", "out", 5.0, 30.0),   // an input named like a's checks' beginning
      timed_check("a/b", "t/2", "out", 5.0, 0.0),  // the target crashed
      timed_check("a-x", "t", "o", 0.0, 0.0),      // nothing ran
      timed_check("a-x", "t", "p", 6.0, 40.0),     // the first time of (a-x, t)
      timed_check("a-x", "t", "q", 6.0, 41.0),     // its neighbour's: not the one shown
      timed_check("a-x", "t/2", "out", 6.0, 50.0),
  };
  run.checks[5].status = CheckStatus::k_crash_target;
  run.summary = summarize(run.header, run.checks);
  const double expected[][3] = {{4.0, 10.0, 20.0}, {5.0, 30.0, __builtin_nan("")}, {6.0, 40.0, 50.0}};
  auto expect = [&](const std::vector<LatencyRow>& rows, const std::string& what) {
    ASSERT_EQ(rows.size(), 9U) << what;
    for (size_t i = 0; i < 3; ++i) {
      for (size_t b = 0; b < 3; ++b) {
        const LatencyRow& row = rows[3 * i + b];
        EXPECT_EQ(row.input, experiment.inputs[i]) << what;
        EXPECT_EQ(row.backend, b == 0 ? "cpu_fp32" : experiment.targets[b - 1]) << what;
        if (std::isnan(expected[i][b])) {
          EXPECT_TRUE(std::isnan(row.median_ms)) << what << ": " << row.input << " " << row.backend;
        } else {
          EXPECT_EQ(row.median_ms, expected[i][b]) << what << ": " << row.input << " " << row.backend;
          EXPECT_EQ(row.iqr_ms, expected[i][b] / 10.0) << what << ": " << row.input << " " << row.backend;
        }
        EXPECT_EQ(row.reference_median_ms, expected[i][0]) << what;
      }
    }
  };
  expect(latency_rows(digest_view(run)), "in memory");
  std::ostringstream text;
  write_run(text, run);
  RunDigest digest = digest_run_text(text.str(), "run.jsonl");
  ASSERT_EQ(digest.checks.size(), 10U);
  EXPECT_EQ(digest.checks[0].record, nullptr);  // read from the line
  expect(latency_rows(digest), "canonical text");
  // Collapsed (more inputs than shown): the medians over the three inputs of the above.
  const std::vector<LatencyRow> collapsed = latency_rows(digest, 2);
  ASSERT_EQ(collapsed.size(), 3U);
  EXPECT_EQ(collapsed[0].input, "3 inputs");
  EXPECT_EQ(collapsed[0].median_ms, 5.0);
  EXPECT_EQ(collapsed[1].median_ms, 30.0);
  EXPECT_EQ(collapsed[2].median_ms, 35.0);  // (20 + 50) / 2: the crash left out
  EXPECT_EQ(collapsed[2].reference_median_ms, 5.0);
}

TEST(Latency, TextTableMarksTheReferenceAndUnknowns) {
  const std::string text = render_latency_text(latency_rows(digest_view(two_inputs_run())));
  EXPECT_NE(text.find("cpu_fp32 (reference)"), std::string::npos) << text;
  EXPECT_NE(text.find("10.0"), std::string::npos) << text;
  EXPECT_NE(text.find("x2.50"), std::string::npos) << text;
  // The crashed pair: a dash, no ratio.
  const size_t frozen_b = text.rfind("frozen");
  EXPECT_EQ(text.substr(frozen_b, text.find('\n', frozen_b) - frozen_b).find("x0"), std::string::npos) << text;
  EXPECT_NE(text.substr(frozen_b).find(" -"), std::string::npos) << text;
}

// More than k_latency_inputs_shown inputs: one row per backend, each number the median
// over the inputs (here of 1, 2, 3 and 10 ms for the target, one input that crashed left out).
TEST(Latency, ManyInputsShowOneRowPerBackend) {
  RunFile run;
  ExperimentHeader experiment;
  experiment.name = "m";
  experiment.inputs = {"i1", "i2", "i3", "i4", "i5"};
  experiment.reference = "cpu_fp32";
  experiment.targets = {"cpu_bf16"};
  run.header.experiments.push_back(experiment);
  const double target[] = {1.0, 2.0, 3.0, 10.0, 0.0};
  for (size_t i = 0; i < 5; ++i) {
    run.checks.push_back(timed_check(experiment.inputs[i], "cpu_bf16", "out", 4.0, target[i]));
  }
  run.summary = summarize(run.header, run.checks);
  const std::string text = render_latency_text(latency_rows(digest_view(run)));
  EXPECT_NE(text.find("5 inputs"), std::string::npos) << text;
  EXPECT_EQ(text.find("i3"), std::string::npos) << text;
  const size_t target_line = text.find("cpu_bf16");
  const std::string line = text.substr(target_line, text.find('\n', target_line) - target_line);
  EXPECT_NE(line.find(" 2.50 "), std::string::npos) << line;  // median of 1, 2, 3, 10
  EXPECT_NE(line.find("x0.62"), std::string::npos) << line;   // 2.5 / 4
}

// The diff reads experiments of many inputs collapsed as it reads them (no row per
// input): the same rows as collapsing the per-input rows, with and without a baseline of
// the same inputs; a baseline of other inputs gives its own medians over them.
TEST(Latency, CollapsedWhileReadingEqualsCollapsingTheRows) {
  auto many_inputs = [](const std::vector<std::string>& inputs, double scale) {
    RunFile run;
    ExperimentHeader experiment;
    experiment.name = "m";
    experiment.inputs = inputs;
    experiment.reference = "cpu_fp32";
    experiment.targets = {"cpu_bf16", "frozen"};
    run.header.experiments.push_back(experiment);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const double at = static_cast<double>(i + 1);
      run.checks.push_back(timed_check(inputs[i], "cpu_bf16", "out", scale * at, i == 2 ? 0.0 : scale * at * at));
      run.checks.push_back(timed_check(inputs[i], "frozen", "out", scale * at, scale * (10.0 - at)));
    }
    run.summary = summarize(run.header, run.checks);
    return run;
  };
  auto same = [](const std::vector<LatencyRow>& a, const std::vector<LatencyRow>& b) {
    auto number = [](double x, double y) { return std::isnan(x) ? std::isnan(y) : x == y; };
    if (a.size() != b.size()) {
      return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].experiment != b[i].experiment || a[i].input != b[i].input || a[i].backend != b[i].backend ||
          a[i].reference != b[i].reference || a[i].collapsed != b[i].collapsed ||
          !number(a[i].median_ms, b[i].median_ms) || !number(a[i].iqr_ms, b[i].iqr_ms) ||
          !number(a[i].reference_median_ms, b[i].reference_median_ms) ||
          !number(a[i].baseline_median_ms, b[i].baseline_median_ms) ||
          !number(a[i].baseline_iqr_ms, b[i].baseline_iqr_ms)) {
        return false;
      }
    }
    return true;
  };
  const RunFile now = many_inputs({"i1", "i2", "i3", "i4", "i5", "i6"}, 1.0);
  const RunFile before = many_inputs({"i1", "i2", "i3", "i4", "i5", "i6"}, 2.0);
  const std::vector<LatencyRow> direct = latency_rows(digest_view(now), k_latency_inputs_shown);
  ASSERT_EQ(direct.size(), 3U);
  EXPECT_EQ(direct[0].input, "6 inputs");
  EXPECT_TRUE(direct[0].collapsed);
  EXPECT_DOUBLE_EQ(direct[1].median_ms, 16.0);  // cpu_bf16: median of 1, 4, 16, 25, 36 (i3 crashed)
  EXPECT_DOUBLE_EQ(direct[2].median_ms, 6.5);   // frozen: median of 9, 8, 7, 6, 5, 4
  EXPECT_TRUE(same(direct, collapse_latency_rows(latency_rows(digest_view(now)), k_latency_inputs_shown)));

  std::vector<LatencyRow> with_baseline = latency_rows(digest_view(now), k_latency_inputs_shown);
  add_baseline_latency(with_baseline, latency_rows(digest_view(before), k_latency_inputs_shown));
  std::vector<LatencyRow> per_input = latency_rows(digest_view(now));
  add_baseline_latency(per_input, latency_rows(digest_view(before)));
  EXPECT_TRUE(same(with_baseline, collapse_latency_rows(per_input, k_latency_inputs_shown)));
  EXPECT_DOUBLE_EQ(with_baseline[1].baseline_median_ms, 32.0);

  // A baseline of five inputs: its own medians over them, matched to "6 inputs".
  const RunFile fewer = many_inputs({"i1", "i2", "i3", "i4", "i5"}, 2.0);
  std::vector<LatencyRow> other = latency_rows(digest_view(now), k_latency_inputs_shown);
  add_baseline_latency(other, latency_rows(digest_view(fewer), k_latency_inputs_shown));
  EXPECT_DOUBLE_EQ(other[2].baseline_median_ms, 14.0);  // frozen then: median of 18, 16, 14, 12, 10
}

TEST(Latency, NothingTimedPrintsNothing) {
  RunFile run = two_inputs_run();
  for (CheckRecord& check : run.checks) {
    check.reference_ms = check.target_ms = 0.0;
  }
  EXPECT_EQ(render_latency_text(latency_rows(digest_view(run))), "");
}

// The diff's table: this run beside the baseline, matched by (experiment, input, backend);
// a backend the baseline did not time has no change.
TEST(Latency, MarkdownTableSetsTheRunBesideTheBaseline) {
  RunFile now = two_inputs_run();
  RunFile before = two_inputs_run();
  before.checks[0].target_ms = before.checks[1].target_ms = 8.0;  // (a, cpu_bf16): 8 ms then, 10 now
  before.checks[2].target_ms = 0.0;                               // (a, frozen) did not run then
  std::vector<LatencyRow> rows = latency_rows(digest_view(now));
  add_baseline_latency(rows, latency_rows(digest_view(before)));
  const std::string table = render_latency_markdown(rows);
  EXPECT_NE(table.find("| `m` | `a` | `cpu_bf16` | 10.0 | 1.00 | x2.50 | 8.00 | +25% |"), std::string::npos) << table;
  EXPECT_NE(table.find("| `m` | `a` | `frozen` | 3.00 | 0.30 | x0.75 | - |  |"), std::string::npos) << table;
  EXPECT_NE(table.find("| `m` | `b` | `cpu_fp32` (reference) | 8.00 | 0.80 |  | 8.00 | +0% |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("not gated"), std::string::npos) << table;
  // Without a baseline the two columns are not drawn.
  EXPECT_EQ(render_latency_markdown(latency_rows(digest_view(now))).find("baseline"), std::string::npos);
}

}  // namespace
}  // namespace driftgate

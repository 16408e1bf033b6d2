// read_check_like and read_run_digest(path, like): a baseline's lines vouched for by
// the run's digest must read exactly as they read on their own.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/check_line_fast.h"
#include "core/record.h"
#include "differ/run_digest.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

CheckRecord make_record(const std::string& input, const std::string& target, CheckStatus status, double max_abs) {
  CheckRecord check;
  check.experiment = "exp";
  check.input = input;
  check.reference = "cpu_fp32";
  check.target = target;
  check.output = "out";
  check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
  check.status = status;
  check.message = status == CheckStatus::k_pass ? "" : "3 of 10 elements";
  Tier1Stats stats;
  stats.numel = 10;
  stats.max_abs = max_abs;
  stats.max_abs_index = {0, 1};
  stats.max_rel_index = {0, 1};
  check.stats = stats;
  check.observed_reference = ObservedTensor{"cpu", "float32", "contiguous", {1, 10}};
  check.observed_target = check.observed_reference;
  check.reference_ms = 1.5;
  check.target_ms = 1.75;
  return check;
}

RunFile make_run(const std::string& sha, std::vector<CheckRecord> checks) {
  RunFile run;
  run.header.tool_version = "0.1.0";
  run.header.commit = {sha, "main", false};
  run.header.environment.keyed = {{"libtorch", "1.13.1"}, {"schema", "1"}};
  ExperimentHeader experiment;
  experiment.name = "exp";
  experiment.reference = "cpu_fp32";
  experiment.tolerance_origin = "default";
  for (const auto& check : checks) {
    if (std::find(experiment.inputs.begin(), experiment.inputs.end(), check.input) == experiment.inputs.end()) {
      experiment.inputs.push_back(check.input);
    }
    if (std::find(experiment.targets.begin(), experiment.targets.end(), check.target) == experiment.targets.end()) {
      experiment.targets.push_back(check.target);
    }
  }
  run.header.experiments.push_back(experiment);
  run.checks = std::move(checks);
  run.summary = summarize(run.header, run.checks);
  return run;
}

std::string write(const test::TempDir& dir, const std::string& name, const RunFile& run) {
  std::string path = dir / name;
  std::ofstream out(path, std::ios::binary);
  write_run(out, run);
  return path;
}

// Everything a digest says about a check, for comparing two readings of one file.
std::string describe(const CheckDigest& check) {
  const CheckTimings timings = timings_of(check);
  std::ostringstream times;
  times.precision(17);
  times << timings.reference_ms << "|" << timings.target_ms << "|" << timings.reference_iqr_ms << "|"
        << timings.target_iqr_ms;
  return std::string(check.id) + "|" + std::string(check.experiment) + "|" + std::string(check.output) + "|" +
         std::string(check.message) + "|" + to_string(check.status) + "|" + (check.has_stats ? "stats" : "-") + "|" +
         std::to_string(check.max_abs) + "|" + times.str() + "|" + check_line_of(check);
}

std::vector<std::string> describe(const RunDigest& digest) {
  std::vector<std::string> all;
  for (size_t i : digest.id_order) {
    all.push_back(describe(digest.checks[i]));
  }
  return all;
}

TEST(ReadCheckLike, TakesTheSameLineWithOtherTimingsOnly) {
  CheckRecord record = make_record("img0", "t0", CheckStatus::k_fail_numeric, 0.25);
  std::string line = check_to_json_line(record) + "\n";
  CheckDigest like;
  ASSERT_TRUE(read_canonical_check(std::string_view(line).substr(0, line.size() - 1), like));
  ASSERT_GT(like.timings_at, 0U);

  CheckRecord retimed = record;
  retimed.reference_ms = 9.0;
  retimed.target_ms = 0.125;
  std::string other = check_to_json_line(retimed) + "\n";
  std::string_view other_line = std::string_view(other).substr(0, other.size() - 1);
  CheckDigest digest;
  ASSERT_TRUE(read_check_like(other_line, like, digest));
  CheckDigest alone;
  ASSERT_TRUE(read_canonical_check(other_line, alone));
  EXPECT_EQ(describe(digest), describe(alone));
  EXPECT_EQ(digest.line.data(), other_line.data());
  EXPECT_EQ(digest.message.data(), alone.message.data());  // views into the new line
  EXPECT_EQ(digest.twin, CheckDigest::k_no_twin);
  // Its own timings, not like's (1.5 and 1.75 ms; no ranges recorded: nan).
  EXPECT_EQ(timings_of(like).reference_ms, 1.5);
  EXPECT_EQ(timings_of(digest).reference_ms, 9.0);
  EXPECT_EQ(timings_of(digest).target_ms, 0.125);
  EXPECT_TRUE(std::isnan(timings_of(digest).target_iqr_ms));
}

TEST(ReadCheckLike, RefusesAnyOtherDifference) {
  CheckRecord record = make_record("img0", "t0", CheckStatus::k_pass, 1e-7);
  std::string line = check_to_json_line(record);
  CheckDigest like;
  ASSERT_TRUE(read_canonical_check(line, like));
  CheckDigest digest;
  CheckRecord drifted = record;
  drifted.stats->max_abs = 2e-7;
  EXPECT_FALSE(read_check_like(check_to_json_line(drifted), like, digest));
  CheckRecord failing = record;
  failing.status = CheckStatus::k_fail_numeric;
  EXPECT_FALSE(read_check_like(check_to_json_line(failing), like, digest));
  // The same prefix with a tail that is not a timings member, or more after it.
  std::string prefix = line.substr(0, like.timings_at);
  EXPECT_FALSE(read_check_like(prefix + ",\"timings_ms\":{\"reference\":1,\"target\":x}}", like, digest));
  EXPECT_FALSE(read_check_like(prefix + ",\"timings_ms\":{\"reference\":1,\"target\":2}},", like, digest));
  EXPECT_FALSE(read_check_like(prefix + ",\"timings_ms\":{\"reference\":1,\"target\":2}", like, digest));
  EXPECT_FALSE(read_check_like(prefix + ",\"timings_ms\":{\"target\":2,\"reference\":1}}", like, digest));
  EXPECT_FALSE(read_check_like(prefix, like, digest));
  EXPECT_TRUE(read_check_like(prefix + ",\"timings_ms\":{\"reference\":1,\"target\":\"nan\"}}", like, digest));
  // A check that was read in full vouches for nothing.
  CheckDigest full = like;
  full.record = &record;
  EXPECT_FALSE(read_check_like(line, full, digest));
  CheckDigest no_prefix = like;
  no_prefix.timings_at = 0;
  EXPECT_FALSE(read_check_like(line, no_prefix, digest));
}

// A run and its baseline: most lines equal but for timings, one check failing now, one
// only in the baseline, one only in the run, one whose max_abs moved (a line of the same
// length), one whose line is not canonical (escapes).
struct Pair {
  RunFile run;
  RunFile baseline;
};

Pair make_pair_of_runs(bool baseline_sorted) {
  std::vector<CheckRecord> before;
  std::vector<CheckRecord> after;
  for (int i = 0; i < 40; ++i) {
    std::string input = "img" + std::to_string(i);
    for (int t = 0; t < 3; ++t) {
      CheckRecord check = make_record(input, "t" + std::to_string(t), CheckStatus::k_pass, 1e-7 * (1 + i % 5));
      CheckRecord now = check;
      now.reference_ms = 2.0 + i;  // a rerun: other timings, same results
      if (i == 7 && t == 1) {
        now.status = CheckStatus::k_fail_numeric;
        now.message = "1 of 10 elements";
        now.stats->max_abs = 0.5;
      }
      if (i == 9 && t == 0) {
        now.stats->max_abs = 6e-7;  // 5e-07 before: a line of the same length that differs
      }
      if (i == 11 && t == 2) {
        check.message = now.message = "quote \" and tab \t";  // escaped: read in full on both sides
        check.status = now.status = CheckStatus::k_crash_target;
        check.stats.reset();
        now.stats.reset();
      }
      if (!(i == 20 && t == 0)) {
        before.push_back(check);
      }
      if (!(i == 30 && t == 1)) {
        after.push_back(now);
      }
    }
  }
  Pair pair{make_run("2222222222222222222222222222222222222222", after),
            make_run("1111111111111111111111111111111111111111", before)};
  if (baseline_sorted) {
    std::sort(pair.baseline.checks.begin(), pair.baseline.checks.end(),
              [](const CheckRecord& a, const CheckRecord& b) { return a.id < b.id; });
  }
  return pair;
}

TEST(ReadRunDigestLike, ReadsTheBaselineExactlyAsOnItsOwn) {
  for (bool sorted : {true, false}) {
    test::TempDir dir;
    Pair pair = make_pair_of_runs(sorted);
    std::string run_path = write(dir, "run.jsonl", pair.run);
    std::string base_path = write(dir, "base.jsonl", pair.baseline);
    RunDigest run = read_run_digest(run_path);
    RunDigest alone = read_run_digest(base_path);
    RunDigest vouched = read_run_digest(base_path, &run);
    EXPECT_EQ(describe(vouched), describe(alone)) << (sorted ? "sorted" : "unsorted");
    EXPECT_EQ(vouched.like_serial, run.serial);
    EXPECT_EQ(alone.like_serial, 0U);
    size_t twins = 0;
    for (const auto& check : vouched.checks) {
      if (check.twin != CheckDigest::k_no_twin) {
        ++twins;
        ASSERT_LT(check.twin, run.checks.size());
        EXPECT_EQ(run.checks[check.twin].id, check.id);
        EXPECT_NE(check.id, "exp/img7/cpu_fp32~t1/out");  // its line differs from the run's
        EXPECT_NE(check.id, "exp/img9/cpu_fp32~t0/out");
      }
    }
    if (sorted) {
      EXPECT_EQ(twins, 118U - 3U);  // the checks in both but the two changed ones and the escaped one
    }
  }
}

TEST(ReadRunDigestLike, TwinsPairChecksAsIdsDo) {
  test::TempDir dir;
  Pair pair = make_pair_of_runs(true);
  RunDigest run = read_run_digest(write(dir, "run.jsonl", pair.run));
  std::string base_path = write(dir, "base.jsonl", pair.baseline);
  auto pairs_of = [&run](const RunDigest& baseline) {
    std::vector<std::pair<std::string, std::string>> pairs;
    merge_by_id(run, baseline, [&](size_t now, size_t was) {
      pairs.emplace_back(now == SIZE_MAX ? "-" : std::string(run.checks[now].id),
                         was == SIZE_MAX ? "-" : std::string(baseline.checks[was].id));
    });
    return pairs;
  };
  auto with_twins = pairs_of(read_run_digest(base_path, &run));
  auto by_ids = pairs_of(read_run_digest(base_path));
  EXPECT_EQ(with_twins, by_ids);
  EXPECT_EQ(with_twins.size(), 120U);  // 118 in both, one new, one missing
}

// The vouched checks keep the run's views of their names; the baseline's digest shares
// the run's name blocks, so it stays whole when the run's digest is gone.
TEST(ReadRunDigestLike, OutlivesTheDigestThatVouchedForIt) {
  test::TempDir dir;
  Pair pair = make_pair_of_runs(true);
  std::string base_path = write(dir, "base.jsonl", pair.baseline);
  std::vector<std::string> alone = describe(read_run_digest(base_path));
  std::optional<RunDigest> run = read_run_digest(write(dir, "run.jsonl", pair.run));
  RunDigest vouched = read_run_digest(base_path, &*run);
  run.reset();  // its mapping and its name blocks' owner
  EXPECT_EQ(describe(vouched), alone);
}

// The *_at readers read the first line of a run of lines as the one-line readers read
// that line, and say where it ends.
TEST(ReadCheckAt, ReadsTheFirstLineOfTheTextAsTheLineAlone) {
  CheckRecord record = make_record("img0", "t0", CheckStatus::k_fail_numeric, 0.25);
  std::string line = check_to_json_line(record);
  std::string next = check_to_json_line(make_record("img1", "t0", CheckStatus::k_pass, 1e-7));
  std::string text = line + "\n" + next + "\n";
  CheckDigest at;
  ASSERT_EQ(read_canonical_check_at(text, at), line.size());
  CheckDigest alone;
  ASSERT_TRUE(read_canonical_check(line, alone));
  EXPECT_EQ(describe(at), describe(alone));
  EXPECT_EQ(at.timings_at, alone.timings_at);
  EXPECT_EQ(at.line.data(), text.data());
  // The text must end in a newline (it stops the number scans), and the line must end
  // where its newline is: a line with more after its closing brace is not canonical.
  EXPECT_EQ(read_canonical_check_at(line, at), 0U);
  EXPECT_EQ(read_canonical_check_at(line + " \n", at), 0U);
  EXPECT_EQ(read_canonical_check_at(line + "\r\n", at), 0U);
  EXPECT_EQ(read_canonical_check_at(line + "}\n", at), 0U);
  EXPECT_EQ(read_canonical_check_at("\n", at), 0U);
  EXPECT_EQ(read_canonical_check_at("", at), 0U);
  // Cut anywhere and ended by a newline: never read past the cut.
  for (size_t cut = 0; cut < line.size(); ++cut) {
    std::string cut_text = line.substr(0, cut) + "\n" + next + "\n";
    EXPECT_EQ(read_canonical_check_at(cut_text, at), 0U) << cut;
  }

  CheckRecord rerun = record;
  rerun.reference_ms = 9.25;
  std::string other = check_to_json_line(rerun);
  CheckDigest vouched;
  ASSERT_EQ(read_check_like_at(other + "\n" + next + "\n", alone, vouched), other.size());
  CheckDigest one_line;
  ASSERT_TRUE(read_check_like(other, alone, one_line));
  EXPECT_EQ(vouched.status, one_line.status);
  EXPECT_EQ(vouched.max_abs, one_line.max_abs);
  EXPECT_EQ(timings_of(vouched).reference_ms, 9.25);
  EXPECT_EQ(timings_of(one_line).reference_ms, 9.25);
  EXPECT_EQ(vouched.line.size(), one_line.line.size());
  EXPECT_EQ(read_check_like_at(other, alone, vouched), 0U);
  EXPECT_EQ(read_check_like_at(other + "x\n", alone, vouched), 0U);
  for (size_t cut = alone.timings_at; cut < other.size(); ++cut) {
    EXPECT_EQ(read_check_like_at(other.substr(0, cut) + "\n", alone, vouched), 0U) << cut;
  }
}

// A memo of the blocks neighbours repeat (tolerance, observed) changes nothing read: each
// line reads with it as without it, a block that differs from the memo (valid or not) is
// read in full.
TEST(ReadCheckAt, TheMemoReadsEveryLineAsWithoutIt) {
  std::vector<std::string> lines;
  for (const auto& check : make_pair_of_runs(false).run.checks) {
    lines.push_back(check_to_json_line(check));
  }
  CheckRecord other = make_record("img99", "t9", CheckStatus::k_pass, 1e-7);
  other.observed_target = ObservedTensor{"cpu", "bfloat16", "channels_last", {1, 10}};
  other.tolerance.atol = 0.5;
  lines.insert(lines.begin() + 5, check_to_json_line(other));
  std::string same = lines[0];
  std::string shape = "\"shape\":[1,10]";
  std::string bad = same;
  bad.replace(bad.rfind(shape), shape.size(), "\"shape\":[1,1e0]");  // the target's block, past the memo's prefix
  lines.insert(lines.begin() + 8, bad);
  std::string text;
  for (const auto& line : lines) {
    text += line + "\n";
  }
  CanonicalMemo memo;
  size_t at = 0;
  for (const auto& line : lines) {
    CheckDigest with;
    CheckDigest without;
    std::string_view rest = std::string_view(text).substr(at);
    size_t length = read_canonical_check_at(rest, with, &memo);
    ASSERT_EQ(length, read_canonical_check_at(rest, without)) << line;
    if (length != 0) {
      EXPECT_EQ(describe(with), describe(without));
    }
    EXPECT_EQ(length != 0, line != bad && line.find('\\') == std::string::npos) << line;
    at += line.size() + 1;
  }
  EXPECT_FALSE(memo.observed.empty());
  EXPECT_FALSE(memo.tolerance.empty());
}

}  // namespace
}  // namespace driftgate

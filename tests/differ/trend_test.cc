// build_trend over a directory store: pass rates, error series, environment
// markers, step changes and sweep curves; plus the commit details it shows.
#include "differ/trend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/git_repo.h"
#include "differ/baseline_store.h"
#include "differ/trend_html.h"
#include "differ/trend_markdown.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::make_check;
using test::make_environment;
using test::make_run;
using test::TempDir;

std::string fake_sha(size_t i) {
  std::string sha = std::to_string(1000 + i);
  return sha + std::string(40 - sha.size(), 'a');
}

// Commits newest first, as first_parent_walk gives them; subject "commit <i>".
std::vector<CommitDetails> fake_commits(size_t count) {
  std::vector<CommitDetails> commits;
  for (size_t i = count; i-- > 0;) {
    commits.push_back({fake_sha(i), "commit " + std::to_string(i), "dev", 1767225600 + 3600 * int64_t(i), 0});
  }
  return commits;
}

// 10 commits: onednn 2.6.3 on 0-3, 3.1 on 4-9; check in1 jumps from 1e-6 to 1e-3 (fails) at 7;
// in2 is skipped everywhere; in3 exists only from commit 8 on.
class TrendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t c = 0; c < 10; ++c) {
      std::vector<CheckRecord> checks;
      checks.push_back(make_check("in0", CheckStatus::k_pass, 2e-6));
      bool stepped = c >= 7;
      checks.push_back(
          make_check("in1", stepped ? CheckStatus::k_fail_numeric : CheckStatus::k_pass, stepped ? 1e-3 : 1e-6));
      checks.back().stats->min_atol = checks.back().stats->max_abs;
      checks.push_back(make_check("in2", CheckStatus::k_skipped, std::nullopt, "no cuda"));
      if (c >= 8) {
        checks.push_back(make_check("in3", CheckStatus::k_pass, 0.0));
      }
      m_store.save(make_run(fake_sha(c), make_environment("1", c < 4 ? "2.6.3" : "3.1"), checks));
    }
  }

  TempDir m_dir;
  DirectoryStore m_store{m_dir.path()};
  std::string m_key_a = make_environment("1", "2.6.3").key();
  std::string m_key_b = make_environment("1", "3.1").key();
};

TEST_F(TrendTest, GathersEveryEnvironmentOldestFirst) {
  TrendData trend = build_trend("main", fake_commits(10), m_store, TrendOptions{});
  ASSERT_EQ(trend.commits.size(), 10u);
  EXPECT_EQ(trend.commits.front().sha, fake_sha(0));
  EXPECT_EQ(trend.baselines, 10u);
  ASSERT_EQ(trend.envs.size(), 2u);
  const EnvSeries& b = trend.envs[0].env_key == m_key_b ? trend.envs[0] : trend.envs[1];
  ASSERT_EQ(b.points.size(), 6u);
  EXPECT_EQ(b.points[0].commit, 4u);
  ASSERT_EQ(b.backends, std::vector<std::string>{"onednn_off"});
  EXPECT_EQ(b.points[2].rates[0].passed, 2);   // commit 6: in0, in1 pass
  EXPECT_EQ(b.points[2].rates[0].counted, 2);  // in2 is skipped, not counted
  EXPECT_EQ(b.points[3].rates[0].passed, 1);   // commit 7: in1 fails
  EXPECT_DOUBLE_EQ(pass_fraction(b.points[3].rates[0]), 0.5);
  ASSERT_EQ(b.checks.size(), 4u);
  EXPECT_EQ(b.checks[3].id, "exp/in3/cpu_fp32~onednn_off/out");
  EXPECT_TRUE(std::isnan(b.checks[3].max_abs[0]));  // in3 does not exist yet
  EXPECT_EQ(b.checks[3].max_abs[4], 0.0);
  EXPECT_TRUE(std::isnan(b.checks[2].max_abs[0]));  // skipped: no statistics
}

TEST_F(TrendTest, MarksTheEnvironmentChangeAtItsFirstCommit) {
  TrendData trend = build_trend("main", fake_commits(10), m_store, TrendOptions{});
  ASSERT_EQ(trend.markers.size(), 1u);
  EXPECT_EQ(trend.markers[0].commit, 4u);
  EXPECT_EQ(trend.markers[0].from_key, m_key_a);
  EXPECT_EQ(trend.markers[0].to_key, m_key_b);
  EXPECT_EQ(trend.markers[0].description, "onednn 2.6.3 -> 3.1");
}

TEST_F(TrendTest, ListsTheStepWithItsCommitRange) {
  TrendData trend = build_trend("main", fake_commits(10), m_store, TrendOptions{});
  ASSERT_EQ(trend.steps.size(), 1u);
  const StepChange& step = trend.steps[0];
  EXPECT_EQ(step.env_key, m_key_b);
  EXPECT_EQ(step.check_id, "exp/in1/cpu_fp32~onednn_off/out");
  EXPECT_EQ(step.last_before, 6u);
  EXPECT_EQ(step.first_after, 7u);
  EXPECT_NEAR(step.before, 1e-6, 1e-12);
  EXPECT_NEAR(step.after, 1e-3, 1e-9);
}

TEST_F(TrendTest, EnvFilterKeepsOneEnvironmentAndNoMarkers) {
  TrendOptions options;
  options.env_key = m_key_a;
  TrendData trend = build_trend("main", fake_commits(10), m_store, options);
  ASSERT_EQ(trend.envs.size(), 1u);
  EXPECT_EQ(trend.envs[0].env_key, m_key_a);
  EXPECT_EQ(trend.baselines, 4u);
  EXPECT_TRUE(trend.markers.empty());
  EXPECT_TRUE(trend.steps.empty());
}

TEST_F(TrendTest, UnknownEnvKeyNamesTheKnownOnes) {
  TrendOptions options;
  options.env_key = "0123456789abcdef";
  try {
    build_trend("main", fake_commits(10), m_store, options);
    FAIL() << "expected driftgate::Error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("--env 0123456789abcdef: the store has no baselines"), std::string::npos) << message;
    EXPECT_NE(message.find(m_key_a), std::string::npos) << message;
    EXPECT_NE(message.find(m_key_b), std::string::npos) << message;
  }
}

TEST_F(TrendTest, SweepComesFromTheNewestBaseline) {
  TrendData trend = build_trend("main", fake_commits(10), m_store, TrendOptions{});
  const EnvSeries& b = trend.envs[0].env_key == m_key_b ? trend.envs[0] : trend.envs[1];
  ASSERT_EQ(b.sweep.size(), 1u);
  const SweepCurve& curve = b.sweep[0];
  // make_check's tolerance is the default; in0 and in3 have min_atol 0, in1 1e-3.
  EXPECT_DOUBLE_EQ(curve.pass_rate.front(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(curve.pass_rate.back(), 1.0);
  EXPECT_DOUBLE_EQ(b.configured_atol, Tolerance{}.atol);
}

// Task checks have no atol: in the curves they would fail at every atol and cap the pass rate.
TEST(TrendSweepTest, TaskChecksAreCountedApartFromTheSweepCurves) {
  TempDir dir;
  DirectoryStore store(dir.path());
  for (size_t c = 0; c < 2; ++c) {
    CheckRecord numeric = make_check("in0", CheckStatus::k_pass, 2e-6);
    numeric.stats->min_atol = 2e-6;
    CheckRecord agreed = make_check("in0", CheckStatus::k_pass, std::nullopt);
    agreed.output = "task:classification";
    agreed.id = make_check_id(agreed.experiment, agreed.input, agreed.reference, agreed.target, agreed.output);
    agreed.task = TaskResult{"classification", "top1+top5", {{"top1_agreement", 1.0}}, {}};
    CheckRecord flipped = agreed;
    flipped.input = "in1";
    flipped.id = make_check_id(flipped.experiment, flipped.input, flipped.reference, flipped.target, flipped.output);
    flipped.status = c == 0 ? CheckStatus::k_pass : CheckStatus::k_fail_task;
    store.save(make_run(fake_sha(c), make_environment(), {numeric, agreed, flipped}));
  }
  TrendData trend = build_trend("main", fake_commits(2), store, TrendOptions{});
  ASSERT_EQ(trend.envs.size(), 1u);
  const EnvSeries& env = trend.envs[0];
  ASSERT_EQ(env.sweep.size(), 1u);
  EXPECT_DOUBLE_EQ(env.sweep[0].pass_rate.back(), 1.0);  // the numeric check alone: 100% at a large atol
  ASSERT_EQ(env.task_rates.size(), 1u);
  EXPECT_EQ(env.task_rates[0].first, "onednn_off");
  EXPECT_EQ(env.task_rates[0].second.passed, 1);  // the newest baseline: one of two task checks passes
  EXPECT_EQ(env.task_rates[0].second.counted, 2);
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  EXPECT_NE(html.find("Task checks of this baseline (not in the curves): <code>onednn_off</code> 1/2 pass (50.0%)."),
            std::string::npos);
}

// Rescaled logits: max_abs moves x30 with the output's scale, the relative error does not.
TEST(TrendRelativeErrorTest, RelativeErrorIsMaxAbsOverTheReferencesScale) {
  TempDir dir;
  DirectoryStore store(dir.path());
  for (size_t c = 0; c < 4; ++c) {
    double scale = c < 2 ? 1.0 : 30.0;
    CheckRecord check = make_check("in0", CheckStatus::k_pass, 2e-6 * scale);
    check.stats->max_abs_reference_value = 8.0 * scale;
    CheckRecord zeros = make_check("in1", CheckStatus::k_pass, 0.0);  // an all-zero reference: no relative error
    store.save(make_run(fake_sha(c), make_environment(), {check, zeros}));
  }
  TrendData trend = build_trend("main", fake_commits(4), store, TrendOptions{});
  ASSERT_EQ(trend.envs.size(), 1u);
  const CheckSeries& check = trend.envs[0].checks[0];
  ASSERT_EQ(check.relative.size(), 4u);
  for (size_t p = 0; p < 4; ++p) {
    EXPECT_DOUBLE_EQ(check.relative[p], check.max_abs[p] / (p < 2 ? 8.0 : 240.0)) << p;
    EXPECT_NEAR(check.relative[p], 2.5e-7, 1e-18) << p;
    EXPECT_TRUE(std::isnan(trend.envs[0].checks[1].relative[p])) << p;
  }
  EXPECT_NEAR(check.max_abs[3] / check.max_abs[0], 30.0, 1e-9);
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  EXPECT_NE(html.find("Relative error per check, log scale"), std::string::npos);
  EXPECT_NE(html.find("relative error 2.5e-07"), std::string::npos);
}

// The commit ranges build_trend reports, against histories whose culprits are known by
// construction: one step at every position of every length, and several steps, with noise and
// with commits that have no baseline. Each step's range must be (the measured commit before the
// culprit ... the culprit): the last baseline at the old level and the first at the new one.
TEST(TrendStepRangeTest, RandomStepHistoriesNameTheCulpritCommit) {
  std::mt19937 random(18);
  std::normal_distribution<double> noise(0.0, 0.05);              // decades
  std::uniform_real_distribution<double> size_of_step(1.0, 3.0);  // decades, either way
  std::uniform_int_distribution<int> base(-9, -4);
  const size_t min_segment = ChangePointOptions{}.min_segment;
  int histories = 0;
  auto check_history = [&](size_t n, const std::vector<size_t>& measured, const std::vector<size_t>& culprits,
                           bool noisy) {
    // culprits: positions in `measured` where a new level starts.
    TempDir dir;
    DirectoryStore store(dir.path());
    double level = base(random);
    size_t next = 0;
    for (size_t m = 0; m < measured.size(); ++m) {
      if (next < culprits.size() && culprits[next] == m) {
        level += size_of_step(random) * (random() % 2 == 0 ? 1.0 : -1.0);
        ++next;
      }
      double max_abs = std::pow(10.0, level + (noisy ? noise(random) : 0.0));
      store.save(
          make_run(fake_sha(measured[m]), make_environment(), {make_check("in0", CheckStatus::k_pass, max_abs)}));
    }
    TrendData trend = build_trend("main", fake_commits(n), store, TrendOptions{});
    std::vector<std::pair<size_t, size_t>> found;
    for (const StepChange& step : trend.steps) {
      found.emplace_back(step.last_before, step.first_after);
    }
    std::vector<std::pair<size_t, size_t>> expected;
    for (size_t culprit : culprits) {
      expected.emplace_back(measured[culprit - 1], measured[culprit]);
    }
    std::string where = "n " + std::to_string(n) + ", measured";
    for (size_t m : measured) {
      where += " " + std::to_string(m);
    }
    EXPECT_EQ(found, expected) << where;
    ++histories;
  };
  for (size_t n = 2; n <= 12; ++n) {
    for (int repeat = 0; repeat < 3; ++repeat) {
      // repeat 0: every commit has a baseline and no noise; then some commits have none.
      std::vector<size_t> measured;
      for (size_t i = 0; i < n; ++i) {
        if (repeat == 0 || random() % 4 != 0) {
          measured.push_back(i);
        }
      }
      if (measured.size() < 2) {
        continue;
      }
      for (size_t at = 1; at < measured.size(); ++at) {  // every step position
        check_history(n, measured, {at}, repeat != 0);
      }
      std::vector<size_t> culprits;  // several steps; levels between them last min_segment baselines
      for (size_t m = 1; m < measured.size(); ++m) {
        if ((culprits.empty() || m - culprits.back() >= min_segment) && random() % 3 == 0) {
          culprits.push_back(m);
        }
      }
      check_history(n, measured, culprits, repeat != 0);
    }
  }
  EXPECT_GT(histories, 150);
}

// A group's factors that print alike are one factor: "x30 worse", not "x30 to x30 worse".
TEST(StepGroupTest, FactorsThatPrintAlikeAreNamedOnce) {
  std::vector<StepChange> steps = {
      {"k1", "a", 3, 4, 1e-7, 3e-6}, {"k1", "b", 3, 4, 1e-7, 3.00001e-6},  // x30.0001: another double, the same text
  };
  std::vector<StepGroup> groups = group_steps(steps);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(describe_factors(groups[0]), "x30 worse");
}

// One cause, one row: steps of the same commit range and environment form a group, worst group first.
TEST(StepGroupTest, StepsOfOneCommitRangeAndEnvironmentAreOneGroup) {
  std::vector<StepChange> steps = {
      {"k1", "a", 3, 4, 1e-6, 1e-5},        // x10
      {"k1", "b", 7, 8, 1e-6, 1e-4},        // x100, another range
      {"k1", "c", 3, 4, 1e-6, 3e-3},        // x3000, the worst of all
      {"k2", "d", 3, 4, 1e-6, 1e-3},        // same range, other environment
      {"k1", "e", 3, 4, 1e-3, 1e-5},        // x100 better
      {"k2", "f", 3, 4, 1e-6, 1e-3, "k1"},  // across an environment change: its own cause
  };
  std::vector<StepGroup> groups = group_steps(steps);
  ASSERT_EQ(groups.size(), 4u);
  ASSERT_EQ(groups[0].steps.size(), 3u);  // k1 3...4: c, e, a, largest first
  EXPECT_EQ(groups[0].steps[0]->check_id, "c");
  EXPECT_EQ(groups[0].steps[1]->check_id, "e");
  EXPECT_EQ(groups[0].steps[2]->check_id, "a");
  EXPECT_NEAR(groups[0].worst_decades, std::log10(3000.0), 1e-12);
  EXPECT_EQ(describe_factors(groups[0]), "2 worse (x10 to x3000), 1 better (x100)");
  EXPECT_EQ(groups[1].steps.size(), 1u);  // the x1000 ones, in key order: k2 within, then k2 across
  EXPECT_EQ(groups[1].steps[0]->check_id, "d");
  EXPECT_EQ(groups[2].steps[0]->check_id, "f");
  EXPECT_EQ(describe_factors(groups[2]), "x1000 worse");
  EXPECT_EQ(groups[3].steps[0]->check_id, "b");
  EXPECT_EQ(describe_factors(groups[3]), "x100 worse");
}

TEST(TrendLayersTest, KeepsTheNewestTier2ProfilePerCheck) {
  TempDir dir;
  DirectoryStore store(dir.path());
  Environment environment = make_environment("1", "2.6.3");
  for (size_t c = 0; c < 4; ++c) {
    std::vector<CheckRecord> checks{make_check("in0", CheckStatus::k_fail_numeric, 1e-3),
                                    make_check("in1", CheckStatus::k_pass, 1e-7)};
    if (c == 1 || c == 2) {  // commit 3 has no profile: the one of commit 2 is the newest
      Localization localization;
      localization.alignment = "position";
      localization.layers = 2;
      localization.observed = 2;
      localization.coverage = 1.0;
      localization.profile.push_back({"conv1/aten::_convolution#1 (conv.py:459)"});
      localization.profile.back().delta = 1e-4 * double(c);
      localization.profile.back().noise_floor = 1e-7;
      localization.profile.push_back({"fc/aten::linear#1 (linear.py:114)"});
      localization.profile.back().delta = 1e-3;
      checks[0].localization = localization;
    }
    store.save(make_run(fake_sha(c), environment, checks));
  }
  TrendData trend = build_trend("main", fake_commits(4), store, TrendOptions{});
  ASSERT_EQ(trend.layers.size(), 1u) << "only the check that carries a profile";
  const LayerProfile& profile = trend.layers[0];
  EXPECT_EQ(profile.check_id, make_check_id("exp", "in0", "cpu_fp32", "onednn_off", "out"));
  EXPECT_EQ(profile.env_key, environment.key());
  EXPECT_EQ(trend.commits[profile.commit].sha, fake_sha(2));
  ASSERT_EQ(profile.layers.size(), 2u);
  EXPECT_EQ(profile.layers[0].layer, "conv1/aten::_convolution#1 (conv.py:459)");
  EXPECT_DOUBLE_EQ(profile.layers[0].delta, 2e-4);
  EXPECT_DOUBLE_EQ(profile.layers[0].noise_floor, 1e-7);
  EXPECT_DOUBLE_EQ(profile.layers[1].delta, 1e-3);
}

TEST(SweepCurveTest, CountsThresholdsAtOrBelowEachAtol) {
  SweepCurve curve = make_sweep_curve("frozen", {1e-4, 1e-6, std::numeric_limits<double>::infinity()}, 41);
  ASSERT_EQ(curve.atol.size(), 41u);
  EXPECT_NEAR(curve.atol.front(), 1e-7, 1e-19);  // a decade below the smallest threshold
  EXPECT_NEAR(curve.atol.back(), 1e-3, 1e-15);   // a decade above the largest
  EXPECT_DOUBLE_EQ(curve.pass_rate.front(), 0.0);
  EXPECT_DOUBLE_EQ(curve.pass_rate[10], 1.0 / 3.0);     // atol 1e-6
  EXPECT_DOUBLE_EQ(curve.pass_rate.back(), 2.0 / 3.0);  // the crash never passes
  for (size_t i = 1; i < curve.pass_rate.size(); ++i) {
    EXPECT_GE(curve.pass_rate[i], curve.pass_rate[i - 1]);
  }
}

// An upgrade that moves a check's error starts a new environment key: the step is found across
// the change (old key's last baselines against the new key's first), and noise is not.
TEST(TrendEnvironmentStepTest, FindsAStepAtTheEnvironmentChange) {
  TempDir dir;
  DirectoryStore store(dir.path());
  for (size_t c = 0; c < 12; ++c) {
    double wiggle = (c % 3 == 0 ? 1.2 : c % 3 == 1 ? 0.9 : 1.0);
    std::vector<CheckRecord> checks;
    checks.push_back(make_check("in0", CheckStatus::k_pass, (c < 6 ? 1e-7 : 1e-5) * wiggle));
    checks.push_back(make_check("in1", CheckStatus::k_pass, 3e-6 * wiggle));
    store.save(make_run(fake_sha(c), make_environment("1", c < 6 ? "2.6.3" : "3.1"), checks));
  }
  std::string key_a = make_environment("1", "2.6.3").key();
  std::string key_b = make_environment("1", "3.1").key();
  TrendData trend = build_trend("main", fake_commits(12), store, TrendOptions{});
  ASSERT_EQ(trend.steps.size(), 1u) << "in1 keeps its level across the change";
  const StepChange& step = trend.steps[0];
  EXPECT_EQ(step.check_id, "exp/in0/cpu_fp32~onednn_off/out");
  EXPECT_EQ(step.from_env_key, key_a);
  EXPECT_EQ(step.env_key, key_b);
  EXPECT_EQ(step.last_before, 5u);
  EXPECT_EQ(step.first_after, 6u);
  EXPECT_NEAR(step.before, 1e-7, 1e-9);
  EXPECT_NEAR(step.after, 1e-5, 1e-7);
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  EXPECT_NE(html.find("<code>" + key_a + "</code> &#8594; <code>" + key_b + "</code>"), std::string::npos);
  TrendHtmlOptions one_line;
  one_line.max_check_lines = 1;  // in1 has the larger newest error; the step puts in0 first on both charts
  html = render_trend_html(trend, one_line);
  size_t chart_a = html.find("Max abs error per check, log scale (environment " + key_a);
  ASSERT_NE(chart_a, std::string::npos);
  EXPECT_NE(
      html.substr(chart_a, html.find("</svg>", chart_a) - chart_a).find(">exp/in0/cpu_fp32~onednn_off/out</text>"),
      std::string::npos)
      << "the old environment's chart draws the stepped check's old level";
  std::string md = render_trend_markdown(trend, TrendMarkdownOptions{});
  EXPECT_NE(md.find("(env `" + key_a.substr(0, 8) + "` -> `" + key_b.substr(0, 8) + "`)"), std::string::npos) << md;
  TrendOptions one_env;
  one_env.env_key = key_b;
  EXPECT_TRUE(build_trend("main", fake_commits(12), store, one_env).steps.empty())
      << "with one environment there is no change to compare across";
}

TEST(SweepCurveTest, EveryBackendOfAnEnvironmentSharesOneAtolGrid) {
  TempDir dir;
  DirectoryStore store(dir.path());
  std::vector<CheckRecord> checks;
  checks.push_back(make_check("in0", CheckStatus::k_pass, 1e-7));
  checks.back().stats->min_atol = 1e-7;
  checks.push_back(make_check("in1", CheckStatus::k_fail_numeric, 1e-2));
  checks.back().stats->min_atol = 1e-2;
  checks.back().target = "frozen";
  checks.back().id = make_check_id("exp", "in1", "cpu_fp32", "frozen", "out");
  store.save(make_run(fake_sha(0), make_environment("1", "3.1"), checks));
  TrendData trend = build_trend("main", fake_commits(1), store, TrendOptions{});
  ASSERT_EQ(trend.envs.size(), 1u);
  ASSERT_EQ(trend.envs[0].sweep.size(), 2u);
  const SweepCurve& frozen = trend.envs[0].sweep[0];
  const SweepCurve& onednn_off = trend.envs[0].sweep[1];
  ASSERT_EQ(frozen.backend, "frozen");
  EXPECT_EQ(frozen.atol, onednn_off.atol) << "curves that end mid-chart would read as missing data";
  EXPECT_NEAR(frozen.atol.front(), 1e-8, 1e-20);  // a decade below the smallest threshold of either
  EXPECT_NEAR(frozen.atol.back(), 1e-1, 1e-13);   // a decade above the largest
  EXPECT_DOUBLE_EQ(onednn_off.pass_rate.back(), 1.0);
  EXPECT_DOUBLE_EQ(frozen.pass_rate.front(), 0.0);
  EXPECT_EQ(sweep_decades({1e-7, 1e-2, std::numeric_limits<double>::infinity(), 0.0}), std::make_pair(-8.0, -1.0));
}

TEST(SweepCurveTest, NoPositiveThresholdUsesADefaultRange) {
  SweepCurve curve = make_sweep_curve("x", {0.0, 0.0}, 8);
  EXPECT_NEAR(curve.atol.front(), 1e-8, 1e-20);
  EXPECT_NEAR(curve.atol.back(), 1e-1, 1e-13);
  EXPECT_DOUBLE_EQ(curve.pass_rate.front(), 1.0);
}

// A check of `target` against cpu_fp32 on `input` that recorded these latencies (ms).
CheckRecord timed_check(const std::string& input, const std::string& target, double reference_ms, double target_ms,
                        double reference_iqr_ms, double target_iqr_ms, const std::string& output = "out") {
  CheckRecord check = make_check(input, CheckStatus::k_pass, 1e-6);
  check.target = target;
  check.output = output;
  check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
  check.reference_ms = reference_ms;
  check.target_ms = target_ms;
  check.reference_iqr_ms = reference_iqr_ms;
  check.target_iqr_ms = target_iqr_ms;
  return check;
}

bool same_values(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) {
    return false;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i]) || (!std::isnan(want[i]) && got[i] != want[i])) {
      return false;
    }
  }
  return true;
}

std::string values_text(const std::vector<double>& values) {
  std::string text;
  for (double value : values) {
    text += (text.empty() ? "" : ", ") + std::to_string(value);
  }
  return "{" + text + "}";
}

// Three baselines of experiment exp (reference cpu_fp32, targets bf16 and onednn_off):
//   commit 0, an old record without ranges: in0 reference 20, bf16 10 (on two outputs), onednn_off 40;
//   commit 1: in0 reference 21 (IQR 1), bf16 12 (0.75), onednn_off 41 (2);
//   commit 2: in0 reference 22 (1.5), bf16 ran nothing (0), onednn_off 44 (2.5); input in1 appears:
//             reference 4 (0.5), onednn_off 50 (5), bf16 has no check there.
class TrendLatencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<std::vector<CheckRecord>> runs = {
        {timed_check("in0", "bf16", 20, 10, nan, nan), timed_check("in0", "bf16", 20, 10, nan, nan, "out2"),
         timed_check("in0", "onednn_off", 20, 40, nan, nan)},
        {timed_check("in0", "bf16", 21, 12, 1.0, 0.75), timed_check("in0", "bf16", 21, 12, 1.0, 0.75, "out2"),
         timed_check("in0", "onednn_off", 21, 41, 1.0, 2.0)},
        {timed_check("in0", "bf16", 22, 0, 1.5, nan), timed_check("in0", "onednn_off", 22, 44, 1.5, 2.5),
         timed_check("in1", "onednn_off", 4, 50, 0.5, 5.0)},
    };
    for (size_t c = 0; c < runs.size(); ++c) {
      RunFile run = make_run(fake_sha(c), make_environment(), runs[c]);
      run.header.experiments[0].targets = {"bf16", "onednn_off"};
      run.summary = summarize(run.header, run.checks);
      m_store.save(run);
    }
    // Commit 0 as a record written before the ranges were measured: no *_iqr members at all.
    std::string path = m_store.path_of(make_environment().key(), fake_sha(0));
    std::string text = test::shell("cat '" + path + "'");
    size_t removed = 0;
    for (size_t at = text.find(",\"reference_iqr\":"); at != std::string::npos;
         at = text.find(",\"reference_iqr\":", at)) {
      text.erase(at, text.find('}', at) - at);
      ++removed;
    }
    ASSERT_EQ(removed, 3u) << text;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text << "\n";
  }

  TempDir m_dir;
  DirectoryStore m_store{m_dir.path()};
};

TEST_F(TrendLatencyTest, SeriesCarryEachBaselinesMediansAndRanges) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  TrendData trend = build_trend("main", fake_commits(3), m_store, TrendOptions{});
  ASSERT_EQ(trend.baselines, 3u);
  ASSERT_EQ(trend.envs.size(), 1u);
  const std::vector<LatencySeries>& latency = trend.envs[0].latency;
  // By experiment, input, the reference first, then the targets by name; bf16 never ran on in1: no series.
  std::vector<std::string> order;
  for (const auto& series : latency) {
    order.push_back(series.input + " " + series.backend + (series.reference ? " ref" : ""));
  }
  ASSERT_EQ(order, (std::vector<std::string>{"in0 cpu_fp32 ref", "in0 bf16", "in0 onednn_off", "in1 cpu_fp32 ref",
                                             "in1 onednn_off"}));
  struct Want {
    std::vector<double> median;
    std::vector<double> iqr;
  };
  std::vector<Want> want = {{{20, 21, 22}, {nan, 1.0, 1.5}},     // an old record has no range: nan, the median is kept
                            {{10, 12, nan}, {nan, 0.75, nan}},   // ran nothing at commit 2 (timings 0)
                            {{40, 41, 44}, {nan, 2.0, 2.5}},     //
                            {{nan, nan, 4}, {nan, nan, 0.5}},    // in1 exists from commit 2 on
                            {{nan, nan, 50}, {nan, nan, 5.0}}};  //
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(latency[i].experiment, "exp");
    EXPECT_TRUE(same_values(latency[i].median_ms, want[i].median))
        << order[i] << ": " << values_text(latency[i].median_ms);
    EXPECT_TRUE(same_values(latency[i].iqr_ms, want[i].iqr)) << order[i] << ": " << values_text(latency[i].iqr_ms);
  }
}

TEST_F(TrendLatencyTest, PagesShowTheNumbersOverCommitsAndTheNewestTable) {
  TrendData trend = build_trend("main", fake_commits(3), m_store, TrendOptions{});
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  size_t section = html.find("<h2 id=\"latency\">Latency per backend</h2>");
  ASSERT_NE(section, std::string::npos);
  EXPECT_NE(html.find("Latency is information, never gated.", section), std::string::npos);
  size_t chart = html.find("Latency per backend: exp (environment " + trend.envs[0].env_key + ")", section);
  ASSERT_NE(chart, std::string::npos);
  size_t svg_at = html.rfind("<svg", chart);
  std::string svg = html.substr(svg_at, html.find("</svg>", chart) - svg_at);
  EXPECT_NE(svg.find("bf16 \u00b7 in0: median 12.0 ms, IQR 0.75 ms</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("onednn_off \u00b7 in0: median 40.0 ms, IQR n/a</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("cpu_fp32 \u00b7 in1 (reference): median 4.00 ms, IQR 0.50 ms</title>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("bf16 \u00b7 in0: median 0"), std::string::npos) << "nothing ran: no point";
  EXPECT_NE(svg.find("(log scale)"), std::string::npos) << "4 to 50 ms spans more than a decade: " << svg;
  // The newest baseline (commit 2): medians, ranges and the ratio to the same input's reference.
  EXPECT_NE(html.find("<td><code>onednn_off</code></td><td class=\"num\">44.0</td><td class=\"num\">2.50</td>"
                      "<td class=\"num\">x2.00</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td><code>bf16</code></td><td class=\"num\">-</td><td class=\"num\">-</td>"
                      "<td class=\"num\"></td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td><code>in1</code></td><td><code>onednn_off</code></td><td class=\"num\">50.0</td>"
                      "<td class=\"num\">5.00</td><td class=\"num\">x12.50</td>"),
            std::string::npos);

  std::string md = render_trend_markdown(trend, TrendMarkdownOptions{});
  EXPECT_NE(md.find("**Latency per backend**, environment `" + trend.envs[0].env_key.substr(0, 8) + "` at `1002aaa`"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| exp | in0 | cpu_fp32 (reference) | 22.0 | 1.50 |  | 20.0 (`1000aaa`) | +10% |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| exp | in0 | bf16 | - | - |  | 10.0 (`1000aaa`) |  |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| exp | in0 | onednn_off | 44.0 | 2.50 | x2.00 | 40.0 (`1000aaa`) | +10% |\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| exp | in1 | onednn_off | 50.0 | 5.00 | x12.50 |  |  |\n"), std::string::npos)
      << "no older point: no change\n"
      << md;
}

TEST_F(TrendTest, RunsWithoutTimingsHaveNoLatencySeries) {
  TrendData trend = build_trend("main", fake_commits(10), m_store, TrendOptions{});
  for (const auto& env : trend.envs) {
    EXPECT_TRUE(env.latency.empty()) << env.env_key;
  }
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  EXPECT_NE(html.find("No baseline on these commits carries latency"), std::string::npos);
  EXPECT_EQ(html.find("Latency per backend: "), std::string::npos);
  EXPECT_EQ(render_trend_markdown(trend, TrendMarkdownOptions{}).find("Latency per backend"), std::string::npos);
}

TEST(CommitDateTest, UsesTheCommitsOwnOffset) {
  EXPECT_EQ(format_commit_date({"", "", "", 0, 90}), "1970-01-01 01:30 +0130");
  EXPECT_EQ(format_commit_date({"", "", "", 0, -300}), "1969-12-31 19:00 -0500");
}

TEST(CommitDetailsTest, ReadsSubjectAuthorAndTime) {
  TempDir dir;
  test::TestRepo repo(dir.path());
  std::string sha = repo.commit("first line <b>");
  std::optional<GitRepo> git = GitRepo::open(dir.path());
  ASSERT_TRUE(git);
  CommitDetails details = git->commit_details(sha);
  EXPECT_EQ(details.sha, sha);
  EXPECT_EQ(details.subject, "first line <b>");
  EXPECT_EQ(details.author, "test");
  EXPECT_GT(details.time, 1500000000);
  EXPECT_EQ(git->commit_details("HEAD").sha, sha);
  EXPECT_THROW(git->commit_details(std::string(40, 'b')), Error);
}

}  // namespace
}  // namespace driftgate

// The per-commit history of a branch's baselines: what `driftgate trend` draws.
//
// A trend answers three questions a gate's single diff cannot: 1) when did a
// check's error move (a step change, listed with the commit range it happened in);
// 2) did the environment change there (a LibTorch, oneDNN or BLAS upgrade is a
// common cause of drift); 3) how would the pass rate move with another tolerance
// (the sweep, computed offline from each check's recorded min_atol). build_trend
// gathers all of it from a BaselineStore along a list of commits; the renderers
// (trend_html.h, trend_markdown.h) only format it. Memory grows with
// commits x checks (one double per check per baseline), reading one baseline at a time;
// the latency series add two doubles per (experiment, input, backend) per baseline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/environment.h"
#include "core/git_repo.h"
#include "differ/baseline_store.h"
#include "differ/changepoint.h"

namespace driftgate {

// Checks of one backend in one baseline: passed, and all but skipped ones.
struct BackendRate {
  int64_t passed = 0;
  int64_t counted = 0;
};

// One baseline of one environment.
struct TrendPoint {
  size_t commit = 0;               // index into TrendData::commits
  std::vector<BackendRate> rates;  // by EnvSeries::backends index
};

// One check's max_abs over the baselines of its environment.
struct CheckSeries {
  std::string id;
  std::string target;           // the target backend
  std::vector<double> max_abs;  // by EnvSeries::points index; NaN where absent or without statistics
  // max_abs / max|reference| (the relative error: a logit rescale moves max_abs, not this), by
  // points index; NaN where absent, without statistics, or where the reference is all zeros.
  std::vector<double> relative = {};
};

// Pass rate versus atol at each check's configured rtol (the paper's Figure 3).
struct SweepCurve {
  std::string backend;
  std::vector<double> atol;       // increasing, log-spaced
  std::vector<double> pass_rate;  // 0..1, same length
};

// A check whose error level moved between two baselines of the same environment, or across
// an environment change (from_env_key set): a library upgrade that moves a check's error
// starts a new environment key, so the change-point search within one key cannot see it.
struct StepChange {
  std::string env_key;
  std::string check_id;
  size_t last_before = 0;         // commit index of the last baseline at the old level
  size_t first_after = 0;         // commit index of the first baseline at the new level
  double before = 0.0;            // median max_abs over the old segment
  double after = 0.0;             // and over the new one
  std::string from_env_key = {};  // across an environment change: the old key ("" within env_key)
};

// The steps of one cause: the same commit range in the same environment (or across the same
// environment change). One code change or library upgrade moves many checks at once; a report
// lists the groups, worst first, and folds the checks of each.
struct StepGroup {
  std::vector<const StepChange*> steps;  // largest step first
  double min_factor = 1.0;               // after / before over the group's steps
  double max_factor = 1.0;
  double worst_decades = 0.0;  // max |log10(after / before)|
};

// `steps` grouped by (env_key, from_env_key, last_before, first_after), worst group first;
// the pointers point into `steps`.
std::vector<StepGroup> group_steps(const std::vector<StepChange>& steps);

// "x1000 worse", "x12 to x1000 worse", "3 worse (x12 to x1000), 1 better (x5)": the factors of a group.
std::string describe_factors(const StepGroup& group);

// Consecutive baselines (in commit order) whose keyed environments differ.
struct EnvironmentMarker {
  size_t commit = 0;  // the first commit in the new environment
  std::string from_key;
  std::string to_key;
  std::string description;  // "onednn 2.6.3 -> 3.1"
};

// Tier-2 per-layer errors of one check on one commit, from the check's
// `localization.profile` (core/tier2_profile.h). build_trend keeps, per environment
// and check, the profile of the newest commit that carries one.
struct LayerError {
  std::string layer;
  double delta = 0.0;        // range-normalized error: max |target - reference| / range(reference)
  double noise_floor = 0.0;  // the same metric for fp32 against the float64 oracle; 0 without oracle
  double threshold = 0.0;    // delta above this is divergence; 0 when not recorded
  bool observable = true;    // false: the target's graph fused or removed the value (delta means nothing)
};
struct LayerProfile {
  std::string env_key;
  std::string check_id;
  size_t commit = 0;
  std::vector<LayerError> layers;  // in network order
  std::string first_divergent;     // the first layer over its threshold; "" when none is
};

// One backend's steady-state latency on one input over the baselines of its environment
// (differ/latency.h's rows, one per baseline): information for the trend page, never gated,
// and only comparable within one environment (its key includes the CPU and the threads).
struct LatencySeries {
  std::string experiment;
  std::string input;
  std::string backend;
  bool reference = false;              // the experiment's reference (in the newest baseline that lists it)
  std::vector<double> median_ms = {};  // by EnvSeries::points index; NaN where absent or nothing ran
  std::vector<double> iqr_ms = {};     // likewise; NaN also where a record has no range (older records)
};

// Everything about one environment key along the branch.
struct EnvSeries {
  std::string env_key;
  Environment environment;            // of its newest baseline
  std::vector<std::string> backends;  // target backend names, sorted
  std::vector<TrendPoint> points;     // oldest first
  std::vector<CheckSeries> checks;    // sorted by id
  std::vector<SweepCurve> sweep;      // from the newest baseline: numeric checks only
  // The newest baseline's task checks (tier 3) per target backend: no atol moves them, so they
  // are counted here and kept out of the sweep curves.
  std::vector<std::pair<std::string, BackendRate>> task_rates;
  double configured_atol = 0.0;  // the most common check atol in the newest baseline
  // Per (experiment, input, backend) with a time in at least one baseline: sorted by
  // experiment, then input, the reference first, then the targets by name.
  std::vector<LatencySeries> latency = {};
};

struct TrendData {
  std::string branch;                  // as the user named it
  std::vector<CommitDetails> commits;  // first-parent history, oldest first
  std::vector<EnvSeries> envs;         // by env key; only keys with a baseline on these commits
  std::vector<EnvironmentMarker> markers;
  std::vector<StepChange> steps;  // by commit, then by size of the step (largest first)
  std::vector<LayerProfile> layers;
  size_t baselines = 0;  // baselines read
};

struct TrendOptions {
  std::optional<std::string> env_key;  // only this environment
  ChangePointOptions change_points;    // on log10(max_abs); min_effect in decades
  double error_floor = 1e-12;          // max_abs below this (0 included) counts as this, for the log scale
  size_t sweep_points = 41;            // atol values in each sweep curve
};

// Reads the baselines of `commits` (newest first, as GitRepo::first_parent_walk gives them)
// from `store` and derives pass rates, error series, environment markers, step changes
// and sweep curves. Throws driftgate::Error when options.env_key is not in the store or a
// baseline is corrupt.
TrendData build_trend(const std::string& branch, std::vector<CommitDetails> commits, const BaselineStore& store,
                      const TrendOptions& options);

// `latency` (EnvSeries::latency) with each experiment of more than `max_inputs` inputs as one
// series per backend (input "N inputs"): at each point, the median over its inputs of the
// median and of the IQR (NaN ones left out), as the tables of differ/latency.h show such an
// experiment. Other experiments' series as they are; the order stays.
std::vector<LatencySeries> collapse_latency_inputs(const std::vector<LatencySeries>& latency, size_t max_inputs);

// The sweep of one backend's checks: thresholds are min_atol for numerically compared
// checks and +inf for ones that can never pass by tolerance (crash, shape, ...).
// The atol grid spans sweep_decades(thresholds).
SweepCurve make_sweep_curve(const std::string& backend, std::vector<double> thresholds, size_t points);

// The same on a given grid of atol 10^low .. 10^high (build_trend gives every backend of
// an environment one grid, so their curves start and end together).
SweepCurve make_sweep_curve(const std::string& backend, std::vector<double> thresholds, size_t points, double low,
                            double high);

// log10 of the atol range a sweep over `thresholds` draws: from one decade below the smallest
// positive finite threshold to one above the largest; -8..-1 when there is none.
std::pair<double, double> sweep_decades(const std::vector<double>& thresholds);

// "2026-11-29 23:53 +0100" in the commit's own offset.
std::string format_commit_date(const CommitDetails& commit);

// Pass rate 0..1 of a rate, or NaN when nothing was counted.
double pass_fraction(const BackendRate& rate);

}  // namespace driftgate

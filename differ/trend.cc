#include "differ/trend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "differ/latency.h"
#include "differ/run_digest.h"
#include "differ/sweep.h"

namespace driftgate {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

// Accumulates one environment's baselines, one at a time, oldest first.
class EnvBuilder {
 public:
  EnvBuilder(std::string env_key, size_t sweep_points) : m_sweep_points(sweep_points) {
    m_series.env_key = std::move(env_key);
  }

  void add(size_t commit, const RunFile& run) {
    size_t point = m_series.points.size();
    m_series.environment = run.header.environment;
    TrendPoint trend_point;
    trend_point.commit = commit;
    std::map<std::string, BackendRate> rates;
    for (const auto& check : run.checks) {
      BackendRate& rate = rates[check.target];
      if (check.status != CheckStatus::k_skipped) {
        ++rate.counted;
      }
      if (check.status == CheckStatus::k_pass) {
        ++rate.passed;
      }
      CheckSeries& series = series_of(check);
      series.max_abs.resize(point, k_nan);
      series.max_abs.push_back(check.stats ? check.stats->max_abs : k_nan);
      series.relative.resize(point, k_nan);
      series.relative.push_back(check.stats && check.stats->max_abs_reference_value > 0.0
                                    ? check.stats->max_abs / check.stats->max_abs_reference_value
                                    : k_nan);
    }
    for (auto& [backend, rate] : rates) {
      m_backend_rates[backend].resize(point);
      m_backend_rates[backend].push_back(rate);
    }
    m_series.points.push_back(std::move(trend_point));
    set_sweep(run);
    add_latency(point, run);
  }

  EnvSeries finish() {
    size_t points = m_series.points.size();
    for (auto& [backend, rates] : m_backend_rates) {
      m_series.backends.push_back(backend);
      rates.resize(points);
    }
    for (size_t p = 0; p < points; ++p) {
      for (const auto& [backend, rates] : m_backend_rates) {
        m_series.points[p].rates.push_back(rates[p]);
      }
    }
    for (auto& [id, series] : m_checks) {
      series.max_abs.resize(points, k_nan);
      series.relative.resize(points, k_nan);
      m_series.checks.push_back(std::move(series));
    }
    std::vector<double> all_thresholds;
    for (const auto& [backend, values] : m_thresholds) {
      all_thresholds.insert(all_thresholds.end(), values.begin(), values.end());
    }
    auto [low, high] = sweep_decades(all_thresholds);
    for (auto& [backend, values] : m_thresholds) {
      m_series.sweep.push_back(make_sweep_curve(backend, std::move(values), m_sweep_points, low, high));
    }
    for (auto& [key, series] : m_latency) {
      series.median_ms.resize(points, k_nan);
      series.iqr_ms.resize(points, k_nan);
      m_series.latency.push_back(std::move(series));
    }
    std::sort(m_series.latency.begin(), m_series.latency.end(), [](const LatencySeries& a, const LatencySeries& b) {
      const bool a_target = !a.reference;
      const bool b_target = !b.reference;
      return std::tie(a.experiment, a.input, a_target, a.backend) <
             std::tie(b.experiment, b.input, b_target, b.backend);
    });
    return std::move(m_series);
  }

 private:
  CheckSeries& series_of(const CheckRecord& check) {
    auto it = m_checks.find(check.id);
    if (it == m_checks.end()) {
      it = m_checks.emplace(check.id, CheckSeries{check.id, check.target, {}, {}}).first;
    }
    return it->second;
  }

  // Remembers the sweep thresholds of `run`; only the newest baseline's are drawn.
  void set_sweep(const RunFile& run) {
    m_thresholds.clear();
    std::map<std::string, BackendRate> task_rates;
    std::map<double, int> atol_counts;
    for (const auto& check : run.checks) {
      if (check.status == CheckStatus::k_skipped) {
        continue;
      }
      if (is_task_check(check)) {
        BackendRate& rate = task_rates[check.target];
        ++rate.counted;
        rate.passed += check.status == CheckStatus::k_pass ? 1 : 0;
        continue;
      }
      bool numeric = check.status == CheckStatus::k_pass || check.status == CheckStatus::k_fail_numeric;
      bool usable = numeric && check.stats && std::isfinite(check.stats->min_atol);
      m_thresholds[check.target].push_back(usable ? check.stats->min_atol : INFINITY);
      ++atol_counts[check.tolerance.atol];
    }
    m_series.task_rates.assign(task_rates.begin(), task_rates.end());
    int best = 0;
    for (const auto& [atol, count] : atol_counts) {
      if (count > best) {
        best = count;
        m_series.configured_atol = atol;
      }
    }
  }

  // Each backend's latency per input in `run` (latency_rows reads the check lines' timings):
  // a series is made for a row with a time only, so runs recorded before timings add nothing.
  void add_latency(size_t point, const RunFile& run) {
    for (const LatencyRow& row : latency_rows(digest_view(run))) {
      auto key = std::make_tuple(row.experiment, row.input, row.backend);
      auto it = m_latency.find(key);
      if (it == m_latency.end()) {
        if (std::isnan(row.median_ms)) {
          continue;
        }
        it = m_latency.emplace(std::move(key), LatencySeries{row.experiment, row.input, row.backend}).first;
      }
      LatencySeries& series = it->second;
      if (series.median_ms.size() > point) {
        continue;  // a backend listed twice in one experiment: its first row counts
      }
      series.reference = row.reference;
      series.median_ms.resize(point, k_nan);
      series.iqr_ms.resize(point, k_nan);
      series.median_ms.push_back(row.median_ms);
      series.iqr_ms.push_back(std::isnan(row.median_ms) ? k_nan : row.iqr_ms);
    }
  }

  size_t m_sweep_points;
  EnvSeries m_series;
  std::map<std::tuple<std::string, std::string, std::string>, LatencySeries> m_latency;
  std::map<std::string, CheckSeries> m_checks;
  std::map<std::string, std::vector<BackendRate>> m_backend_rates;
  std::map<std::string, std::vector<double>> m_thresholds;  // of the newest baseline, by target
};

// The environment among `candidates` that differs from `after` in the fewest keyed fields.
const Environment* closest(const std::vector<const Environment*>& candidates, const Environment& after) {
  const Environment* best = nullptr;
  size_t best_changes = std::numeric_limits<size_t>::max();
  for (const Environment* candidate : candidates) {
    size_t changes = diff_environments(*candidate, after).size();
    if (changes < best_changes) {
      best_changes = changes;
      best = candidate;
    }
  }
  return best;
}

// Markers where the set of environment keys differs from that of the previous commit
// with baselines: each new key is described against the most similar old one.
void add_markers(size_t commit, const std::map<std::string, Environment>& current,
                 const std::map<std::string, Environment>& previous, std::vector<EnvironmentMarker>& markers) {
  if (previous.empty()) {
    return;
  }
  std::vector<const Environment*> gone;
  std::vector<const Environment*> all_previous;
  for (const auto& [key, environment] : previous) {
    all_previous.push_back(&environment);
    if (current.count(key) == 0) {
      gone.push_back(&environment);
    }
  }
  for (const auto& [key, environment] : current) {
    if (previous.count(key) != 0) {
      continue;
    }
    const Environment* before = closest(gone.empty() ? all_previous : gone, environment);
    markers.push_back({commit, before->key(), key, describe_changes(diff_environments(*before, environment))});
  }
}

void find_steps(const EnvSeries& env, const TrendOptions& options, std::vector<StepChange>& steps) {
  for (const auto& check : env.checks) {
    std::vector<double> levels;
    std::vector<size_t> points;
    for (size_t p = 0; p < check.max_abs.size(); ++p) {
      if (std::isnan(check.max_abs[p])) {
        continue;
      }
      levels.push_back(std::log10(std::max(check.max_abs[p], options.error_floor)));
      points.push_back(p);
    }
    for (const auto& change : find_change_points(levels, options.change_points)) {
      steps.push_back({env.env_key, check.id, env.points[points[change.index - 1]].commit,
                       env.points[points[change.index]].commit, std::pow(10.0, change.before_level),
                       std::pow(10.0, change.after_level)});
    }
  }
}

double median_of(std::vector<double> values) {
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  if (values.size() % 2 == 1) {
    return *middle;
  }
  return (*middle + *std::max_element(values.begin(), middle)) / 2.0;
}

// Steps at environment changes: for every check in both environments, the median
// log10(max_abs) of the old key's last min_segment baselines before the change against the
// new key's first min_segment baselines from it; listed when they differ by min_effect.
void find_environment_steps(const TrendData& trend, const TrendOptions& options, std::vector<StepChange>& steps) {
  size_t window = std::max<size_t>(1, options.change_points.min_segment);
  auto env_of = [&](const std::string& key) -> const EnvSeries* {
    for (const auto& env : trend.envs) {
      if (env.env_key == key) {
        return &env;
      }
    }
    return nullptr;
  };
  for (const auto& marker : trend.markers) {
    const EnvSeries* before = env_of(marker.from_key);
    const EnvSeries* after = env_of(marker.to_key);
    if (before == nullptr || after == nullptr) {
      continue;
    }
    std::map<std::string, const CheckSeries*> old_checks;
    for (const auto& check : before->checks) {
      old_checks[check.id] = &check;
    }
    for (const auto& check : after->checks) {
      auto old_check = old_checks.find(check.id);
      if (old_check == old_checks.end()) {
        continue;
      }
      std::vector<double> old_levels;
      size_t last_before = 0;
      for (size_t p = before->points.size(); p-- > 0 && old_levels.size() < window;) {
        double value = old_check->second->max_abs[p];
        if (before->points[p].commit < marker.commit && !std::isnan(value)) {
          last_before = std::max(last_before, before->points[p].commit);
          old_levels.push_back(std::log10(std::max(value, options.error_floor)));
        }
      }
      std::vector<double> new_levels;
      size_t first_after = trend.commits.size();
      for (size_t p = 0; p < after->points.size() && new_levels.size() < window; ++p) {
        double value = check.max_abs[p];
        if (after->points[p].commit >= marker.commit && !std::isnan(value)) {
          first_after = std::min(first_after, after->points[p].commit);
          new_levels.push_back(std::log10(std::max(value, options.error_floor)));
        }
      }
      if (old_levels.empty() || new_levels.empty()) {
        continue;
      }
      double old_level = median_of(old_levels);
      double new_level = median_of(new_levels);
      if (std::fabs(new_level - old_level) >= options.change_points.min_effect) {
        steps.push_back({after->env_key, check.id, last_before, first_after, std::pow(10.0, old_level),
                         std::pow(10.0, new_level), before->env_key});
      }
    }
  }
}

}  // namespace

double pass_fraction(const BackendRate& rate) {
  if (rate.counted == 0) {
    return k_nan;
  }
  return static_cast<double>(rate.passed) / static_cast<double>(rate.counted);
}

std::pair<double, double> sweep_decades(const std::vector<double>& thresholds) {
  double smallest = INFINITY;
  double largest = 0.0;
  for (double value : thresholds) {
    if (value > 0.0 && std::isfinite(value)) {
      smallest = std::min(smallest, value);
      largest = std::max(largest, value);
    }
  }
  if (!std::isfinite(smallest)) {
    return {-8.0, -1.0};
  }
  // One decade of margin on each side.
  return {std::floor(std::log10(smallest)) - 1.0, std::ceil(std::log10(largest)) + 1.0};
}

SweepCurve make_sweep_curve(const std::string& backend, std::vector<double> thresholds, size_t points) {
  auto [low, high] = sweep_decades(thresholds);
  return make_sweep_curve(backend, std::move(thresholds), points, low, high);
}

SweepCurve make_sweep_curve(const std::string& backend, std::vector<double> thresholds, size_t points, double low,
                            double high) {
  SweepCurve curve;
  curve.backend = backend;
  std::sort(thresholds.begin(), thresholds.end());
  points = std::max<size_t>(points, 2);
  for (size_t i = 0; i < points; ++i) {
    double atol = std::pow(10.0, low + (high - low) * static_cast<double>(i) / static_cast<double>(points - 1));
    auto passed = std::upper_bound(thresholds.begin(), thresholds.end(), atol) - thresholds.begin();
    curve.atol.push_back(atol);
    curve.pass_rate.push_back(
        thresholds.empty() ? k_nan : static_cast<double>(passed) / static_cast<double>(thresholds.size()));
  }
  return curve;
}

std::vector<LatencySeries> collapse_latency_inputs(const std::vector<LatencySeries>& latency, size_t max_inputs) {
  // Point by point through the rows' collapse (differ/latency.h), which decides the grouping
  // the same way for every point: the same series in, the same rows out.
  size_t points = 0;
  for (const LatencySeries& series : latency) {
    points = std::max(points, series.median_ms.size());
  }
  auto rows_at = [&](size_t point) {
    std::vector<LatencyRow> rows;
    for (const LatencySeries& series : latency) {
      LatencyRow row{series.experiment, series.input, series.backend, series.reference};
      row.median_ms = point < series.median_ms.size() ? series.median_ms[point] : k_nan;
      row.iqr_ms = point < series.iqr_ms.size() ? series.iqr_ms[point] : k_nan;
      rows.push_back(std::move(row));
    }
    return collapse_latency_rows(rows, max_inputs);
  };
  std::vector<LatencySeries> out;
  for (const LatencyRow& row : rows_at(points)) {  // past the last point: the shape, no values
    out.push_back(LatencySeries{row.experiment, row.input, row.backend, row.reference});
  }
  for (size_t point = 0; point < points; ++point) {
    const std::vector<LatencyRow> rows = rows_at(point);
    for (size_t i = 0; i < rows.size(); ++i) {
      out[i].median_ms.push_back(rows[i].median_ms);
      out[i].iqr_ms.push_back(rows[i].iqr_ms);
    }
  }
  return out;
}

std::vector<StepGroup> group_steps(const std::vector<StepChange>& steps) {
  std::map<std::tuple<std::string, std::string, size_t, size_t>, StepGroup> by_cause;
  for (const auto& step : steps) {
    StepGroup& group = by_cause[{step.env_key, step.from_env_key, step.last_before, step.first_after}];
    double factor = step.after / step.before;
    if (group.steps.empty()) {
      group.min_factor = factor;
      group.max_factor = factor;
    }
    group.min_factor = std::min(group.min_factor, factor);
    group.max_factor = std::max(group.max_factor, factor);
    group.worst_decades = std::max(group.worst_decades, std::fabs(std::log10(factor)));
    group.steps.push_back(&step);
  }
  std::vector<StepGroup> groups;
  for (auto& [cause, group] : by_cause) {
    std::stable_sort(group.steps.begin(), group.steps.end(), [](const StepChange* a, const StepChange* b) {
      return std::fabs(std::log10(a->after / a->before)) > std::fabs(std::log10(b->after / b->before));
    });
    groups.push_back(std::move(group));
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const StepGroup& a, const StepGroup& b) { return a.worst_decades > b.worst_decades; });
  return groups;
}

namespace {

std::string factor_text(double factor) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "x%.4g", factor);
  return buffer;
}

// "x12" or "x12 to x1000" for factors >= 1 (worse) or their inverses (better); factors that
// print alike are named once.
std::string factor_range(double low, double high) {
  std::string low_text = factor_text(low);
  std::string high_text = factor_text(high);
  return low_text == high_text ? low_text : low_text + " to " + high_text;
}

}  // namespace

std::string describe_factors(const StepGroup& group) {
  size_t worse = 0;
  double worse_low = INFINITY;
  double worse_high = 0.0;
  double better_low = INFINITY;
  double better_high = 0.0;
  for (const StepChange* step : group.steps) {
    double factor = step->after / step->before;
    if (factor >= 1.0) {
      ++worse;
      worse_low = std::min(worse_low, factor);
      worse_high = std::max(worse_high, factor);
    } else {
      better_low = std::min(better_low, 1.0 / factor);
      better_high = std::max(better_high, 1.0 / factor);
    }
  }
  size_t better = group.steps.size() - worse;
  if (better == 0) {
    return factor_range(worse_low, worse_high) + " worse";
  }
  if (worse == 0) {
    return factor_range(better_low, better_high) + " better";
  }
  return std::to_string(worse) + " worse (" + factor_range(worse_low, worse_high) + "), " + std::to_string(better) +
         " better (" + factor_range(better_low, better_high) + ")";
}

std::string format_commit_date(const CommitDetails& commit) {
  std::time_t local = static_cast<std::time_t>(commit.time + int64_t{60} * commit.offset_minutes);
  std::tm parts{};
  gmtime_r(&local, &parts);
  char buffer[64];
  int offset = std::abs(commit.offset_minutes);
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02d %02d:%02d %c%02d%02d", parts.tm_year + 1900, parts.tm_mon + 1,
                parts.tm_mday, parts.tm_hour, parts.tm_min, commit.offset_minutes < 0 ? '-' : '+', offset / 60,
                offset % 60);
  return buffer;
}

namespace {

// Commits come oldest first, so a later commit's profile replaces an earlier one.
void collect_layer_profiles(const std::string& env_key, size_t commit, const RunFile& run,
                            std::map<std::pair<std::string, std::string>, LayerProfile>& profiles) {
  for (const CheckRecord& check : run.checks) {
    if (!check.localization || check.localization->profile.empty()) {
      continue;
    }
    LayerProfile profile{env_key, check.id, commit, {}, check.localization->first_divergent};
    for (const Tier2Layer& layer : check.localization->profile) {
      profile.layers.push_back(
          {layer.name, layer.delta, layer.noise_floor, layer.threshold, layer.status != LayerStatus::k_not_observable});
    }
    profiles[{env_key, check.id}] = std::move(profile);
  }
}

}  // namespace

TrendData build_trend(const std::string& branch, std::vector<CommitDetails> commits, const BaselineStore& store,
                      const TrendOptions& options) {
  TrendData trend;
  trend.branch = branch;
  std::reverse(commits.begin(), commits.end());
  trend.commits = std::move(commits);
  std::vector<std::string> keys = store.env_keys();
  if (options.env_key) {
    if (std::find(keys.begin(), keys.end(), *options.env_key) == keys.end()) {
      std::string known;
      for (const auto& key : keys) {
        known += (known.empty() ? "" : ", ") + key;
      }
      throw Error("--env " + *options.env_key + ": the store has no baselines for this environment key (it has: " +
                  (known.empty() ? "none" : known) + "); run driftgate env on the machine to see its key");
    }
    keys = {*options.env_key};
  }
  std::map<std::string, std::set<std::string>> shas;
  std::map<std::string, EnvBuilder> builders;
  for (const auto& key : keys) {
    std::vector<std::string> list = store.shas(key);
    shas[key] = std::set<std::string>(list.begin(), list.end());
  }
  std::map<std::pair<std::string, std::string>, LayerProfile> newest_profiles;  // by (env key, check id)
  std::map<std::string, Environment> previous;
  for (size_t c = 0; c < trend.commits.size(); ++c) {
    std::map<std::string, Environment> current;
    for (const auto& key : keys) {
      if (shas[key].count(trend.commits[c].sha) == 0) {
        continue;
      }
      std::optional<RunFile> run = store.load(key, trend.commits[c].sha);
      if (!run) {
        continue;
      }
      auto it = builders.try_emplace(key, key, options.sweep_points).first;
      it->second.add(c, *run);
      collect_layer_profiles(key, c, *run, newest_profiles);
      current[key] = run->header.environment;
      ++trend.baselines;
    }
    if (!current.empty()) {
      add_markers(c, current, previous, trend.markers);
      previous = std::move(current);
    }
  }
  for (auto& [key, builder] : builders) {
    trend.envs.push_back(builder.finish());
  }
  for (auto& [key, profile] : newest_profiles) {
    trend.layers.push_back(std::move(profile));
  }
  for (const auto& env : trend.envs) {
    find_steps(env, options, trend.steps);
  }
  find_environment_steps(trend, options, trend.steps);
  std::stable_sort(trend.steps.begin(), trend.steps.end(), [](const StepChange& a, const StepChange& b) {
    if (a.first_after != b.first_after) {
      return a.first_after < b.first_after;
    }
    return std::fabs(std::log10(a.after / a.before)) > std::fabs(std::log10(b.after / b.before));
  });
  return trend;
}

}  // namespace driftgate

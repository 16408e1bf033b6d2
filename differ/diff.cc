#include "differ/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string_view>
#include <tuple>

#include "core/enum_names.h"
#include "core/error.h"

namespace driftgate {

namespace {

constexpr EnumName<DiffClass> k_class_names[] = {
    {DiffClass::k_regressed, "regressed"},
    {DiffClass::k_crashed, "crashed"},
    {DiffClass::k_missing, "missing"},
    {DiffClass::k_failure_grew, "failure_grew"},
    {DiffClass::k_new_failure, "new_failure"},
    {DiffClass::k_drift_grew, "drift_grew"},
    {DiffClass::k_task_changed, "task_changed"},
    {DiffClass::k_new, "new"},
    {DiffClass::k_fixed, "fixed"},
    {DiffClass::k_unchanged, "unchanged"},
};

std::string short_hash(const std::string& hash) { return hash.empty() ? "(none)" : hash.substr(0, 7); }

std::optional<double> max_abs_of(const CheckDigest& check) {
  if (!check.has_stats) {
    return std::nullopt;
  }
  return check.max_abs;
}

// max_abs grew by more than the drift factor and ends above the floor; both need statistics.
bool grew(const CheckDigest& before, const CheckDigest& after, const DiffOptions& options) {
  if (!before.has_stats || !after.has_stats) {
    return false;
  }
  return after.max_abs > options.drift_floor && after.max_abs > before.max_abs * options.drift_factor;
}

bool drift_grew(const CheckDigest& before, const CheckDigest& after, const DiffOptions& options) {
  return before.status == CheckStatus::k_pass && after.status == CheckStatus::k_pass && grew(before, after, options);
}

// A failure kept (fail_* -> fail_*, an accepted known failure included) whose error grew by the factor.
bool failure_grew(const CheckDigest& before, const CheckDigest& after, const DiffOptions& options) {
  return is_failure(before.status) && is_failure(after.status) && grew(before, after, options);
}

const TaskResult* task_of(const CheckDigest& check) {
  return check.record != nullptr && check.record->task ? &*check.record->task : nullptr;
}

// Tier-3 metrics that are the answer itself (counts and agreement fractions), not numeric drift.
bool task_changed(const CheckDigest& before_check, const CheckDigest& after_check) {
  const TaskResult* before = task_of(before_check);
  const TaskResult* after = task_of(after_check);
  if (before == nullptr || after == nullptr || before_check.status != after_check.status) {
    return false;
  }
  static const char* const k_answer_metrics[] = {
      "top1_agreement",    "topk_overlap", "flips",           "tie_swaps",       "reference_detections",
      "target_detections", "matched",      "map50",           "pixel_agreement", "miou",
      "confident_flips",   "tie_flips",    "matched_fraction"};
  for (const char* name : k_answer_metrics) {
    auto was = before->metrics.find(name);
    auto now = after->metrics.find(name);
    const bool had = was != before->metrics.end();
    const bool has = now != after->metrics.end();
    if (had != has || (had && std::fabs(was->second - now->second) > 1e-12)) {
      return true;
    }
  }
  return false;
}

DiffClass classify(const CheckDigest& before, const CheckDigest& after, const DiffOptions& options) {
  bool failed_before = is_failure(before.status);
  bool fails_now = is_failure(after.status);
  if (!failed_before && fails_now) {
    return DiffClass::k_regressed;
  }
  if (failed_before && !is_crash(before.status) && is_crash(after.status)) {
    return DiffClass::k_crashed;
  }
  if (failed_before && after.status == CheckStatus::k_pass) {
    return DiffClass::k_fixed;
  }
  if (failure_grew(before, after, options)) {
    return DiffClass::k_failure_grew;
  }
  if (drift_grew(before, after, options)) {
    return DiffClass::k_drift_grew;
  }
  if (task_changed(before, after)) {
    return DiffClass::k_task_changed;
  }
  return DiffClass::k_unchanged;
}

std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

std::string list_text(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) {
    text += (text.empty() ? "" : ", ") + item;
  }
  return "[" + text + "]";
}

// `tolerances:` entries as "[target cpu_bf16: rule oracle k 4, dtype bfloat16: atol 0.01 rtol 0.016]".
std::string tolerance_overrides_text(const std::vector<ToleranceOverride>& entries) {
  std::vector<std::string> items;
  for (const ToleranceOverride& entry : entries) {
    std::string selects;
    for (const auto& [name, value] :
         {std::pair{"target", &entry.target}, {"output", &entry.output}, {"dtype", &entry.dtype}}) {
      if (!value->empty()) {
        selects += (selects.empty() ? "" : " ") + std::string(name) + " " + *value;
      }
    }
    std::string sets;
    if (entry.rule) {
      sets += std::string(" rule ") + to_string(*entry.rule);
    }
    if (entry.atol) {
      sets += " atol " + number_text(*entry.atol) + " rtol " + number_text(*entry.rtol);
    }
    if (entry.k) {
      sets += " k " + number_text(*entry.k);
    }
    items.push_back(selects + ":" + sets);
  }
  return list_text(items);
}

// What the run records of an experiment's config that differs: the settings a changed config
// hash may stand for. "" when none does.
std::string config_details(const ExperimentHeader& was, const ExperimentHeader& now) {
  std::vector<std::string> parts;
  auto add = [&](const std::string& key, const std::string& before, const std::string& after) {
    if (before != after) {
      parts.push_back(key + " " + before + " -> " + after);
    }
  };
  add("tolerance atol", number_text(was.tolerance.atol), number_text(now.tolerance.atol));
  add("tolerance rtol", number_text(was.tolerance.rtol), number_text(now.tolerance.rtol));
  add("tolerance rule", to_string(was.tolerance.rule), to_string(now.tolerance.rule));
  add("tolerance k", was.tolerance.k > 0.0 ? number_text(was.tolerance.k) : "default",
      now.tolerance.k > 0.0 ? number_text(now.tolerance.k) : "default");
  add("tolerances", tolerance_overrides_text(was.tolerance_overrides),
      tolerance_overrides_text(now.tolerance_overrides));
  add("reference", was.reference, now.reference);
  add("targets", list_text(was.targets), list_text(now.targets));
  add("inputs", list_text(was.inputs), list_text(now.inputs));
  add("model", was.model_path, now.model_path);
  std::string text;
  for (const auto& part : parts) {
    text += (text.empty() ? "" : "; ") + part;
  }
  return text;
}

std::vector<ExperimentChange> experiment_changes(const RunHeader& run, const RunHeader& baseline) {
  std::vector<ExperimentChange> changes;
  for (const auto& now : run.experiments) {
    auto was = std::find_if(baseline.experiments.begin(), baseline.experiments.end(),
                            [&](const ExperimentHeader& e) { return e.name == now.name; });
    if (was == baseline.experiments.end()) {
      continue;
    }
    if (was->model_hash != now.model_hash) {
      changes.push_back({now.name, "model", was->model_hash, now.model_hash});
    }
    if (was->config_hash != now.config_hash) {
      changes.push_back({now.name, "config", was->config_hash, now.config_hash, config_details(*was, now)});
    }
  }
  std::sort(changes.begin(), changes.end(), [](const ExperimentChange& a, const ExperimentChange& b) {
    return std::tie(a.experiment, a.what) < std::tie(b.experiment, b.what);
  });
  return changes;
}

void add_experiment_notes(DiffResult& result) {
  for (auto& check : result.checks) {
    for (const auto& change : result.experiment_changes) {
      if (change.experiment == check.experiment) {
        check.notes.push_back(change.note());
      }
    }
  }
}

std::shared_ptr<const Localization> localization_of(const CheckDigest& check) {
  if (check.record == nullptr || !check.record->localization) {
    return nullptr;
  }
  return std::make_shared<const Localization>(*check.record->localization);
}

// The entry of a check in both files, of class `diff_class` (classify()'s).
CheckDiff compare(const CheckDigest& before, const CheckDigest& after, DiffClass diff_class) {
  CheckDiff diff{
      std::string(after.id), std::string(after.experiment), diff_class, before.status, after.status, max_abs_of(before),
      max_abs_of(after),     std::string(after.message),    {}};
  diff.localization = localization_of(after);
  if (diff.diff_class == DiffClass::k_unchanged && before.status != after.status) {
    diff.notes.push_back(std::string("status changed (") + to_string(before.status) + " -> " + to_string(after.status) +
                         ")");
  }
  return diff;
}

}  // namespace

const char* to_string(DiffClass diff_class) { return enum_name(k_class_names, diff_class); }

std::string to_label(DiffClass diff_class) {
  std::string label = to_string(diff_class);
  std::replace(label.begin(), label.end(), '_', ' ');
  return label;
}

DiffClass parse_diff_class(const std::string& name) {
  if (std::optional<DiffClass> diff_class = enum_value(k_class_names, name)) {
    return *diff_class;
  }
  std::string known;
  for (const std::string& class_name : enum_names(k_class_names)) {
    known += (known.empty() ? "" : ", ") + class_name;
  }
  throw Error("unknown diff class '" + name + "'; known classes: " + known);
}

const std::vector<DiffClass>& all_diff_classes() {
  static const std::vector<DiffClass> classes = enum_values(k_class_names);
  return classes;
}

std::string ExperimentChange::note() const {
  return what + " changed (" + short_hash(before) + " -> " + short_hash(after) +
         (details.empty() ? "" : ": " + details) + ")";
}

void QuietChecks::reserve(size_t count, size_t id_bytes) {
  m_ids.reserve(count);
  m_experiment_of.reserve(count);
  m_text.reserve(id_bytes);
}

void QuietChecks::add(std::string_view id, std::string_view experiment) {
  m_ids.emplace_back(m_text.size(), id.size());
  m_text.append(id.data(), id.size());
  if (m_experiments.empty() || m_experiments[m_experiment_of.back()] != experiment) {
    auto known = std::find(m_experiments.begin(), m_experiments.end(), experiment);
    if (known == m_experiments.end()) {
      known = m_experiments.emplace(m_experiments.end(), experiment);
    }
    m_experiment_of.push_back(static_cast<uint32_t>(known - m_experiments.begin()));
  } else {
    m_experiment_of.push_back(m_experiment_of.back());
  }
}

int64_t DiffResult::count(DiffClass diff_class) const {
  auto it = counts.find(diff_class);
  return it == counts.end() ? 0 : it->second;
}

namespace {

CheckDiff new_check(const CheckDigest& check) {
  CheckDiff diff{std::string(check.id),
                 std::string(check.experiment),
                 is_failure(check.status) ? DiffClass::k_new_failure : DiffClass::k_new,
                 std::nullopt,
                 check.status,
                 std::nullopt,
                 max_abs_of(check),
                 std::string(check.message),
                 {}};
  diff.localization = localization_of(check);
  return diff;
}

CheckDiff missing_check(const CheckDigest& check) {
  return {std::string(check.id),
          std::string(check.experiment),
          DiffClass::k_missing,
          check.status,
          std::nullopt,
          max_abs_of(check),
          std::nullopt,
          std::string(check.message),
          {}};
}

}  // namespace

DiffResult diff_runs(const RunDigest& run, const RunDigest& baseline, const DiffOptions& options) {
  DiffResult result;
  // One merge of both files in id order (ids are unique within a file: the readers
  // refuse repeats; merge_by_id), then a pass by class: the (class, id) order of the
  // report without comparing a million ids twice or hashing them.
  // Pass 1: the pairs (run index, baseline index; npos for none) in id order, and their classes.
  constexpr size_t k_none = SIZE_MAX;
  struct Pair {
    size_t now;
    size_t was;
    DiffClass diff_class;
  };
  std::vector<Pair> pairs;
  pairs.reserve(std::max(run.checks.size(), baseline.checks.size()));
  merge_by_id(run, baseline, [&](size_t now, size_t was) {
    DiffClass diff_class = was == k_none
                               ? (is_failure(run.checks[now].status) ? DiffClass::k_new_failure : DiffClass::k_new)
                           : now == k_none ? DiffClass::k_missing
                                           : classify(baseline.checks[was], run.checks[now], options);
    pairs.push_back({now, was, diff_class});
  });
  result.experiment_changes = experiment_changes(run.header, baseline.header);
  std::set<std::string_view> changed_experiments;
  for (const auto& change : result.experiment_changes) {
    changed_experiments.insert(change.experiment);
  }
  // An unchanged check with nothing to say (same status, its experiment's files the
  // same) is quiet: named, not given an entry.
  auto quiet = [&](const Pair& pair) {
    const CheckDigest& now = run.checks[pair.now];
    return now.status == baseline.checks[pair.was].status &&
           (changed_experiments.empty() || changed_experiments.count(now.experiment) == 0);
  };
  // Pass 2: quiet checks are named in id order; the others, few, are listed by class
  // severity, then id.
  for (DiffClass diff_class : all_diff_classes()) {
    result.counts[diff_class] = 0;
  }
  std::vector<std::vector<size_t>> listed(all_diff_classes().size());  // pair indices per class
  if (options.name_quiet_checks) {
    size_t quiet_bytes = 0;
    for (const Pair& pair : pairs) {
      if (pair.diff_class == DiffClass::k_unchanged && quiet(pair)) {
        quiet_bytes += run.checks[pair.now].id.size();
      }
    }
    result.quiet.reserve(pairs.size(), quiet_bytes);
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair& pair = pairs[i];
    if (pair.diff_class == DiffClass::k_unchanged && quiet(pair)) {
      if (options.name_quiet_checks) {
        result.quiet.add(run.checks[pair.now].id, run.checks[pair.now].experiment);
      } else {
        result.quiet.count_unnamed();
      }
    } else {
      listed[static_cast<size_t>(pair.diff_class)].push_back(i);
    }
  }
  result.counts[DiffClass::k_unchanged] = static_cast<int64_t>(result.quiet.size());
  for (DiffClass diff_class : all_diff_classes()) {
    for (size_t i : listed[static_cast<size_t>(diff_class)]) {
      const Pair& pair = pairs[i];
      if (pair.was == k_none) {
        result.checks.push_back(new_check(run.checks[pair.now]));
      } else if (pair.now == k_none) {
        result.checks.push_back(missing_check(baseline.checks[pair.was]));
      } else {
        result.checks.push_back(compare(baseline.checks[pair.was], run.checks[pair.now], diff_class));
      }
    }
  }
  for (const auto& check : result.checks) {
    ++result.counts[check.diff_class];
  }
  add_experiment_notes(result);
  result.environment_changes = describe_changes(diff_environments(baseline.header.environment, run.header.environment));
  return result;
}

DiffResult diff_runs(const RunFile& run, const RunFile& baseline, const DiffOptions& options) {
  return diff_runs(digest_view(run), digest_view(baseline), options);
}

}  // namespace driftgate

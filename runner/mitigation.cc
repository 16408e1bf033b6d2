#include "runner/mitigation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <utility>

#include "core/error.h"

namespace driftgate {
namespace {

const char* const k_native_check = "task:detection[native]";
const char* const k_stable_check = "task:detection[stable]";
constexpr size_t k_max_set_size = 3;
constexpr size_t k_named_modules = 6;  // modules named in a message; the record has them all

bool mitigable(CheckStatus status) {
  return is_failure(status) && !is_crash(status) && status != CheckStatus::k_unsupported &&
         status != CheckStatus::k_ref_nondeterministic;
}

bool is_task_output(const std::string& output) { return output.rfind("task:", 0) == 0; }

bool contains(const std::vector<Fallback>& set, Fallback fallback) {
  return std::find(set.begin(), set.end(), fallback) != set.end();
}

std::string join(const std::vector<Fallback>& set) {
  std::string text;
  for (Fallback fallback : set) {
    text += (text.empty() ? "" : "+") + std::string(to_string(fallback));
  }
  return text;
}

// Latencies order with nan (not measured) last.
double rank_ms(double ms) { return std::isnan(ms) ? std::numeric_limits<double>::infinity() : ms; }

// The mean over inputs of one value per input.
double mean_per_input(const std::map<std::string, double>& per_input) {
  if (per_input.empty()) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  double sum = 0.0;
  for (const auto& [input, ms] : per_input) {
    sum += ms;
  }
  return sum / static_cast<double>(per_input.size());
}

// How one variant did on the failing inputs.
struct Outcome {
  bool tier1 = true;  // every judged check passes
  bool tier3 = true;  // every judged task check passes
  double latency_ms = 0.0;
  double latency_iqr_ms = std::numeric_limits<double>::quiet_NaN();
};

// The variant's records as the fallback set judges them: with stable_nms the native
// NMS check is replaced by the stable one; without it, a stable check the config did
// not ask for is ignored.
Outcome judge(const std::vector<CheckRecord>& records, const std::string& variant, const std::vector<Fallback>& set,
              bool config_has_stable) {
  Outcome outcome;
  std::map<std::string, double> per_input_ms;
  std::map<std::string, double> per_input_iqr;
  bool any = false;
  for (const CheckRecord& record : records) {
    if (record.target != variant) {
      continue;
    }
    if ((record.output == k_native_check && contains(set, Fallback::k_stable_nms)) ||
        (record.output == k_stable_check && !config_has_stable && !contains(set, Fallback::k_stable_nms))) {
      continue;
    }
    any = true;
    const bool pass = record.status == CheckStatus::k_pass;
    outcome.tier1 = outcome.tier1 && pass;
    if (is_task_output(record.output)) {
      outcome.tier3 = outcome.tier3 && pass;
    }
    per_input_ms[record.input] = record.target_ms;
    per_input_iqr[record.input] = record.target_iqr_ms;
  }
  if (!any) {
    outcome.tier1 = outcome.tier3 = false;
  }
  outcome.latency_ms = mean_per_input(per_input_ms);
  outcome.latency_iqr_ms = mean_per_input(per_input_iqr);
  return outcome;
}

// ---- the selective search over module sets ----

struct LayerTry {
  bool restores = false;
  double latency_ms = std::numeric_limits<double>::quiet_NaN();
  double latency_iqr_ms = std::numeric_limits<double>::quiet_NaN();
  std::string backend;  // the variant's name
  bool tier1 = false;   // every check passed (not only the task's)
};

// Tries module sets, several per run; returns one result per set.
using LayerBatch = std::function<std::vector<LayerTry>(const std::vector<std::vector<std::string>>&)>;

struct LayerSearchResult {
  std::optional<std::vector<std::string>> found;
  LayerTry measured;  // the found set's try
  int runs = 0;       // batches run
  int64_t tried = 0;  // module sets tried
  std::string note;   // why none was found
};

class LayerSearch {
 public:
  LayerSearch(const std::vector<std::string>& layers, const LayerBatch& batch, int max_runs)
      : layers_(layers), batch_(batch), max_runs_(max_runs) {}

  LayerSearchResult run(const std::vector<std::string>& seed) {
    LayerSearchResult result;
    if (layers_.empty()) {
      result.note = "no submodule can run in float32";
      return finish(result);
    }
    std::vector<std::vector<std::string>> first;
    const bool try_seed = !seed.empty() && seed != layers_;
    if (try_seed) {
      first.push_back(seed);
    }
    first.push_back(layers_);
    if (!evaluate(first)) {
      result.note = "no variant run left for the layer search";
      return finish(result);
    }
    std::vector<std::string> current;
    if (try_seed && cache_.at(seed).restores) {
      current = seed;
    } else if (!cache_.at(layers_).restores) {
      result.note = "all " + std::to_string(layers_.size()) + " submodules in float32 do not restore agreement";
      return finish(result);
    } else {
      current = bisect();
    }
    current = shrink(current);
    result.found = current;
    result.measured = cache_.at(current);
    return finish(result);
  }

 private:
  LayerSearchResult& finish(LayerSearchResult& result) const {
    result.runs = runs_;
    result.tried = static_cast<int64_t>(cache_.size());
    return result;
  }

  // Tries the sets not tried before, as one batch; false when that needs a run and none is left.
  bool evaluate(const std::vector<std::vector<std::string>>& sets) {
    std::vector<std::vector<std::string>> fresh;
    for (const auto& set : sets) {
      if (!cache_.count(set) && std::find(fresh.begin(), fresh.end(), set) == fresh.end()) {
        fresh.push_back(set);
      }
    }
    if (fresh.empty()) {
      return true;
    }
    if (runs_ >= max_runs_) {
      return false;
    }
    ++runs_;
    const std::vector<LayerTry> tries = batch_(fresh);
    for (size_t i = 0; i < fresh.size(); ++i) {
      cache_[fresh[i]] = i < tries.size() ? tries[i] : LayerTry{};
    }
    return true;
  }

  std::vector<std::string> prefix(size_t count) const {
    return std::vector<std::string>(layers_.begin(), layers_.begin() + static_cast<std::ptrdiff_t>(count));
  }
  std::vector<std::string> suffix(size_t count) const {
    return std::vector<std::string>(layers_.end() - static_cast<std::ptrdiff_t>(count), layers_.end());
  }

  // Polygraphy's bisection, both directions at once: the fewest modules from the input
  // side, and from the output side, that restore (all of them restore). Returns the
  // smaller of the two sets found (the faster one on a tie).
  std::vector<std::string> bisect() {
    const size_t n = layers_.size();
    size_t prefix_fails = 0, prefix_restores = n;  // prefix(prefix_restores) restores; fewer did not
    size_t suffix_fails = 0, suffix_restores = n;
    while (prefix_restores - prefix_fails > 1 || suffix_restores - suffix_fails > 1) {
      std::vector<std::vector<std::string>> sets;
      const size_t prefix_mid = (prefix_fails + prefix_restores) / 2;
      const size_t suffix_mid = (suffix_fails + suffix_restores) / 2;
      const bool prefix_open = prefix_restores - prefix_fails > 1;
      const bool suffix_open = suffix_restores - suffix_fails > 1;
      if (prefix_open) {
        sets.push_back(prefix(prefix_mid));
      }
      if (suffix_open) {
        sets.push_back(suffix(suffix_mid));
      }
      if (!evaluate(sets)) {
        break;
      }
      if (prefix_open) {
        (cache_.at(prefix(prefix_mid)).restores ? prefix_restores : prefix_fails) = prefix_mid;
      }
      if (suffix_open) {
        (cache_.at(suffix(suffix_mid)).restores ? suffix_restores : suffix_fails) = suffix_mid;
      }
    }
    const std::vector<std::string> from_input = prefix(prefix_restores);
    const std::vector<std::string> from_output = suffix(suffix_restores);
    if (from_input.size() != from_output.size()) {
      return from_input.size() < from_output.size() ? from_input : from_output;
    }
    return rank_ms(cache_.at(from_output).latency_ms) < rank_ms(cache_.at(from_input).latency_ms) ? from_output
                                                                                                  : from_input;
  }

  // Drops what it can while the set still restores: the complement of each of g chunks
  // as one batch (delta debugging's reduce-to-complement), g doubling up to single
  // members when no complement restores. Ends 1-minimal (no single member can go) unless
  // the runs run out first; the set it returns always restored.
  std::vector<std::string> shrink(std::vector<std::string> current) {
    size_t chunks = 2;
    while (current.size() > 1) {
      chunks = std::min(chunks, current.size());
      std::vector<std::vector<std::string>> complements;
      for (size_t c = 0; c < chunks; ++c) {
        const size_t begin = c * current.size() / chunks;
        const size_t end = (c + 1) * current.size() / chunks;
        std::vector<std::string> complement(current.begin(), current.begin() + static_cast<std::ptrdiff_t>(begin));
        complement.insert(complement.end(), current.begin() + static_cast<std::ptrdiff_t>(end), current.end());
        complements.push_back(std::move(complement));
      }
      if (!evaluate(complements)) {
        break;
      }
      const std::vector<std::string>* best = nullptr;
      for (const auto& complement : complements) {
        const LayerTry& tried = cache_.at(complement);
        if (tried.restores &&
            (!best || complement.size() < best->size() ||
             (complement.size() == best->size() && rank_ms(tried.latency_ms) < rank_ms(cache_.at(*best).latency_ms)))) {
          best = &complement;
        }
      }
      if (best) {
        current = *best;
        chunks = std::max<size_t>(chunks - 1, 2);
      } else if (chunks < current.size()) {
        chunks = std::min(chunks * 2, current.size());
      } else {
        break;
      }
    }
    return current;
  }

  const std::vector<std::string>& layers_;
  const LayerBatch& batch_;
  int max_runs_;
  int runs_ = 0;
  std::map<std::vector<std::string>, LayerTry> cache_;
};

// The eligible modules of the first divergent layers tier 2 named on the failing records
// ("features.7.block.0.2/aten::hardswish_#1"): the deepest module that is the layer's own
// or contains it, else the modules inside it. In `layers` order.
std::vector<std::string> seed_modules(const std::vector<CheckRecord>& failing, const std::vector<std::string>& layers) {
  std::set<std::string> chosen;
  for (const CheckRecord& record : failing) {
    if (!record.localization || record.localization->first_divergent.empty()) {
      continue;
    }
    const std::string& layer = record.localization->first_divergent;
    const std::string path = layer.substr(0, layer.find('/'));
    if (path.empty()) {
      continue;  // an op of the top-level module: no submodule to name
    }
    const std::string* owner = nullptr;
    for (const std::string& module : layers) {
      if ((path == module || path.rfind(module + ".", 0) == 0) && (!owner || module.size() > owner->size())) {
        owner = &module;
      }
    }
    if (owner) {
      chosen.insert(*owner);
      continue;
    }
    for (const std::string& module : layers) {
      if (module.rfind(path + ".", 0) == 0) {
        chosen.insert(module);
      }
    }
  }
  std::vector<std::string> seed;
  for (const std::string& module : layers) {
    if (chosen.count(module)) {
      seed.push_back(module);
    }
  }
  return seed;
}

// ---- the messages ----

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g ms", ms);
  return text;
}

// "x1.15 target, x0.66 reference": the choice's latency over the two.
std::string ratios(double latency_ms, double target_ms, double reference_ms) {
  char text[96];
  std::string out;
  if (target_ms > 0.0 && std::isfinite(latency_ms)) {
    std::snprintf(text, sizeof text, "x%.2f target", latency_ms / target_ms);
    out += text;
  }
  if (reference_ms > 0.0 && std::isfinite(latency_ms)) {
    std::snprintf(text, sizeof text, "%sx%.2f reference", out.empty() ? "" : ", ", latency_ms / reference_ms);
    out += text;
  }
  return out;
}

std::string agreement(const std::string& restores) {
  return restores == "tier1" ? "tier-1 agreement" : "task agreement";
}

// "onednn_off + contiguous: 4.1 ms (x1.05 target, x0.60 reference)", "(= reference)" where
// it is the reference again; a selective choice names its modules and the share of the
// target's speed it keeps.
std::string describe_choice(const MitigationChoice& choice, double target_ms, double reference_ms) {
  std::string what;
  if (!choice.float32_modules.empty()) {
    const size_t count = choice.float32_modules.size();
    what = std::to_string(count) + (count == 1 ? " submodule" : " submodules") + " in float32 (";
    for (size_t i = 0; i < std::min(count, k_named_modules); ++i) {
      what += (i ? ", " : "") + choice.float32_modules[i];
    }
    what += count > k_named_modules ? ", ... " + std::to_string(count - k_named_modules) + " more)" : ")";
  } else {
    for (const std::string& name : choice.fallbacks) {
      what += (what.empty() ? "" : " + ") + name;
    }
  }
  if (choice.reference_equivalent) {
    what += " (= reference)";
  }
  std::string cost = format_ms(choice.latency_ms);
  const std::string against = ratios(choice.latency_ms, target_ms, reference_ms);
  std::string detail = against;
  if (!choice.float32_modules.empty() && choice.latency_ms > 0.0 && target_ms > 0.0) {
    char keeps[64];
    std::snprintf(keeps, sizeof keeps, "keeps %.0f%% of the target's speed", 100.0 * target_ms / choice.latency_ms);
    detail += (detail.empty() ? "" : "; ") + std::string(keeps);
  }
  return what + ": " + cost + (detail.empty() ? "" : " (" + detail + ")");
}

std::string choice_label(const MitigationChoice& choice, bool tier1_also_task) {
  if (!choice.float32_modules.empty()) {
    return "selective, " + agreement(choice.restores);
  }
  return choice.restores == "tier1" && tier1_also_task ? "tier-1 and task agreement" : agreement(choice.restores);
}

// Whether a fallback set that restores task agreement only is listed apart.
bool task_choice_listed(const Mitigation& mitigation) {
  return std::any_of(mitigation.choices.begin(), mitigation.choices.end(), [](const MitigationChoice& choice) {
    return choice.float32_modules.empty() && choice.restores == "tier3";
  });
}

std::string describe(const Mitigation& mitigation, const std::string& target, bool task_failed, int runs) {
  const std::string& note = mitigation.selective_note;
  char counts[96];
  std::snprintf(counts, sizeof counts, "tried %lld variant%s in %d run%s", static_cast<long long>(mitigation.tried),
                mitigation.tried == 1 ? "" : "s", runs, runs == 1 ? "" : "s");
  if (mitigation.choices.empty()) {
    return "no fallback set or float32 submodule set restores agreement for " + target + "; " + counts +
           (note.empty() ? "" : "; " + note);
  }
  const bool tier3_listed = task_choice_listed(mitigation);
  std::string text = target + " (" + format_ms(mitigation.target_ms) +
                     (std::isnan(mitigation.reference_ms) ? "" : ", reference " + format_ms(mitigation.reference_ms)) +
                     " per forward): ";
  for (size_t i = 0; i < mitigation.choices.size(); ++i) {
    const MitigationChoice& choice = mitigation.choices[i];
    text += (i ? "; " : "") + choice_label(choice, task_failed && !tier3_listed) + ": " +
            describe_choice(choice, mitigation.target_ms, mitigation.reference_ms);
  }
  return text + "; " + counts + (note.empty() ? "" : "; selective: " + note);
}

// ---- one failing target ----

class TargetSearch {
 public:
  TargetSearch(const Experiment& experiment, const BackendSpec& target, const std::vector<CheckRecord>& failing,
               const VariantRunner& run, const MitigationOptions& options)
      : experiment_(experiment), target_(target), failing_(failing), run_(run), options_(options) {
    std::map<std::string, double> target_ms;
    std::map<std::string, double> reference_ms;
    for (const CheckRecord& record : failing) {
      inputs_.insert(record.input);
      task_failed_ = task_failed_ || is_task_output(record.output);
      native_failed_ = native_failed_ || record.output == k_native_check;
      target_ms[record.input] = record.target_ms;
      reference_ms[record.input] = record.reference_ms;
    }
    mitigation_.target_ms = mean_per_input(target_ms);
    mitigation_.reference_ms = mean_per_input(reference_ms);
    config_has_stable_ = experiment.task && std::find(experiment.task->nms.begin(), experiment.task->nms.end(),
                                                      NmsMode::k_stable) != experiment.task->nms.end();
  }

  Mitigation search() {
    rank_fallback_sets();
    if (selective_applies()) {
      mitigation_.selective_note = search_layers_selectively();
    }
    measure_together();
    mitigation_.message = describe(mitigation_, target_.name, task_failed_, runs_);
    return mitigation_;
  }

 private:
  bool selective_applies() const {
    return options_.list_layers && !target_.autocast &&
           (target_.dtype == DType::k_bfloat16 || target_.dtype == DType::k_float16);
  }

  // The experiment on the failing inputs with `targets`; their records, judged on those inputs.
  std::vector<CheckRecord> run_variants(std::vector<BackendSpec> targets) {
    Experiment variant = experiment_;
    variant.inputs.clear();
    for (const InputSpec& input : experiment_.inputs) {
      if (inputs_.count(input.name)) {
        variant.inputs.push_back(input);
      }
    }
    variant.targets = std::move(targets);
    variant.oracle = experiment_.tolerance.rule == ToleranceRule::k_oracle;
    if (native_failed_ && !config_has_stable_ && variant.task) {
      variant.task->nms.push_back(NmsMode::k_stable);
    }
    ++runs_;
    mitigation_.tried += static_cast<int64_t>(variant.targets.size());
    std::vector<CheckRecord> judged;
    for (CheckRecord& record : run_(variant)) {
      if (inputs_.count(record.input)) {
        judged.push_back(std::move(record));
      }
    }
    return judged;
  }

  // Every applicable fallback set of up to 3, one run; the cheapest that restores tier-1
  // agreement and (when a task check failed) task agreement, the reference again last.
  void rank_fallback_sets() {
    const std::vector<std::vector<Fallback>> sets =
        fallback_sets(applicable_fallbacks(target_, native_failed_), k_max_set_size);
    if (sets.empty()) {
      return;
    }
    std::vector<BackendSpec> specs;
    for (const auto& set : sets) {
      specs.push_back(apply_fallbacks(target_, set));
    }
    const std::vector<CheckRecord> records = run_variants(specs);
    std::optional<std::pair<std::pair<bool, double>, MitigationChoice>> tier1;
    std::optional<std::pair<std::pair<bool, double>, MitigationChoice>> tier3;
    for (size_t i = 0; i < sets.size(); ++i) {
      const Outcome outcome = judge(records, specs[i].name, sets[i], config_has_stable_);
      if (!outcome.tier1 && !(task_failed_ && outcome.tier3)) {
        continue;
      }
      MitigationChoice choice;
      choice.restores = outcome.tier1 ? "tier1" : "tier3";
      for (Fallback fallback : sets[i]) {
        choice.fallbacks.push_back(to_string(fallback));
      }
      choice.backend = specs[i].name;
      chosen_specs_[choice.backend] = specs[i];
      choice.latency_ms = outcome.latency_ms;
      choice.latency_iqr_ms = outcome.latency_iqr_ms;
      choice.reference_equivalent = reference_equivalent(specs[i], experiment_.reference, options_.run_threads);
      const std::pair<bool, double> key{choice.reference_equivalent, rank_ms(choice.latency_ms)};
      if (outcome.tier1 && (!tier1 || key < tier1->first)) {
        tier1.emplace(key, choice);
      }
      if (task_failed_ && (!tier3 || key < tier3->first)) {
        tier3.emplace(key, choice);
      }
    }
    if (tier1) {
      mitigation_.choices.push_back(tier1->second);
    }
    // The cheapest for the task is listed only where it is not the tier-1 choice.
    if (tier3 && (!tier1 || tier3->second.backend != tier1->second.backend)) {
      mitigation_.choices.push_back(tier3->second);
    }
  }

  // The latencies a choice is reported with: the chosen variants, the failing target itself
  // and the reference, measured in one more run on the same inputs. Each search run measured
  // its variants in a process of its own at another moment, and a busy machine moves one
  // backend's median by more than a fallback changes it; set side by side, the ratios
  // compare like with like. The judgments stay those of the search runs.
  void measure_together() {
    if (mitigation_.choices.empty() || !options_.measure_together) {
      return;
    }
    std::vector<BackendSpec> specs = {target_};
    for (const MitigationChoice& choice : mitigation_.choices) {
      specs.push_back(chosen_specs_.at(choice.backend));
    }
    const std::vector<CheckRecord> records = run_variants(specs);
    mitigation_.tried -= static_cast<int64_t>(specs.size());      // measured again, not tried
    std::map<std::string, std::map<std::string, double>> median;  // backend -> input -> ms
    std::map<std::string, std::map<std::string, double>> iqr;
    std::map<std::string, double> reference;
    for (const CheckRecord& record : records) {
      if (record.target_ms > 0.0) {
        median[record.target][record.input] = record.target_ms;
        iqr[record.target][record.input] = record.target_iqr_ms;
      }
      if (record.reference_ms > 0.0) {
        reference[record.input] = record.reference_ms;
      }
    }
    if (median.count(target_.name) == 0 || reference.empty()) {
      return;  // nothing timed (the target crashed this time): the search's figures stand
    }
    mitigation_.target_ms = mean_per_input(median[target_.name]);
    mitigation_.reference_ms = mean_per_input(reference);
    for (MitigationChoice& choice : mitigation_.choices) {
      if (median.count(choice.backend) > 0) {
        choice.latency_ms = mean_per_input(median[choice.backend]);
        choice.latency_iqr_ms = mean_per_input(iqr[choice.backend]);
      }
    }
  }

  // The selective search; returns a note where it found nothing. A variant the runner
  // refuses (an Error: the variants are driftgate's, not the user's config) ends it, and
  // the choices found so far stand.
  std::string search_layers_selectively() {
    std::vector<std::string> layers;
    try {
      layers = options_.list_layers(experiment_, target_);
    } catch (const Error& e) {
      return std::string("cannot list the submodules: ") + e.what();
    }
    int64_t counter = 0;
    const LayerBatch batch = [&](const std::vector<std::vector<std::string>>& sets) {
      std::vector<BackendSpec> specs;
      for (const auto& modules : sets) {
        BackendSpec spec = target_;
        spec.float32_modules = modules;
        spec.name = target_.name + "+fp32_modules_" + std::to_string(++counter);
        spec.description = target_.description + " with " + std::to_string(modules.size()) + " submodules in float32";
        specs.push_back(std::move(spec));
      }
      const std::vector<CheckRecord> records = run_variants(specs);
      std::vector<LayerTry> tries;
      for (const BackendSpec& spec : specs) {
        const Outcome outcome = judge(records, spec.name, {}, config_has_stable_);
        LayerTry tried;
        tried.restores = task_failed_ ? outcome.tier3 : outcome.tier1;
        tried.tier1 = outcome.tier1;
        tried.latency_ms = outcome.latency_ms;
        tried.latency_iqr_ms = outcome.latency_iqr_ms;
        tried.backend = spec.name;
        tries.push_back(std::move(tried));
      }
      return tries;
    };
    LayerSearch search(layers, batch, std::max(options_.max_runs - runs_, 0));
    LayerSearchResult result;
    try {
      result = search.run(seed_modules(failing_, layers));
    } catch (const Error& e) {
      return std::string("the layer search stopped: ") + e.what();
    }
    if (!result.found) {
      return result.note;
    }
    MitigationChoice choice;
    choice.restores = result.measured.tier1 ? "tier1" : "tier3";
    choice.float32_modules = *result.found;
    choice.backend = result.measured.backend;
    choice.latency_ms = result.measured.latency_ms;
    choice.latency_iqr_ms = result.measured.latency_iqr_ms;
    BackendSpec spec = target_;
    spec.float32_modules = *result.found;
    spec.name = choice.backend;
    spec.description = target_.description + " with " + std::to_string(result.found->size()) + " submodules in float32";
    chosen_specs_[choice.backend] = spec;
    // Every candidate in float32 leaves only glue between them in the reduced dtype: the
    // reference again in all but name, marked as such.
    choice.reference_equivalent = result.found->size() == layers.size() ||
                                  reference_equivalent(spec, experiment_.reference, options_.run_threads);
    mitigation_.choices.push_back(std::move(choice));
    return "";
  }

  const Experiment& experiment_;
  const BackendSpec& target_;
  const std::vector<CheckRecord>& failing_;
  const VariantRunner& run_;
  const MitigationOptions& options_;
  std::set<std::string> inputs_;
  bool task_failed_ = false;
  bool native_failed_ = false;
  bool config_has_stable_ = false;
  int runs_ = 0;
  Mitigation mitigation_;
  std::map<std::string, BackendSpec> chosen_specs_;  // the choices' backends by name
};

}  // namespace

const char* to_string(Fallback fallback) {
  switch (fallback) {
    case Fallback::k_fp32:
      return "fp32";
    case Fallback::k_onednn_off:
      return "onednn_off";
    case Fallback::k_contiguous:
      return "contiguous";
    case Fallback::k_eager:
      return "eager";
    case Fallback::k_stable_nms:
      return "stable_nms";
    case Fallback::k_ort_basic:
      return "ort_basic";
  }
  return "unknown";
}

std::vector<Fallback> applicable_fallbacks(const BackendSpec& target, bool native_nms_failed) {
  std::vector<Fallback> fallbacks;
  if (target.dtype != DType::k_float32 || target.autocast) {
    fallbacks.push_back(Fallback::k_fp32);
  }
  if (target.onednn && target.graph != GraphMode::k_onnxruntime) {  // LibTorch's flag: ONNX Runtime ignores it
    fallbacks.push_back(Fallback::k_onednn_off);
  }
  if (target.memory_format == MemoryFormat::k_channels_last) {
    fallbacks.push_back(Fallback::k_contiguous);
  }
  if (target.graph != GraphMode::k_eager) {
    fallbacks.push_back(Fallback::k_eager);
  }
  if (target.graph == GraphMode::k_onnxruntime && target.onnx_optimization > OnnxOptimization::k_basic) {
    fallbacks.push_back(Fallback::k_ort_basic);
  }
  if (native_nms_failed) {
    fallbacks.push_back(Fallback::k_stable_nms);
  }
  return fallbacks;
}

std::vector<std::vector<Fallback>> fallback_sets(const std::vector<Fallback>& fallbacks, size_t max_size) {
  std::vector<std::vector<Fallback>> sets;
  const size_t n = fallbacks.size();
  for (size_t size = 1; size <= std::min(max_size, n); ++size) {
    // Lexicographic combinations of `size` indices out of n.
    std::vector<size_t> index(size);
    for (size_t i = 0; i < size; ++i) {
      index[i] = i;
    }
    while (true) {
      std::vector<Fallback> set;
      for (size_t i : index) {
        set.push_back(fallbacks[i]);
      }
      // eager runs the TorchScript model instead of the ONNX file: ort_basic beside it would
      // change nothing, and a set that repeats a smaller one only muddles the choice.
      if (!(contains(set, Fallback::k_eager) && contains(set, Fallback::k_ort_basic))) {
        sets.push_back(std::move(set));
      }
      size_t position = size;
      while (position > 0 && index[position - 1] == n - size + position - 1) {
        --position;
      }
      if (position == 0) {
        break;
      }
      ++index[position - 1];
      for (size_t i = position; i < size; ++i) {
        index[i] = index[i - 1] + 1;
      }
    }
  }
  return sets;
}

BackendSpec apply_fallbacks(const BackendSpec& target, const std::vector<Fallback>& set) {
  BackendSpec spec = target;
  for (Fallback fallback : set) {
    switch (fallback) {
      case Fallback::k_fp32:
        spec.dtype = DType::k_float32;
        spec.autocast = false;
        break;
      case Fallback::k_onednn_off:
        spec.onednn = false;
        break;
      case Fallback::k_contiguous:
        spec.memory_format = MemoryFormat::k_contiguous;
        break;
      case Fallback::k_eager:
        spec.graph = GraphMode::k_eager;
        break;
      case Fallback::k_ort_basic:
        spec.onnx_optimization = OnnxOptimization::k_basic;
        break;
      case Fallback::k_stable_nms:
        break;  // changes how the task is judged, not the backend
    }
  }
  spec.name = target.name + "+" + join(set);
  spec.description = target.description + " with fallbacks " + join(set);
  return spec;
}

bool reference_equivalent(const BackendSpec& variant, const BackendSpec& reference, int run_threads) {
  const auto threads = [&](const BackendSpec& spec) { return spec.threads > 0 ? spec.threads : run_threads; };
  return variant.device == reference.device && variant.dtype == reference.dtype &&
         variant.autocast == reference.autocast && variant.memory_format == reference.memory_format &&
         variant.onednn == reference.onednn && threads(variant) == threads(reference) &&
         variant.graph == reference.graph && variant.optimize_numerics == reference.optimize_numerics &&
         variant.tf32 == reference.tf32 && variant.float32_modules == reference.float32_modules &&
         (variant.graph != GraphMode::k_onnxruntime || (variant.onnx_provider == reference.onnx_provider &&
                                                        variant.onnx_optimization == reference.onnx_optimization));
}

std::optional<std::vector<std::string>> search_layers(
    const std::vector<std::string>& layers, const std::vector<std::string>& seed,
    const std::function<bool(const std::vector<std::string>&)>& restores, int max_steps) {
  const LayerBatch batch = [&](const std::vector<std::vector<std::string>>& sets) {
    std::vector<LayerTry> tries;
    for (const auto& set : sets) {
      LayerTry tried;
      tried.restores = restores(set);
      tried.latency_ms = 0.0;
      tries.push_back(tried);
    }
    return tries;
  };
  LayerSearch search(layers, batch, max_steps);
  return search.run(seed).found;
}

std::vector<std::string> mitigation_lines(const Mitigation& mitigation, const std::string& target, bool task_failed) {
  if (mitigation.choices.empty()) {
    return {mitigation.message};
  }
  std::string head = target + ": " + format_ms(mitigation.target_ms) + " per forward";
  if (!std::isnan(mitigation.reference_ms)) {
    head += ", reference " + format_ms(mitigation.reference_ms);
  }
  head += "; tried " + std::to_string(mitigation.tried) + (mitigation.tried == 1 ? " variant" : " variants");
  std::vector<std::string> lines{head};
  const bool tier1_also_task = task_failed && !task_choice_listed(mitigation);
  for (const MitigationChoice& choice : mitigation.choices) {
    lines.push_back(choice_label(choice, tier1_also_task) + ": " +
                    describe_choice(choice, mitigation.target_ms, mitigation.reference_ms));
  }
  if (!mitigation.selective_note.empty()) {
    lines.push_back("selective: " + mitigation.selective_note);
  }
  // A reduced precision or a rewrite is chosen for speed: where the reference itself is
  // faster on this machine (bfloat16 without native support: x5 slower here), say so.
  if (mitigation.reference_ms > 0.0 && mitigation.reference_ms < mitigation.target_ms) {
    lines.push_back("note: the reference is faster than " + target + " on this machine (" +
                    format_ms(mitigation.reference_ms) + " vs " + format_ms(mitigation.target_ms) + " per forward)");
  }
  return lines;
}

void mitigate_failures(const Experiment& experiment, std::vector<CheckRecord>& records, const VariantRunner& run,
                       const MitigationOptions& options, std::ostream& log) {
  for (const BackendSpec& target : experiment.targets) {
    std::vector<CheckRecord> failing;
    for (const CheckRecord& record : records) {
      if (record.target == target.name && mitigable(record.status)) {
        failing.push_back(record);
      }
    }
    if (failing.empty()) {
      continue;
    }
    const Mitigation mitigation = TargetSearch(experiment, target, failing, run, options).search();
    log << "[" << experiment.name << "] mitigation: " << mitigation.message << "\n";
    for (CheckRecord& record : records) {
      if (record.target == target.name && mitigable(record.status)) {
        record.mitigation = mitigation;
      }
    }
  }
}

void mitigate_failures(const Experiment& experiment, std::vector<CheckRecord>& records, const VariantRunner& run,
                       std::ostream& log) {
  mitigate_failures(experiment, records, run, MitigationOptions{}, log);
}

}  // namespace driftgate

#include "core/tolerance.h"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <utility>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/experiment.h"
#include "core/suggest.h"
#include "core/yaml_reader.h"

namespace driftgate {
namespace {

constexpr EnumName<ToleranceRule> k_rule_names[] = {
    {ToleranceRule::k_assert_close, "assert_close"},
    {ToleranceRule::k_polygraphy, "polygraphy"},
    {ToleranceRule::k_normwise, "normwise"},
    {ToleranceRule::k_oracle, "oracle"},
};

struct DtypePrecision {
  const char* dtype;
  double rtol;
  double atol;
};

// torch/testing/_comparison.py (PyTorch 1.13), _DTYPE_PRECISIONS: (rtol, atol).
constexpr DtypePrecision k_precisions[] = {
    {"float16", 1e-3, 1e-5}, {"bfloat16", 1.6e-2, 1e-5},  {"float32", 1.3e-6, 1e-5},
    {"float64", 1e-7, 1e-7}, {"complex64", 1.3e-6, 1e-5}, {"complex128", 1e-7, 1e-7},
};

DtypePrecision precision_of(const std::string& dtype) {
  for (const auto& entry : k_precisions) {
    if (dtype == entry.dtype) {
      return entry;
    }
  }
  return DtypePrecision{"", 0.0, 0.0};
}

}  // namespace

const char* to_string(ToleranceRule rule) { return enum_name(k_rule_names, rule); }

ToleranceRule parse_tolerance_rule(const std::string& name) { return parse_enum(k_rule_names, name, "tolerance rule"); }

const std::vector<std::string>& tolerance_rule_names() {
  static const std::vector<std::string> names = enum_names(k_rule_names);
  return names;
}

Tolerance assert_close_defaults(const std::string& reference_dtype, const std::string& target_dtype) {
  DtypePrecision a = precision_of(reference_dtype);
  DtypePrecision b = precision_of(target_dtype);
  Tolerance tolerance;
  tolerance.atol = std::max(a.atol, b.atol);
  tolerance.rtol = std::max(a.rtol, b.rtol);
  tolerance.rule = ToleranceRule::k_assert_close;
  return tolerance;
}

double oracle_multiplier(const std::string& target_dtype) {
  return target_dtype == "float16" || target_dtype == "bfloat16" ? 3.0 : 2.0;
}

namespace {

const std::vector<std::string> k_tolerance_keys = {"rule", "atol", "rtol", "k"};
const std::vector<std::string> k_tolerance_override_keys = {"target", "output", "dtype", "rule", "atol", "rtol", "k"};

// The values a `tolerance:` map or a `tolerances:` entry sets: rule, atol and rtol
// (together or not at all, as in torch.testing.assert_close), k (the oracle rule's).
struct ToleranceValues {
  std::optional<ToleranceRule> rule;
  std::optional<double> atol;
  std::optional<double> rtol;
  std::optional<double> k;
};

ToleranceValues parse_tolerance_values(const YamlReader& reader, const YAML::Node& map, const std::string& what) {
  ToleranceValues values;
  if (map["rule"]) {
    std::string name = reader.scalar(map["rule"], "rule");
    const std::vector<std::string>& names = tolerance_rule_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      reader.fail(map["rule"].Mark(), "unknown tolerance rule '" + name + "'" + did_you_mean(name, names) +
                                          " (one of: " + YamlReader::join(names) + ")");
    }
    values.rule = parse_tolerance_rule(name);
  }
  for (const char* key : {"atol", "rtol"}) {
    if (map[key]) {
      const double value = reader.number(map[key], key);
      if (value < 0.0) {
        reader.fail(map[key].Mark(), std::string(key) + " must not be negative, got " + map[key].Scalar());
      }
      (key[0] == 'a' ? values.atol : values.rtol) = value;
    }
  }
  if (values.atol.has_value() != values.rtol.has_value()) {
    const bool has_atol = values.atol.has_value();
    reader.fail(map.Mark(), what + " sets " + (has_atol ? "atol" : "rtol") + " without " +
                                (has_atol ? "rtol" : "atol") +
                                "; give both, or neither for PyTorch's per-dtype defaults "
                                "(float32: atol 1e-05, rtol 1.3e-06)");
  }
  if (map["k"]) {
    values.k = reader.number(map["k"], "k");
    if (!(*values.k >= 1.0 && *values.k <= 1e6)) {
      reader.fail(map["k"].Mark(),
                  "k must be at least 1 and at most 1e6 (the target's error may be k times the "
                  "reference's), got " +
                      map["k"].Scalar());
    }
  }
  return values;
}

}  // namespace

// tolerance: {rule, atol, rtol, k}. Without atol/rtol each check uses its dtypes' defaults.
void parse_tolerance(const YamlReader& reader, const YAML::Node& tolerance, Experiment& experiment) {
  reader.expect_map(tolerance, "tolerance", k_tolerance_keys);
  experiment.tolerance_origin = reader.location(tolerance);
  const ToleranceValues values = parse_tolerance_values(reader, tolerance, "tolerance");
  experiment.tolerance.rule = values.rule.value_or(experiment.tolerance.rule);
  experiment.tolerance.atol = values.atol.value_or(experiment.tolerance.atol);
  experiment.tolerance.rtol = values.rtol.value_or(experiment.tolerance.rtol);
  experiment.tolerance.k = values.k.value_or(0.0);
  if (values.k && experiment.tolerance.rule != ToleranceRule::k_oracle) {
    reader.fail(tolerance["k"].Mark(), "k is the oracle rule's multiplier; add 'rule: oracle' or remove k");
  }
  experiment.tolerance_per_dtype = !values.atol;
}

// tolerances: [{target, output, dtype, rule, atol, rtol, k}, ...]: each entry selects
// checks (at least one of target, output, dtype) and sets some values for them.
void parse_tolerance_overrides(const YamlReader& reader, const YAML::Node& list, Experiment& experiment) {
  std::set<std::string> selectors;
  for (const YAML::Node& entry : reader.sequence(list, "tolerances", 1)) {
    reader.expect_map(entry, "tolerances entry", k_tolerance_override_keys);
    ToleranceOverride override_entry;
    override_entry.origin = reader.location(entry);
    if (entry["target"]) {
      override_entry.target = reader.scalar(entry["target"], "target");
      std::vector<std::string> names;
      for (const BackendSpec& target : experiment.targets) {
        names.push_back(target.name);
      }
      if (std::find(names.begin(), names.end(), override_entry.target) == names.end()) {
        reader.fail(entry["target"].Mark(), "'" + override_entry.target + "' is not a target of this experiment" +
                                                did_you_mean(override_entry.target, names) +
                                                " (its targets: " + YamlReader::join(names) + ")");
      }
    }
    if (entry["output"]) {
      override_entry.output = reader.scalar(entry["output"], "output");
      if (override_entry.output.empty()) {
        reader.fail(entry["output"].Mark(), "output is empty; give an output path such as out or out['boxes']");
      }
    }
    if (entry["dtype"]) {
      const DType dtype = read_dtype(reader, entry["dtype"]);
      override_entry.dtype = to_string(dtype);
      if (std::none_of(experiment.targets.begin(), experiment.targets.end(),
                       [dtype](const BackendSpec& target) { return target.dtype == dtype; })) {
        reader.fail(entry["dtype"].Mark(), std::string("no target of this experiment runs in ") + to_string(dtype) +
                                               ", so this entry would apply to nothing");
      }
    }
    if (override_entry.target.empty() && override_entry.output.empty() && override_entry.dtype.empty()) {
      reader.fail(entry.Mark(),
                  "a tolerances entry selects checks by target, output or dtype (at least one); "
                  "for every check, set the experiment's 'tolerance:'");
    }
    const ToleranceValues values = parse_tolerance_values(reader, entry, "this tolerances entry");
    if (!values.rule && !values.atol && !values.k) {
      reader.fail(entry.Mark(), "this tolerances entry sets nothing; give rule, atol and rtol, or k");
    }
    const ToleranceRule rule = values.rule.value_or(experiment.tolerance.rule);
    if (values.k && rule != ToleranceRule::k_oracle) {
      reader.fail(entry["k"].Mark(), "k is the oracle rule's multiplier; add 'rule: oracle' to this entry or remove k");
    }
    if (rule == ToleranceRule::k_oracle && !experiment.oracle) {
      reader.fail(entry.Mark(),
                  "the oracle rule judges targets against the float64 oracle; remove "
                  "'oracle: false' or choose another rule");
    }
    const std::string selector = override_entry.target + '\n' + override_entry.output + '\n' + override_entry.dtype;
    if (!selectors.insert(selector).second) {
      reader.fail(entry.Mark(), "another tolerances entry selects the same checks; merge the two");
    }
    override_entry.rule = values.rule;
    override_entry.atol = values.atol;
    override_entry.rtol = values.rtol;
    override_entry.k = values.k;
    experiment.tolerance_overrides.push_back(std::move(override_entry));
  }
}

Tolerance configured_tolerance(const Experiment& experiment, const BackendSpec& target) {
  return resolve_tolerance(experiment, target, "", to_string(experiment.reference.dtype), to_string(target.dtype));
}

namespace {

// Joins the origins of a check's values: one place when they agree, else value by value.
std::string origin_text(const std::vector<std::pair<std::string, std::string>>& origins) {
  bool same = true;
  for (const auto& [what, where] : origins) {
    same = same && where == origins.front().second;
  }
  if (same) {
    return origins.front().second;
  }
  std::string text;
  for (const auto& [what, where] : origins) {
    text += (text.empty() ? "" : "; ") + what + " " + where;
  }
  return text;
}

// An output glob: '*' and '?' are wildcards; '[' and ']' are literal, since output paths
// hold them ("out['boxes']", "out[0]").
bool output_matches(const std::string& glob, const std::string& output) {
  std::string pattern;
  for (char c : glob) {
    if (c == '[' || c == ']' || c == '\\') {
      pattern += '\\';
    }
    pattern += c;
  }
  return fnmatch(pattern.c_str(), output.c_str(), 0) == 0;
}

int specificity(const ToleranceOverride& entry) {
  return (entry.target.empty() ? 0 : 4) + (entry.output.empty() ? 0 : 2) + (entry.dtype.empty() ? 0 : 1);
}

}  // namespace

Tolerance resolve_tolerance(const Experiment& experiment, const BackendSpec& target, const std::string& output,
                            const std::string& observed_reference_dtype, const std::string& observed_target_dtype) {
  Tolerance tolerance = experiment.tolerance;
  std::string rule_origin = experiment.tolerance_origin;
  std::string values_origin = experiment.tolerance_origin;
  std::string k_origin = experiment.tolerance.k > 0.0 ? experiment.tolerance_origin : "";
  if (experiment.tolerance_per_dtype) {
    const Tolerance defaults = assert_close_defaults(observed_reference_dtype, observed_target_dtype);
    tolerance.atol = defaults.atol;
    tolerance.rtol = defaults.rtol;
    values_origin = "assert_close defaults for " + observed_reference_dtype + "/" + observed_target_dtype;
  }
  std::vector<const ToleranceOverride*> matching;
  for (const ToleranceOverride& entry : experiment.tolerance_overrides) {
    if ((entry.target.empty() || entry.target == target.name) &&
        (entry.dtype.empty() || entry.dtype == to_string(target.dtype)) &&
        (entry.output.empty() || (!output.empty() && output_matches(entry.output, output)))) {
      matching.push_back(&entry);
    }
  }
  std::stable_sort(matching.begin(), matching.end(), [](const ToleranceOverride* a, const ToleranceOverride* b) {
    return specificity(*a) < specificity(*b);
  });
  for (const ToleranceOverride* entry : matching) {
    if (entry->rule) {
      tolerance.rule = *entry->rule;
      rule_origin = entry->origin;
    }
    if (entry->atol) {
      tolerance.atol = *entry->atol;
      tolerance.rtol = *entry->rtol;
      values_origin = entry->origin;
    }
    if (entry->k) {
      tolerance.k = *entry->k;
      k_origin = entry->origin;
    }
  }
  std::vector<std::pair<std::string, std::string>> origins = {{"rule", rule_origin}, {"atol/rtol", values_origin}};
  if (tolerance.rule == ToleranceRule::k_oracle) {
    if (k_origin.empty()) {
      tolerance.k = oracle_multiplier(observed_target_dtype);
      k_origin = "default";
    }
    origins.emplace_back("k", k_origin);
  } else {
    tolerance.k = 0.0;
  }
  tolerance.origin = origin_text(origins);
  return tolerance;
}

}  // namespace driftgate

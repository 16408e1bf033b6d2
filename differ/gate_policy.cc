#include "differ/gate_policy.h"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "core/error.h"
#include "core/file_util.h"
#include "core/input_file.h"
#include "core/suggest.h"
#include "core/yaml_reader.h"

namespace driftgate {

namespace {

// "policy.yaml:4": where a value came from, as reports show it.
std::string origin(const YamlReader& reader, const YAML::Node& node) {
  return reader.path() + ":" + std::to_string(node.Mark().line + 1);
}

// The non-empty text under `key` of the map `map`.
std::string text(const YamlReader& reader, const YAML::Node& map, const char* key, const std::string& what) {
  YAML::Node node = reader.required(map, key, what);
  if (!node.IsScalar() || node.Scalar().empty()) {
    reader.fail(node.Mark(), std::string("'") + key + "' of " + what + " must be a non-empty text");
  }
  return node.Scalar();
}

GateClasses classes(const YamlReader& reader, const YAML::Node& node, const std::string& what) {
  if (!node.IsSequence()) {
    reader.fail(node.Mark(), what + " must be a list of diff classes, e.g. [regressed, crashed, missing]");
  }
  std::vector<std::string> names;
  for (DiffClass diff_class : all_diff_classes()) {
    names.push_back(to_string(diff_class));
  }
  GateClasses gate;
  gate.origin = origin(reader, node);
  for (const auto& item : node) {
    std::string name = item.IsScalar() ? item.Scalar() : "";
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      reader.fail(item.Mark(), "unknown diff class '" + name + "' in " + what + did_you_mean(name, names) +
                                   " (one of: " + YamlReader::join(names) + ")");
    }
    if (name == to_string(DiffClass::k_unchanged)) {
      reader.fail(item.Mark(), "'unchanged' cannot be gated in " + what +
                                   ": it is the class of checks whose result did not change; to fail on changes "
                                   "that still pass, gate drift_grew or task_changed");
    }
    gate.classes.insert(all_diff_classes()[static_cast<size_t>(it - names.begin())]);
  }
  return gate;
}

AllowEntry parse_allow_entry(const YamlReader& reader, const YAML::Node& node, const std::string& today) {
  const std::string what = "an allowlist entry";
  reader.expect_map(node, what, {"check", "owner", "reason", "expires"});
  AllowEntry entry;
  entry.check_glob = text(reader, node, "check", what);
  entry.owner = text(reader, node, "owner", what);
  entry.reason = text(reader, node, "reason", what);
  entry.expires = text(reader, node, "expires", what);
  entry.origin = origin(reader, node);
  if (!is_iso_date(entry.expires)) {
    reader.fail(node["expires"].Mark(),
                "expires '" + entry.expires + "' must be a date YYYY-MM-DD (the last day the entry applies)");
  }
  entry.expired = today > entry.expires;
  return entry;
}

}  // namespace

std::string AllowEntry::expiry_note() const {
  return "allowlist entry '" + check_glob + "' (" + origin + ", owner " + owner + ") expired on " + expires +
         " and no longer applies; renew or remove it";
}

GateClasses GatePolicy::gate_for(const std::string& experiment) const {
  for (const auto& entry : experiments) {
    if (entry.experiment == experiment) {
      return entry.gate;
    }
  }
  return GateClasses{gated, gated_origin};
}

std::vector<std::string> GatePolicy::expiry_notes() const {
  std::vector<std::string> notes;
  for (const auto& entry : allow) {
    if (entry.expired) {
      notes.push_back(entry.expiry_note());
    }
  }
  return notes;
}

namespace {

std::string class_list(const std::set<DiffClass>& classes) {
  std::string list;
  for (DiffClass diff_class : all_diff_classes()) {
    if (classes.count(diff_class) != 0) {
      list += (list.empty() ? "" : ", ") + std::string(to_string(diff_class));
    }
  }
  return "[" + list + "]";
}

}  // namespace

std::vector<std::string> describe_policy(const GatePolicy& policy) {
  std::vector<std::string> lines;
  lines.push_back("(" + policy.gated_origin + ") gate: " + class_list(policy.gated));
  for (const auto& entry : policy.experiments) {
    lines.push_back("(" + entry.gate.origin + ") experiments." + entry.experiment +
                    ".gate: " + class_list(entry.gate.classes));
  }
  for (const auto& entry : policy.allow) {
    lines.push_back("(" + entry.origin + ") allow: '" + entry.check_glob + "' owner " + entry.owner + " until " +
                    entry.expires + (entry.expired ? " EXPIRED" : "") + ": " + entry.reason);
  }
  return lines;
}

GateDecision decide(const GatePolicy& policy, const CheckDiff& check) {
  GateDecision decision;
  GateClasses gate = policy.gate_for(check.experiment);
  decision.origin = gate.origin;
  decision.class_gated = gate.classes.count(check.diff_class) != 0;
  if (!decision.class_gated) {
    return decision;
  }
  for (const auto& entry : policy.allow) {
    if (!entry.expired && ::fnmatch(entry.check_glob.c_str(), check.id.c_str(), 0) == 0) {
      decision.allowed_by = &entry;
      return decision;
    }
  }
  decision.gated = true;
  return decision;
}

std::vector<DiffClass> gated_classes_present(const DiffResult& result, const GatePolicy& policy) {
  std::set<DiffClass> present;
  for (const auto& check : result.checks) {
    if (decide(policy, check).gated) {
      present.insert(check.diff_class);
    }
  }
  return std::vector<DiffClass>(present.begin(), present.end());
}

ExitCode gate_exit_code(const DiffResult& result, const GatePolicy& policy) {
  return gated_classes_present(result, policy).empty() ? ExitCode::k_ok : ExitCode::k_gated;
}

bool is_iso_date(const std::string& text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') {
    return false;
  }
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (text[i] < '0' || text[i] > '9') {
      return false;
    }
  }
  int year = std::stoi(text.substr(0, 4));
  int month = std::stoi(text.substr(5, 2));
  int day = std::stoi(text.substr(8, 2));
  static const int k_days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > k_days[month - 1]) {
    return false;
  }
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return !(month == 2 && day == 29 && !leap);
}

GatePolicy parse_gate_policy(const std::string& text, const std::string& name, const std::string& today) {
  if (!is_iso_date(today)) {
    throw Error("today '" + today + "' must be a date YYYY-MM-DD");
  }
  const YamlReader reader(name);
  const YAML::Node root = reader.load(text);
  GatePolicy policy;
  policy.source = name;
  policy.today = today;
  if (root.IsNull()) {
    return policy;  // an empty file: the defaults
  }
  reader.expect_map(root, "the gate policy", {"gate", "experiments", "allow"});
  if (root["gate"]) {
    GateClasses gate = classes(reader, root["gate"], "gate");
    policy.gated = gate.classes;
    policy.gated_origin = gate.origin;
  }
  if (YAML::Node experiments = root["experiments"]) {
    if (!experiments.IsMap()) {
      reader.fail(experiments.Mark(), "experiments must map experiment names to {gate: [...]}");
    }
    for (const auto& pair : experiments) {
      std::string experiment = pair.first.Scalar();
      std::string what = "experiment '" + experiment + "'";
      reader.expect_map(pair.second, what, {"gate"});
      policy.experiments.push_back(
          {experiment, classes(reader, reader.required(pair.second, "gate", what), what + " gate")});
    }
  }
  if (YAML::Node allow = root["allow"]) {
    if (!allow.IsSequence()) {
      reader.fail(allow.Mark(), "allow must be a list of entries {check, owner, reason, expires}");
    }
    for (const auto& item : allow) {
      policy.allow.push_back(parse_allow_entry(reader, item, today));
    }
  }
  return policy;
}

GatePolicy load_gate_policy(const std::string& path, const std::string& today) {
  return parse_gate_policy(read_input_file(path, k_gate_policy_file), path, today);
}

}  // namespace driftgate

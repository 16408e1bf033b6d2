#include "differ/json_report.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace driftgate {

namespace {

using Json = nlohmann::ordered_json;

Json number_or_null(const std::optional<double>& value) {
  if (!value) {
    return nullptr;
  }
  if (std::isnan(*value)) {
    return "nan";
  }
  if (std::isinf(*value)) {
    return *value > 0 ? "inf" : "-inf";
  }
  return *value;
}

Json status_or_null(const std::optional<CheckStatus>& status) {
  if (!status) {
    return nullptr;
  }
  return to_string(*status);
}

Json class_names(const std::vector<DiffClass>& classes) {
  Json names = Json::array();
  for (DiffClass diff_class : classes) {
    names.push_back(to_string(diff_class));
  }
  return names;
}

Json baseline_json(const Report& report) {
  if (report.verdict == Verdict::k_no_baseline) {
    return nullptr;
  }
  return Json{{"sha", report.baseline_sha},
              {"env_key", report.baseline_env_key},
              {"steps", report.baseline_steps},
              {"start_sha", report.start_sha}};
}

Json allow_entry_json(const AllowEntry& entry) {
  return Json{{"check", entry.check_glob}, {"owner", entry.owner},     {"reason", entry.reason},
              {"expires", entry.expires},  {"origin", entry.origin},   {"expired", entry.expired}};
}

Json policy_json(const GatePolicy& policy) {
  std::vector<DiffClass> gated(policy.gated.begin(), policy.gated.end());
  Json experiments = Json::array();
  for (const auto& entry : policy.experiments) {
    std::vector<DiffClass> classes(entry.gate.classes.begin(), entry.gate.classes.end());
    experiments.push_back(
        Json{{"experiment", entry.experiment}, {"gate", class_names(classes)}, {"origin", entry.gate.origin}});
  }
  Json allow = Json::array();
  for (const auto& entry : policy.allow) {
    allow.push_back(allow_entry_json(entry));
  }
  return Json{{"source", policy.source.empty() ? Json(nullptr) : Json(policy.source)},
              {"today", policy.today.empty() ? Json(nullptr) : Json(policy.today)},
              {"gate", class_names(gated)},
              {"gate_origin", policy.gated_origin},
              {"experiments", experiments},
              {"allow", allow},
              {"describe", describe_policy(policy)}};
}

Json check_json(const CheckDiff& check, const GatePolicy& policy) {
  GateDecision decision = decide(policy, check);
  return Json{{"id", check.id},
              {"experiment", check.experiment},
              {"class", to_string(check.diff_class)},
              {"gated", decision.gated},
              {"gate_origin", decision.origin},
              {"allowed_by", decision.allowed_by != nullptr ? allow_entry_json(*decision.allowed_by) : Json(nullptr)},
              {"status_before", status_or_null(check.status_before)},
              {"status_after", status_or_null(check.status_after)},
              {"max_abs_before", number_or_null(check.max_abs_before)},
              {"max_abs_after", number_or_null(check.max_abs_after)},
              {"message", check.message},
              {"notes", check.notes}};
}

void add_diff(Json& json, const Report& report) {
  Json counts = Json::object();
  Json changes = Json::array();
  Json checks = Json::array();
  for (DiffClass diff_class : all_diff_classes()) {
    counts[to_string(diff_class)] = report.diff ? report.diff->count(diff_class) : 0;
  }
  if (report.diff) {
    for (const auto& change : report.diff->experiment_changes) {
      changes.push_back(Json{{"experiment", change.experiment},
                             {"what", change.what},
                             {"before", change.before},
                             {"after", change.after},
                             {"note", change.note()}});
    }
    for (const auto& check : report.diff->checks) {
      checks.push_back(check_json(check, report.policy));
    }
  }
  json["counts"] = counts;
  json["experiment_changes"] = changes;
  json["checks"] = checks;
}

}  // namespace

std::string render_json(const Report& report) {
  std::vector<DiffClass> gated(report.policy.gated.begin(), report.policy.gated.end());
  Json json{{"schema", k_report_schema_version},
            {"verdict", to_string(report.verdict)},
            {"reason", report.reason},
            {"exit_code", to_int(report_exit_code(report))},
            {"run", Json{{"sha", report.run_sha}, {"env_key", report.run_env_key}}},
            {"baseline", baseline_json(report)},
            {"env_mismatch", report.env_mismatch},
            {"env_changes", report.env_changes},
            {"notes", report.notes},
            {"gated_classes", class_names(gated)},
            {"gated_present", class_names(report.gated_present)}};
  add_diff(json, report);
  // Added after the first published fields; readers of the fields above need not change.
  json["policy"] = policy_json(report.policy);
  json["refresh"] = report.refresh_command.empty()
                        ? Json(nullptr)
                        : Json{{"command", report.refresh_command},
                               {"proposed_baseline", report.proposed_baseline.empty()
                                                         ? Json(nullptr)
                                                         : Json(report.proposed_baseline)}};
  // A run file may carry invalid UTF-8 in a check id or message: replace it rather than fail.
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace driftgate

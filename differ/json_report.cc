#include "differ/json_report.h"

#include <nlohmann/json.hpp>

#include "core/record_json.h"
#include "core/tier2_profile.h"

namespace driftgate {

namespace {

using Json = nlohmann::ordered_json;

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
  return Json{{"check", entry.check_glob}, {"owner", entry.owner},   {"reason", entry.reason},
              {"expires", entry.expires},  {"origin", entry.origin}, {"expired", entry.expired}};
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

// Strings as the DOM dump writes them (error_handler_t::replace: a run file may carry
// invalid UTF-8 in a check id or message, replaced rather than refused).
void put_string(std::string& out, const std::string& text) { put_json_string(out, text, true); }

void put_number_or_null(std::string& out, const std::optional<double>& value) {
  if (value) {
    put_json_number(out, *value);
  } else {
    out += "null";
  }
}

void put_status_or_null(std::string& out, const std::optional<CheckStatus>& status) {
  if (status) {
    put_string(out, to_string(*status));
  } else {
    out += "null";
  }
}

// "allowed_by"'s object, as dump(2) writes it at depth 3 (its members 8 spaces in).
void put_allow_entry(std::string& out, const AllowEntry& entry) {
  out += "{\n        \"check\": ";
  put_string(out, entry.check_glob);
  out += ",\n        \"owner\": ";
  put_string(out, entry.owner);
  out += ",\n        \"reason\": ";
  put_string(out, entry.reason);
  out += ",\n        \"expires\": ";
  put_string(out, entry.expires);
  out += ",\n        \"origin\": ";
  put_string(out, entry.origin);
  out += entry.expired ? ",\n        \"expired\": true\n      }" : ",\n        \"expired\": false\n      }";
}

// "tier2"'s object, as dump(2) writes it at depth 3: a check's localization in brief (its
// per-layer profile stays in the run file). A partial profile says so here too.
void put_tier2(std::string& out, const Localization& localization) {
  out += "{\n        \"status\": ";
  put_string(out, to_string(localization.status));
  out += ",\n        \"first_divergent\": ";
  put_string(out, localization.first_divergent);
  out += ",\n        \"not_captured\": ";
  put_string(out, localization.not_captured);
  out += ",\n        \"reinjection\": ";
  put_string(out, localization.reinjection);
  out += ",\n        \"calls\": " + std::to_string(localization.calls);
  out += ",\n        \"calls_compared\": " + std::to_string(localization.calls_compared);
  out += ",\n        \"coverage\": ";
  put_json_number(out, localization.coverage);
  out += ",\n        \"summary\": ";
  put_string(out, describe_localization(localization));
  out += "\n      }";
}

// One element of "checks", as dump(2) writes it at depth 2 (4 spaces in), without
// building a DOM per check: a report may list a million checks.
void put_check(std::string& out, const CheckDiff& check, const GatePolicy& policy) {
  GateDecision decision = decide(policy, check);
  out += "{\n      \"id\": ";
  put_string(out, check.id);
  out += ",\n      \"experiment\": ";
  put_string(out, check.experiment);
  out += ",\n      \"class\": ";
  put_string(out, to_string(check.diff_class));
  out += decision.gated ? ",\n      \"gated\": true" : ",\n      \"gated\": false";
  out += ",\n      \"gate_origin\": ";
  put_string(out, decision.origin);
  out += ",\n      \"allowed_by\": ";
  if (decision.allowed_by != nullptr) {
    put_allow_entry(out, *decision.allowed_by);
  } else {
    out += "null";
  }
  out += ",\n      \"status_before\": ";
  put_status_or_null(out, check.status_before);
  out += ",\n      \"status_after\": ";
  put_status_or_null(out, check.status_after);
  out += ",\n      \"max_abs_before\": ";
  put_number_or_null(out, check.max_abs_before);
  out += ",\n      \"max_abs_after\": ";
  put_number_or_null(out, check.max_abs_after);
  out += ",\n      \"message\": ";
  put_string(out, check.message);
  out += ",\n      \"notes\": ";
  if (check.notes.empty()) {
    out += "[]";
  } else {
    for (size_t i = 0; i < check.notes.size(); ++i) {
      out += i == 0 ? "[\n        " : ",\n        ";
      put_string(out, check.notes[i]);
    }
    out += "\n      ]";
  }
  if (check.localization) {
    out += ",\n      \"tier2\": ";
    put_tier2(out, *check.localization);
  }
  out += "\n    }";
}

// The "checks" array's text as dump(2) writes it as a member of the top-level object.
std::string checks_text(const Report& report) {
  if (!report.diff || report.diff->checks.empty()) {
    return "[]";
  }
  std::string out = "[";
  for (const auto& check : report.diff->checks) {
    out += out.size() == 1 ? "\n    " : ",\n    ";
    put_check(out, check, report.policy);
  }
  out += "\n  ]";
  return out;
}

// The members of a dump(2) of `json` (a non-empty object), without its braces.
std::string members_text(const Json& json) {
  std::string text = json.dump(2, ' ', false, Json::error_handler_t::replace);
  return text.substr(2, text.size() - 4);  // "{\n" ... "\n}"
}

void add_diff(Json& json, const Report& report) {
  Json counts = Json::object();
  Json changes = Json::array();
  for (DiffClass diff_class : all_diff_classes()) {
    counts[to_string(diff_class)] = report.diff ? report.diff->count(diff_class) : 0;
  }
  if (report.diff) {
    for (const auto& change : report.diff->experiment_changes) {
      changes.push_back(Json{{"experiment", change.experiment},
                             {"what", change.what},
                             {"before", change.before},
                             {"after", change.after},
                             {"details", change.details},
                             {"note", change.note()}});
    }
  }
  json["counts"] = counts;
  json["experiment_changes"] = changes;
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
  Json after_checks = Json::object();
  after_checks["policy"] = policy_json(report.policy);
  // "checks" lists every check but the unchanged ones with no note, which are only counted.
  after_checks["unlisted_unchanged"] = report.diff ? static_cast<int64_t>(report.diff->quiet.size()) : 0;
  after_checks["refresh"] =
      report.refresh_command.empty()
          ? Json(nullptr)
          : Json{{"command", report.refresh_command},
                 {"proposed_baseline",
                  report.proposed_baseline.empty() ? Json(nullptr) : Json(report.proposed_baseline)},
                 {"proposal_command", report.proposal_command.empty() ? Json(nullptr) : Json(report.proposal_command)},
                 {"proposal_changes", report.proposal_changes},
                 {"proposal_drops", report.proposal_drops}};
  // A run file may carry invalid UTF-8 in a check id or message: replace it rather than fail.
  // The checks are written one by one between the DOM-written members before and after
  // them: the same bytes as dumping one DOM holding everything (json_report_test checks).
  return "{\n" + members_text(json) + ",\n  \"checks\": " + checks_text(report) + ",\n" + members_text(after_checks) +
         "\n}\n";
}

}  // namespace driftgate

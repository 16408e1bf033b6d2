#include "differ/baseline_accept.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "differ/baseline_store.h"

namespace driftgate {

namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> string_list(const Json& json, const char* key, const std::string& where) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_array()) {
    throw Error(where + ": acceptance entry lacks the list '" + key + "'");
  }
  std::vector<std::string> items;
  for (const auto& item : *it) {
    if (!item.is_string()) {
      throw Error(where + ": '" + key + "' must hold strings");
    }
    items.push_back(item.get<std::string>());
  }
  return items;
}

std::string string_field(const Json& json, const char* key, const std::string& where) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_string()) {
    throw Error(where + ": acceptance entry lacks the text '" + key + "'");
  }
  return it->get<std::string>();
}

}  // namespace

std::string Acceptance::to_json_line() const {
  Json json{{"when", when},         {"who", who},           {"reason", reason},     {"globs", globs},
            {"run_sha", run_sha},   {"from_sha", from_sha}, {"accepted", accepted}, {"removed", removed}};
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Acceptance parse_acceptance(const std::string& line, const std::string& where) {
  Json json;
  try {
    json = Json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": not valid JSON (" + e.what() + "); the acceptance log is truncated or was edited");
  }
  if (!json.is_object()) {
    throw Error(where + ": expected a JSON object");
  }
  Acceptance acceptance;
  acceptance.when = string_field(json, "when", where);
  acceptance.who = string_field(json, "who", where);
  acceptance.reason = string_field(json, "reason", where);
  acceptance.globs = string_list(json, "globs", where);
  acceptance.run_sha = string_field(json, "run_sha", where);
  acceptance.from_sha = string_field(json, "from_sha", where);
  acceptance.accepted = string_list(json, "accepted", where);
  acceptance.removed = string_list(json, "removed", where);
  return acceptance;
}

bool matches_any(const std::string& id, const std::vector<std::string>& globs) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& glob) { return ::fnmatch(glob.c_str(), id.c_str(), 0) == 0; });
}

AcceptOutcome accept_checks(const RunFile& run, const RunFile& base, const std::vector<std::string>& globs) {
  std::map<std::string, const CheckRecord*> from_run;
  for (const auto& check : run.checks) {
    from_run[check.id] = &check;
  }
  std::map<std::string, const CheckRecord*> from_base;
  for (const auto& check : base.checks) {
    from_base[check.id] = &check;
  }
  AcceptOutcome outcome;
  outcome.baseline.header = run.header;
  outcome.baseline.header.shard = ShardInfo{};
  for (const auto& experiment : base.header.experiments) {
    auto& experiments = outcome.baseline.header.experiments;
    bool known = std::any_of(experiments.begin(), experiments.end(),
                             [&](const ExperimentHeader& e) { return e.name == experiment.name; });
    if (!known) {
      experiments.push_back(experiment);
    }
  }
  std::set<std::string> ids;
  for (const auto& [id, check] : from_run) {
    ids.insert(id);
  }
  for (const auto& [id, check] : from_base) {
    ids.insert(id);
  }
  for (const auto& id : ids) {
    auto in_run = from_run.find(id);
    auto in_base = from_base.find(id);
    if (!matches_any(id, globs)) {
      if (in_base != from_base.end()) {
        outcome.baseline.checks.push_back(*in_base->second);
      }
      continue;
    }
    if (in_run != from_run.end()) {
      outcome.baseline.checks.push_back(*in_run->second);
      outcome.accepted.push_back(id);
    } else {
      outcome.removed.push_back(id);
    }
  }
  outcome.baseline.summary = summarize(outcome.baseline.header, outcome.baseline.checks);
  outcome.baseline = canonical_baseline(outcome.baseline);
  return outcome;
}

std::string glob_escape(const std::string& id) {
  std::string escaped;
  for (char c : id) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
      escaped += '\\';
    }
    escaped += c;
  }
  return escaped;
}

std::string shell_quote(const std::string& text) {
  bool safe = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::string("/._-,+@%").find(c) != std::string::npos;
  });
  if (safe) {
    return text;
  }
  std::string quoted = "'";
  for (char c : text) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return quoted + "'";
}

}  // namespace driftgate

#include "ci/ci_context.h"

#include <nlohmann/json.hpp>

#include "ci/event_payload.h"
#include "core/error.h"

namespace driftgate {

namespace {

std::optional<std::string> lookup(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second;
}

// pull_request.{base,head}.sha from a GitHub event payload; absent for other events.
// The payload is read as `post github` reads it (event_payload.h).
void read_github_event(const std::string& path, const std::string& event_name, CiContext& context) {
  const std::string remedy = "pass --base REV to choose the baseline by hand";
  nlohmann::json payload = read_event_payload(path, remedy);
  const nlohmann::json* pull_request = pull_request_of(payload, path, event_name, remedy);
  if (pull_request == nullptr) {
    return;
  }
  auto sha_at = [&](const char* side) -> std::optional<std::string> {
    if (!pull_request->contains(side) || !(*pull_request)[side].is_object()) {
      return std::nullopt;
    }
    const auto& sha = (*pull_request)[side].value("sha", nlohmann::json());
    if (!sha.is_string()) {
      throw Error(path + " (GITHUB_EVENT_PATH): pull_request." + side + ".sha is missing or not a string");
    }
    return sha.get<std::string>();
  };
  context.base_sha = sha_at("base");
  context.head_sha = sha_at("head");
}

}  // namespace

CiContext read_ci_context(const std::map<std::string, std::string>& env) {
  CiContext context;
  if (lookup(env, "GITHUB_ACTIONS")) {
    context.system = "github";
    if (auto path = lookup(env, "GITHUB_EVENT_PATH")) {
      read_github_event(*path, lookup(env, "GITHUB_EVENT_NAME").value_or(""), context);
    }
    if (!context.head_sha) {
      context.head_sha = lookup(env, "GITHUB_SHA");
    }
    return context;
  }
  if (lookup(env, "GITLAB_CI")) {
    context.system = "gitlab";
    context.base_sha = lookup(env, "CI_MERGE_REQUEST_DIFF_BASE_SHA");
    context.head_sha = lookup(env, "CI_COMMIT_SHA");
  }
  return context;
}

}  // namespace driftgate

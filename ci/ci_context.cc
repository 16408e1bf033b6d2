#include "ci/ci_context.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_util.h"
#include "core/input_file.h"
#include "core/strict_json.h"

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
void read_github_event(const std::string& path, CiContext& context) {
  nlohmann::json payload;
  try {
    payload = parse_json_strict(read_input_file(path, k_event_payload));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + " (GITHUB_EVENT_PATH): not a valid event payload (" + e.what() +
                "); pass --base REV to choose the baseline by hand");
  } catch (const Error& e) {
    std::string what = e.what();
    throw Error(what.rfind(path, 0) == 0
                    ? what
                    : path + " (GITHUB_EVENT_PATH): " + what + "; pass --base REV to choose the baseline by hand");
  }
  if (!payload.is_object() || !payload.contains("pull_request")) {
    return;
  }
  const auto& pull_request = payload["pull_request"];
  auto sha_at = [&](const char* side) -> std::optional<std::string> {
    if (!pull_request.is_object() || !pull_request.contains(side) || !pull_request[side].is_object()) {
      return std::nullopt;
    }
    const auto& sha = pull_request[side].value("sha", nlohmann::json());
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
      read_github_event(*path, context);
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

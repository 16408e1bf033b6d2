#include "ci/github_target.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "ci/url.h"
#include "core/error.h"
#include "core/file_util.h"

namespace driftgate {

namespace {

using Json = nlohmann::json;

std::string env_value(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

std::string at_path(const Json& json, std::initializer_list<const char*> path) {
  const Json* node = &json;
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) {
      return "";
    }
    node = &(*node)[key];
  }
  return node->is_string() ? node->get<std::string>() : "";
}

// "#12" for the message; the number as written when it is not an integer.
std::string pull_number_text(const Json& pull) {
  if (!pull.is_object() || !pull.contains("number")) {
    return "?";
  }
  const Json& number = pull["number"];
  return number.is_number_integer() ? std::to_string(number.get<long long>()) : number.dump();
}

Json read_event(const std::string& path) {
  Json payload = Json::parse(read_file(path), nullptr, false);
  if (payload.is_discarded() || !payload.is_object()) {
    throw Error(path + " (GITHUB_EVENT_PATH): not a JSON event payload; pass --pr and --sha instead");
  }
  return payload;
}

void from_pull_request_event(const Json& payload, const std::string& event_path, GithubTarget& target) {
  const Json& pull = payload["pull_request"];
  std::string head_repo = at_path(pull, {"head", "repo", "full_name"});
  std::string base_repo = at_path(pull, {"base", "repo", "full_name"});
  // A fork that was deleted leaves head.repo null: still not this repository.
  bool head_gone = pull.contains("head") && pull["head"].is_object() && pull["head"].contains("repo") &&
                   pull["head"]["repo"].is_null();
  if (head_gone) {
    head_repo = "(deleted)";
  }
  if (!head_repo.empty() && head_repo != base_repo) {
    throw Error(event_path + " (GITHUB_EVENT_PATH): pull request #" + pull_number_text(pull) + " comes from the fork " +
                head_repo + "; its " + target.event_name +
                " workflow must not post with a write token. Upload report.json as an artifact and post from a "
                "workflow_run workflow (see .github/workflows/drift-post.yml)");
  }
  if (pull.value("number", Json()).is_number_integer()) {
    target.pr = pull["number"].get<int>();
  }
  target.head_sha = at_path(pull, {"head", "sha"});
}

void from_workflow_run_event(const Json& payload, const std::string& event_path, GithubTarget& target) {
  const Json& run = payload["workflow_run"];
  std::string event = at_path(run, {"event"});
  if (event != "pull_request" && event != "pull_request_target") {
    throw Error(event_path + " (GITHUB_EVENT_PATH): the workflow_run was triggered by a '" + event +
                "' run, not a pull_request; there is no pull request to post to");
  }
  target.head_sha = at_path(run, {"head_sha"});
  target.verify_pull = true;
  target.head_repo = at_path(run, {"head_repository", "full_name"});
  target.head_branch = at_path(run, {"head_branch"});
  // Set by GitHub when the run completed; null while it runs ("": never taken as success).
  target.run_conclusion = at_path(run, {"conclusion"});
  // Same-repository PRs are listed (each is tried); fork PRs are not and are found by
  // head repository and branch later.
  if (run.contains("pull_requests") && run["pull_requests"].is_array()) {
    for (const auto& pull : run["pull_requests"]) {
      if (pull.is_object() && pull.value("number", Json()).is_number_integer() && pull["number"].get<long long>() > 0 &&
          pull["number"].get<long long>() <= std::numeric_limits<int>::max()) {
        target.listed_prs.push_back(pull["number"].get<int>());
      }
    }
  }
}

}  // namespace

GithubTarget resolve_github_target(const std::map<std::string, std::string>& env, const GithubFlags& flags) {
  GithubTarget target;
  target.event_name = env_value(env, "GITHUB_EVENT_NAME");
  std::string event_path = env_value(env, "GITHUB_EVENT_PATH");
  if (!event_path.empty()) {
    Json payload = read_event(event_path);
    if (payload.contains("pull_request") && payload["pull_request"].is_object()) {
      from_pull_request_event(payload, event_path, target);
    } else if (payload.contains("workflow_run") && payload["workflow_run"].is_object()) {
      from_workflow_run_event(payload, event_path, target);
    }
  }
  target.api_url = flags.api_url.value_or(env_value(env, "GITHUB_API_URL"));
  if (target.api_url.empty()) {
    target.api_url = "https://api.github.com";
  }
  while (!target.api_url.empty() && target.api_url.back() == '/') {
    target.api_url.pop_back();
  }
  parse_api_url(target.api_url, flags.api_url ? "--api-url" : "GITHUB_API_URL");
  target.repo = flags.repo.value_or(env_value(env, "GITHUB_REPOSITORY"));
  size_t slash = target.repo.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == target.repo.size() ||
      target.repo.find('/', slash + 1) != std::string::npos ||
      target.repo.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./") !=
          std::string::npos) {
    throw Error("--repo '" + target.repo + "': expected OWNER/NAME (default: GITHUB_REPOSITORY)");
  }
  if (flags.pr) {
    if (*flags.pr < 1) {
      throw Error("--pr " + std::to_string(*flags.pr) + ": a pull request number is at least 1");
    }
    target.pr = *flags.pr;
  }
  if (flags.sha) {
    target.head_sha = *flags.sha;
  }
  if (target.head_sha.size() != 40 || target.head_sha.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw Error("--sha '" + target.head_sha +
                "': the PR head commit must be a full 40-hex SHA (default: pull_request.head.sha or "
                "workflow_run.head_sha from GITHUB_EVENT_PATH)");
  }
  if (target.pr == 0 && !target.verify_pull) {
    throw Error("no pull request: pass --pr N, or run in a pull_request or workflow_run workflow (GITHUB_EVENT_PATH)");
  }
  target.token = env_value(env, flags.token_env);
  if (target.token.empty()) {
    throw Error("--token-env " + flags.token_env +
                ": the variable is unset or empty; in Actions pass "
                "`env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` to the step");
  }
  std::string server = env_value(env, "GITHUB_SERVER_URL");
  std::string run_id = env_value(env, "GITHUB_RUN_ID");
  if (!server.empty() && !run_id.empty()) {
    target.run_url = server + "/" + target.repo + "/actions/runs/" + run_id;
  }
  return target;
}

}  // namespace driftgate

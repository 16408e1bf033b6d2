#include "ci/github_target.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "ci/event_payload.h"
#include "ci/json_fields.h"
#include "ci/url.h"
#include "core/error.h"
#include "core/safe_text.h"

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

// The largest pull request number driftgate takes (json_positive_int): GitHub's are
// 32-bit signed integers (PullRequest.number is an Int in its GraphQL API).
constexpr long long k_max_pull_number = 2147483647;

// "12" for messages; the number as written when it is not an integer.
std::string pull_number_text(const Json& pull) {
  if (!pull.is_object() || !pull.contains("number")) {
    return "?";
  }
  return pull["number"].dump();
}

// The pull request number at `field` of `object`, range-checked: never truncated
// to another pull request's number. 0 when absent and `required` is false.
int pull_number(const Json& object, const std::string& event_path, const std::string& field, bool required) {
  auto it = object.find("number");
  if (it == object.end() || it->is_null()) {
    if (required) {
      throw Error(event_path + " (GITHUB_EVENT_PATH): " + field +
                  " is missing; the payload has no pull request number (pass --pr N to name it)");
    }
    return 0;
  }
  int number = json_positive_int(*it);
  if (number == 0) {
    throw Error(event_path + " (GITHUB_EVENT_PATH): " + field + " is " + it->dump() +
                ", not a pull request number (a whole number from 1 to " + std::to_string(k_max_pull_number) +
                "); the payload is not one GitHub wrote. Nothing was posted");
  }
  return number;
}

// GitHub's rules for OWNER/NAME: an owner of 1-39 letters, digits and hyphens; a
// name of 1-100 letters, digits, '.', '-' and '_' that is not "." or "..".
bool is_repository_name(const std::string& text) {
  size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash > 39 || slash + 1 == text.size() ||
      text.size() - slash - 1 > 100) {
    return false;
  }
  std::string owner = text.substr(0, slash);
  std::string name = text.substr(slash + 1);
  auto alnum = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return std::all_of(owner.begin(), owner.end(), [&](char c) { return alnum(c) || c == '-'; }) &&
         std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; }) &&
         name != "." && name != "..";
}

bool is_full_sha(const std::string& text) {
  return text.size() == 40 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The workflow file a workflow_run names, as a path in this repository: GitHub writes
// ".github/workflows/FILE.yml"; its REST description's example reads
// "OWNER/NAME/.github/workflows/FILE.yml@REF", reduced here when OWNER/NAME is `repo`.
std::string workflow_file_in(const std::string& path, const std::string& repo) {
  std::string file = path.substr(0, path.find('@'));
  if (file.rfind(repo + "/", 0) == 0) {
    file = file.substr(repo.size() + 1);
  }
  return file;
}

// A workflow_run follows a workflow by its name (`workflows: [drift gate]`), and a pull
// request can add a workflow file of that name: only the run of the expected file
// (--gate-workflow) is posted.
void check_gate_workflow(const GithubTarget& target, const std::string& event_path, const std::string& expected) {
  if (target.run_path.empty()) {
    throw Error(event_path + " (GITHUB_EVENT_PATH): the workflow_run names no workflow file (workflow_run.path), so " +
                "--gate-workflow " + expected + " cannot be checked. Nothing was posted");
  }
  std::string file = workflow_file_in(target.run_path, target.repo);
  if (file != expected) {
    throw Error(event_path + " (GITHUB_EVENT_PATH): the workflow_run is a run of " + escape_invisible(target.run_path) +
                ", not of --gate-workflow " + expected +
                "; a workflow of the same name from another file (one a pull request added) decides nothing here. "
                "Nothing was posted");
  }
}

// What `post github` says after any problem with the payload.
const char* const k_post_remedy = "pass --pr N and --sha SHA to post by hand. Nothing was posted";

// Names in the payload that pick where to post must be what GitHub writes.
void require_repository_name(const std::string& name, const std::string& event_path, const std::string& field) {
  if (!name.empty() && !is_repository_name(name)) {
    throw Error(event_path + " (GITHUB_EVENT_PATH): " + field + " '" + escape_invisible(name) +
                "' is not an OWNER/NAME repository name; the payload is malformed or forged. Nothing was posted");
  }
}

void from_pull_request_event(const Json& pull, const std::string& event_path, bool have_pr_flag, GithubTarget& target) {
  std::string head_repo = at_path(pull, {"head", "repo", "full_name"});
  std::string base_repo = at_path(pull, {"base", "repo", "full_name"});
  require_repository_name(head_repo, event_path, "pull_request.head.repo.full_name");
  require_repository_name(base_repo, event_path, "pull_request.base.repo.full_name");
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
  target.pr = pull_number(pull, event_path, "pull_request.number", !have_pr_flag);
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
  // The workflow file that ran: workflow_run.path (GitHub's webhook reference), else the
  // payload's top-level workflow.path (older payloads, @octokit/webhooks-examples).
  target.run_path = at_path(run, {"path"});
  if (target.run_path.empty()) {
    target.run_path = at_path(payload, {"workflow", "path"});
  }
  // Same-repository PRs are listed (each is tried); fork PRs are not and are found by
  // head repository and branch later.
  if (run.contains("pull_requests") && run["pull_requests"].is_array()) {
    const Json& pulls = run["pull_requests"];
    for (size_t i = 0; i < pulls.size(); ++i) {
      if (pulls[i].is_object()) {
        int number =
            pull_number(pulls[i], event_path, "workflow_run.pull_requests[" + std::to_string(i) + "].number", false);
        if (number != 0) {
          target.listed_prs.push_back(number);
        }
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
    Json payload = read_event_payload(event_path, k_post_remedy);
    if (const Json* pull = pull_request_of(payload, event_path, target.event_name, k_post_remedy)) {
      from_pull_request_event(*pull, event_path, flags.pr.has_value(), target);
    } else if (payload.contains("workflow_run") && payload["workflow_run"].is_object()) {
      from_workflow_run_event(payload, event_path, target);
    } else if (target.event_name == "workflow_run") {
      throw Error(event_path +
                  " (GITHUB_EVENT_PATH): a workflow_run event without a workflow_run object; the payload "
                  "is not one GitHub wrote for that event (GITHUB_EVENT_NAME); " +
                  std::string(k_post_remedy));
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
  if (!is_repository_name(target.repo)) {
    throw Error("--repo '" + escape_invisible(target.repo) +
                "': expected OWNER/NAME (an owner of letters, digits and '-', a name of letters, digits, '.', '-' and "
                "'_' that is not '.' or '..'; default: GITHUB_REPOSITORY)");
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
  if (!is_full_sha(target.head_sha)) {
    if (flags.sha) {
      throw Error("--sha '" + escape_invisible(target.head_sha) + "': the PR head commit must be a full 40-hex SHA");
    }
    if (event_path.empty()) {
      throw Error(
          "no head commit: pass --sha SHA (the PR head), or run in a pull_request or workflow_run workflow "
          "(GITHUB_EVENT_PATH)");
    }
    throw Error(event_path +
                " (GITHUB_EVENT_PATH): " + (target.verify_pull ? "workflow_run.head_sha" : "pull_request.head.sha") +
                " is '" + escape_invisible(target.head_sha) + "', not a full 40-hex SHA; " + k_post_remedy);
  }
  if (target.verify_pull && flags.gate_workflow) {
    check_gate_workflow(target, event_path, *flags.gate_workflow);
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

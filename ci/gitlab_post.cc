#include "ci/gitlab_post.h"

#include <ostream>

#include "ci/comment_body.h"
#include "ci/url.h"
#include "core/error.h"

namespace driftgate {

namespace {

std::string env_value(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

}  // namespace

GitlabTarget resolve_gitlab_target(const std::map<std::string, std::string>& env, const GitlabFlags& flags) {
  GitlabTarget target;
  target.api_url = flags.api_url.value_or(env_value(env, "CI_API_V4_URL"));
  while (!target.api_url.empty() && target.api_url.back() == '/') {
    target.api_url.pop_back();
  }
  if (target.api_url.empty()) {
    throw Error("no GitLab API URL: pass --api-url https://HOST/api/v4 or run in GitLab CI (CI_API_V4_URL)");
  }
  parse_api_url(target.api_url, flags.api_url ? "--api-url" : "CI_API_V4_URL");
  target.project_id = flags.project_id.value_or(env_value(env, "CI_PROJECT_ID"));
  if (target.project_id.empty()) {
    throw Error("no project: pass --project-id ID or run in GitLab CI (CI_PROJECT_ID)");
  }
  if (flags.mr) {
    target.mr = *flags.mr;
  } else {
    std::string iid = env_value(env, "CI_MERGE_REQUEST_IID");
    if (iid.empty() || iid.size() > 9 || iid.find_first_not_of("0123456789") != std::string::npos) {
      throw Error("no merge request: pass --mr IID or run in a merge request pipeline (CI_MERGE_REQUEST_IID is '" +
                  iid + "'; add `rules: - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"` to the job)");
    }
    target.mr = std::stoi(iid);
  }
  if (target.mr < 1) {
    throw Error("--mr " + std::to_string(target.mr) + ": a merge request IID is at least 1");
  }
  // A merged-results pipeline runs on a temporary merge commit (CI_COMMIT_SHA) and names
  // the MR head in CI_MERGE_REQUEST_SOURCE_BRANCH_SHA, which is empty in ordinary MR
  // pipelines (gitlab-org/gitlab#330964, #249093): the status belongs on the head.
  std::string source_sha = env_value(env, "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA");
  target.sha = flags.sha.value_or(source_sha.empty() ? env_value(env, "CI_COMMIT_SHA") : source_sha);
  if (target.sha.size() != 40 || target.sha.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw Error("--sha '" + target.sha +
                "': the MR head commit must be a full 40-hex SHA (default: CI_MERGE_REQUEST_SOURCE_BRANCH_SHA in "
                "merged-results pipelines, else CI_COMMIT_SHA)");
  }
  target.token = env_value(env, flags.token_env);
  if (target.token.empty()) {
    throw Error("--token-env " + flags.token_env +
                ": the variable is unset or empty; store a project access token with `api` scope in a masked CI/CD "
                "variable of that name (CI_JOB_TOKEN cannot write notes or statuses)");
  }
  target.job_url = env_value(env, "CI_JOB_URL");
  return target;
}

GitlabPostResult post_gitlab(const nlohmann::json& report, const GitlabTarget& target, const PostSettings& settings,
                             GitlabApi& api, Clock& clock, const RetryPolicy& policy, std::ostream& log) {
  std::string artifact = settings.artifact_url.empty() ? target.job_url : settings.artifact_url;
  std::string project = settings.project.empty() ? target.project_id : settings.project;
  std::string marker = sticky_marker(project, settings.key);
  std::string key_shown = settings.key == "default" ? "" : settings.key;
  std::string body =
      render_comment_body(report, BodyOptions{marker, key_shown, artifact, k_gitlab_note_budget, settings.trend});
  GitlabThread thread(api, target.mr);
  StickyResult sticky = upsert_sticky_comment(thread, marker, body, clock, policy);
  log << "driftgate post: " << (sticky.created ? "created" : "updated") << " note " << sticky.id
      << " on merge request !" << target.mr << "\n";
  std::string verdict = report.value("verdict", "");
  // no_baseline gated nothing: never green (GitLab statuses have no neutral state).
  std::string state = verdict == "pass" ? "success" : "failed";
  api.create_status(target.sha, state, status_name(settings), verdict_line(report), artifact);
  log << "driftgate post: status " << state << " on " << target.sha.substr(0, 12) << "\n";
  return GitlabPostResult{sticky.created, sticky.id};
}

}  // namespace driftgate

#include "ci/gitlab_post.h"

#include <ostream>

#include "ci/api_client.h"
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
  // The pipeline's own commit and id: the status lands in this pipeline (gitlab_post.h).
  std::string commit = env_value(env, "CI_COMMIT_SHA");
  target.sha = flags.sha.value_or(commit);
  if (target.sha.size() != 40 || target.sha.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw Error((flags.sha ? "--sha '" : "CI_COMMIT_SHA '") + target.sha +
                "': the commit for the status must be a full 40-hex SHA; pass --sha SHA or run in a merge request "
                "pipeline (CI_COMMIT_SHA)");
  }
  std::string pipeline = env_value(env, "CI_PIPELINE_ID");
  if (target.sha == commit && !pipeline.empty() && pipeline.size() <= 18 &&
      pipeline.find_first_not_of("0123456789") == std::string::npos) {
    target.pipeline_id = pipeline;
  }
  target.token = env_value(env, flags.token_env);
  if (target.token.empty()) {
    throw Error(
        "--token-env " + flags.token_env +
        ": the variable is unset or empty; store a project access token (GitLab.com Free: a bot user's personal "
        "access token) with `api` scope in a masked CI/CD "
        "variable of that name (CI_JOB_TOKEN cannot write notes or statuses)");
  }
  target.job_url = env_value(env, "CI_JOB_URL");
  return target;
}

GitlabPostResult post_gitlab(const nlohmann::json& report, const GitlabTarget& target, const PostSettings& settings,
                             GitlabApi& api, Clock& clock, const RetryPolicy& policy, std::ostream& log,
                             StatusRefused on_refused) {
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
  std::string where =
      target.sha.substr(0, 12) + (target.pipeline_id.empty() ? "" : " in pipeline " + target.pipeline_id);
  try {
    api.create_status(target.sha, state, status_name(settings), verdict_line(report), artifact, target.pipeline_id);
  } catch (const ApiError& e) {
    if (e.status() != 403 || on_refused == StatusRefused::k_fail) {
      throw;
    }
    log << "driftgate post: warning: the commit status was refused (" << e.what()
        << "). The note above carries the verdict; give the token the Developer role to get the status too, or "
           "pass --on-status-refused fail to make this an error\n";
    return GitlabPostResult{sticky.created, sticky.id, false};
  }
  log << "driftgate post: status " << state << " on " << where << "\n";
  return GitlabPostResult{sticky.created, sticky.id, true};
}

}  // namespace driftgate

// `driftgate post gitlab`: the sticky merge request note and the commit status.
//
// Context from GitLab's predefined variables (CI_API_V4_URL, CI_PROJECT_ID,
// CI_MERGE_REQUEST_IID, CI_COMMIT_SHA, CI_PIPELINE_ID), overridable by flags; the token
// from a masked variable holding an access token with `api` scope.
//
// Which call needs which role: the MR note a role that may comment on the merge
// request (Reporter and above); the commit status Developer (GitLab's
// lib/api/commit_statuses.rb, `authorize! :create_commit_status`; a Reporter gets 403,
// spec/requests/api/commit_statuses_spec.rb). A status refused that way does not fail the post once the note is out
// (StatusRefused::k_warn, the default): the note carries the verdict, and the diff
// job is the gate.
//
// The status goes on the pipeline's own commit (CI_COMMIT_SHA) with its pipeline_id
// (CI_PIPELINE_ID). GitLab appends an external status to the newest pipeline of the
// SHA it is given, filtered by pipeline_id when one is sent, and creates a new
// pipeline when none matches (lib/api/commit_statuses.rb, all_matching_pipelines). In
// a merged-results pipeline CI_COMMIT_SHA is the temporary merge commit: a status on
// the MR head (CI_MERGE_REQUEST_SOURCE_BRANCH_SHA) would land in another pipeline of
// that commit, or in a new one, instead of the one the MR shows.
#pragma once

#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ci/clock.h"
#include "ci/gitlab_api.h"
#include "ci/post_settings.h"

namespace driftgate {

struct GitlabFlags {
  std::optional<std::string> api_url;                // --api-url     (CI_API_V4_URL)
  std::optional<std::string> project_id;             // --project-id  (CI_PROJECT_ID)
  std::optional<int> mr;                             // --mr          (CI_MERGE_REQUEST_IID)
  std::optional<std::string> sha;                    // --sha  (CI_COMMIT_SHA: the pipeline's commit)
  std::string token_env = "DRIFTGATE_GITLAB_TOKEN";  // --token-env
};

struct GitlabTarget {
  std::string api_url;
  std::string project_id;
  int mr = 0;
  std::string sha;
  std::string pipeline_id;  // CI_PIPELINE_ID when `sha` is the pipeline's commit; "" otherwise
  std::string token;
  std::string job_url;  // CI_JOB_URL ("" when unknown)
};

// Throws driftgate::Error naming the flag or variable to set.
GitlabTarget resolve_gitlab_target(const std::map<std::string, std::string>& env, const GitlabFlags& flags);

// What a commit status refused for the token's role (403) does to `post gitlab`.
enum class StatusRefused {
  k_warn,  // a warning; exit 0 once the note is posted (the default)
  k_fail,  // an error (exit 2), as any other refused call
};

struct GitlabPostResult {
  bool note_created = false;
  std::string note_id;
  bool status_posted = false;
};

GitlabPostResult post_gitlab(const nlohmann::json& report, const GitlabTarget& target, const PostSettings& settings,
                             GitlabApi& api, Clock& clock, const RetryPolicy& policy, std::ostream& log,
                             StatusRefused on_refused = StatusRefused::k_warn);

}  // namespace driftgate

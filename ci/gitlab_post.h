// `driftgate post gitlab`: the sticky merge request note and the commit status.
//
// Context from GitLab's predefined variables (CI_API_V4_URL, CI_PROJECT_ID,
// CI_MERGE_REQUEST_IID, CI_MERGE_REQUEST_SOURCE_BRANCH_SHA or CI_COMMIT_SHA), overridable by flags; the token from a
// masked variable holding a project access token with `api` scope.
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
  std::optional<std::string> sha;                    // --sha  (CI_MERGE_REQUEST_SOURCE_BRANCH_SHA, else CI_COMMIT_SHA)
  std::string token_env = "DRIFTGATE_GITLAB_TOKEN";  // --token-env
};

struct GitlabTarget {
  std::string api_url;
  std::string project_id;
  int mr = 0;
  std::string sha;
  std::string token;
  std::string job_url;  // CI_JOB_URL ("" when unknown)
};

// Throws driftgate::Error naming the flag or variable to set.
GitlabTarget resolve_gitlab_target(const std::map<std::string, std::string>& env, const GitlabFlags& flags);

struct GitlabPostResult {
  bool note_created = false;
  std::string note_id;
};

GitlabPostResult post_gitlab(const nlohmann::json& report, const GitlabTarget& target, const PostSettings& settings,
                             GitlabApi& api, Clock& clock, const RetryPolicy& policy, std::ostream& log);

}  // namespace driftgate

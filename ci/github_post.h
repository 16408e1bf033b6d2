// `driftgate post github`: the sticky PR comment, the commit status on the PR head,
// a check run when the token is a GitHub App's, and the job summary.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "ci/clock.h"
#include "ci/github_api.h"
#include "ci/github_target.h"
#include "ci/post_settings.h"

namespace driftgate {

struct GithubPostResult {
  int pr = 0;
  bool comment_created = false;  // false: updated in place
  std::string comment_id;
  bool check_run = false;  // a check run was created
};

// For a workflow_run target: finds (when target.pr is 0) and verifies the pull
// request: open, targeting target.repo, with head target.head_sha. Returns its
// number. Throws driftgate::Error saying which condition failed.
int verify_pull_request(GithubApi& api, const GithubTarget& target);

// Posts `report` (a parse_report document). `log` gets one line per notable step.
GithubPostResult post_github(const nlohmann::json& report, const GithubTarget& target, const PostSettings& settings,
                             GithubApi& api, Clock& clock, const RetryPolicy& policy, std::ostream& log);

}  // namespace driftgate

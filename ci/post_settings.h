// What `driftgate post github|gitlab` publishes besides where: the sticky
// comment's identity, the artifact link and which surfaces to write.
#pragma once

#include <string>

#include "ci/comment_body.h"

namespace driftgate {

struct PostSettings {
  std::string project;            // first half of the sticky identity (default: the repository / project)
  std::string key = "default";    // the CI matrix key: one comment per (project, key)
  std::string artifact_url;       // link to the full report ("" : the workflow run page when known)
  bool check_run = true;          // GitHub: also create a check run when the token can
  std::string step_summary_path;  // GitHub: $GITHUB_STEP_SUMMARY ("" : none)
  std::string comment_author;     // GitHub: the token's login ("" : GET /user, else github-actions[bot])
  CommentAppendix trend;          // --trend-markdown: folded after the summary when it fits (comment, step summary)
};

// The status/check name: "driftgate", or "driftgate/KEY" for a non-default key.
std::string status_name(const PostSettings& settings);

}  // namespace driftgate

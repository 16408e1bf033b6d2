// What the CI system says about the change being tested, read from the
// environment map a command is handed (never from the process directly).
//
// GitHub Actions: the pull_request event payload at GITHUB_EVENT_PATH carries
// pull_request.base.sha and pull_request.head.sha (the head, not the temporary
// merge commit). GitLab: CI_MERGE_REQUEST_DIFF_BASE_SHA and CI_COMMIT_SHA.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace driftgate {

struct CiContext {
  std::string system;                   // "github", "gitlab" or "" when not in CI
  std::optional<std::string> base_sha;  // the target branch's commit the change is based on
  std::optional<std::string> head_sha;  // the change's own head commit
};

// Reads the CI context. Throws driftgate::Error when GITHUB_EVENT_PATH names an
// unreadable or malformed payload (the message says which file and what is wrong).
CiContext read_ci_context(const std::map<std::string, std::string>& env);

}  // namespace driftgate

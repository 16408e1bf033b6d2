// Where `driftgate post github` posts: repository, pull request, head SHA, token,
// read from the environment map and the event payload, overridden by flags.
//
// pull_request events give the PR number and pull_request.head.sha (never
// GITHUB_SHA, a temporary merge commit). A PR from a fork is refused: its
// pull_request token is read-only and running its code with a write token is the
// classic pwn-request, so the report is uploaded and posted by a workflow_run
// workflow. There the payload's pull_requests list is empty for forks, and GitHub's
// commits/{sha}/pulls answers [] for a commit that exists only in the fork, so the PR
// is found by the run's head repository owner and branch (GET pulls?head=OWNER:BRANCH)
// and verified (open, targets this repository, same head) through the API before
// anything is written (see github_post.h). The run's conclusion, which GitHub sets
// and the fork cannot forge, is kept: the posted verdict combines it with the report.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace driftgate {

// Flags of `driftgate post github`; unset ones come from the environment.
struct GithubFlags {
  std::optional<std::string> api_url;      // --api-url   (GITHUB_API_URL, https://api.github.com)
  std::optional<std::string> repo;         // --repo      (GITHUB_REPOSITORY)
  std::optional<int> pr;                   // --pr        (the event payload)
  std::optional<std::string> sha;          // --sha       (pull_request.head.sha, workflow_run.head_sha)
  std::string token_env = "GITHUB_TOKEN";  // --token-env: the variable holding the token
  // --gate-workflow: in a workflow_run, the gate's workflow file (.github/workflows/FILE.yml)
  // the run must come from; unset: not checked.
  std::optional<std::string> gate_workflow;
};

struct GithubTarget {
  std::string api_url;  // no trailing slash; https or loopback http
  std::string repo;     // "owner/name"
  int pr = 0;           // 0: find it (workflow_run); else --pr or the pull_request event's
  std::string head_sha;
  // workflow_run only: every pull_requests entry (tried first, in order), the head
  // repository ("owner/name") and branch the run was triggered from, and its
  // conclusion ("success", "failure", ...; "" outside a workflow_run).
  std::vector<int> listed_prs;
  std::string head_repo;
  std::string head_branch;
  std::optional<std::string> run_conclusion;  // nullopt: not a workflow_run; "": null (no conclusion)
  std::string run_path;                       // workflow_run: the workflow file that ran ("" when unnamed)
  std::string token;
  std::string event_name;    // GITHUB_EVENT_NAME ("" outside Actions)
  bool verify_pull = false;  // workflow_run: check the PR through the API before posting
  std::string run_url;       // this workflow run's page ("" when unknown)
};

// Resolves the target. Throws driftgate::Error (exit 2) saying which flag or
// variable to set when something is missing, refusing fork pull_request events and,
// with --gate-workflow, a workflow_run of any other workflow file.
GithubTarget resolve_github_target(const std::map<std::string, std::string>& env, const GithubFlags& flags);

}  // namespace driftgate

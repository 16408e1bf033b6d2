// driftgate post github|gitlab: publishes a diff report (report.json) on the pull
// or merge request: one sticky comment per (project, matrix key), the verdict as a
// commit status on the head commit (GitHub: and a check run when the token can),
// and GitHub's job summary. Context comes from the CI's variables, overridable by
// flags; --dry-run prints the requests, token redacted, and sends nothing.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "app/cli_util.h"
#include "app/command.h"
#include "ci/api_client.h"
#include "ci/clock.h"
#include "ci/comment_body.h"
#include "ci/dry_run_transport.h"
#include "ci/github_post.h"
#include "ci/gitlab_post.h"
#include "ci/httplib_transport.h"
#include "core/error.h"
#include "core/file_util.h"
#include "core/input_file.h"

namespace driftgate {

namespace {

const CommandHelp k_help{
    "driftgate post github|gitlab REPORT.json [options]",
    "Posts a diff report (driftgate diff --report FILE) on the pull or merge request: one sticky comment per\n"
    "(--project, --key), found by a hidden marker and the token's own user and updated in place (GitHub: GET\n"
    "/user's login; the Actions GITHUB_TOKEN, which GET /user refuses, writes as github-actions[bot]); the verdict\n"
    "as a commit status on the head commit (not GitHub's merge commit); on GitHub also a check run when the\n"
    "token is a GitHub App's (the Actions GITHUB_TOKEN is) and $GITHUB_STEP_SUMMARY when set.\n"
    "GitHub context: GITHUB_EVENT_PATH (pull_request or workflow_run payload), GITHUB_API_URL, GITHUB_REPOSITORY;\n"
    "a fork PR's pull_request event is refused: post from a workflow_run workflow, which finds the PR (its\n"
    "pull_requests, then GET pulls?head=OWNER:BRANCH for a fork, then the commit's PRs) and verifies it (open,\n"
    "into this repository, the run's head SHA); --gate-workflow FILE refuses a run of any other workflow file\n"
    "(workflow_run follows a workflow by name, and a pull request can add a file of that name). The status and\n"
    "check run are green only when the report says\n"
    "pass and (in a workflow_run) the run concluded success; no_baseline is never green (status error, check\n"
    "run failure; GitLab: failed). report.json over 32 MiB or nested deeper than 32 levels exits 2.\n"
    "GitLab context: CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID, CI_COMMIT_SHA and CI_PIPELINE_ID (the\n"
    "status joins this pipeline, merged-results pipelines included); the token (default variable\n"
    "DRIFTGATE_GITLAB_TOKEN) needs api scope, the Reporter role for the note and Developer for the status: a\n"
    "status refused (403) once the note is posted is a warning, exit 0 (--on-status-refused fail: exit 2).\n"
    "https only (http to loopback).\n"
    "Exit 0 when posted, whatever the verdict (the diff step gates); 2 on bad input or an API error.\n"
    "--dry-run prints every request with its headers (token redacted) and answers as an empty API; nothing is\n"
    "sent. In a workflow_run it prints the PR lookup, and with --pr N the requests that post on N.\n"
    "--trend-markdown FILE (driftgate trend --markdown FILE) folds the trend into the comment and job summary\n"
    "under \"Trend on BRANCH\", after the regression summary and only when it fits what the summary left of the\n"
    "limit; otherwise one line says it was left out. A missing, unreadable, empty or non-UTF-8 FILE exits 2,\n"
    "posting nothing.",
    "driftgate post github report.json --key linux-cpu --artifact-url \"$RUN_URL\" --trend-markdown trend.md"};

// More than any surface allows (GitLab's note: 1,000,000 characters; a job summary: 1 MiB):
// a larger trend file is read this far only, and left out of the comment with a notice.
constexpr std::streamsize k_trend_read_limit = 2 * 1024 * 1024;

// The trend markdown for the comment: at most k_trend_read_limit bytes of `path`.
CommentAppendix read_trend(const std::string& path, const std::string& branch) {
  // Any size: only the first k_trend_read_limit + 1 bytes are read.
  constexpr InputKind k_trend_file{"trend markdown file", UINT64_MAX, nullptr};
  std::optional<InputFile> file;
  try {
    file.emplace(path, k_trend_file);
  } catch (const Error& e) {
    throw Error("driftgate post: --trend-markdown " + std::string(e.what()) +
                "; write it with driftgate trend --markdown FILE, or drop the flag. Nothing was posted");
  }
  std::istream& in = file->stream();
  std::string text(static_cast<size_t>(k_trend_read_limit) + 1, '\0');
  try {
    in.read(text.data(), k_trend_read_limit + 1);
  } catch (const Error& e) {
    throw Error("driftgate post: --trend-markdown " + std::string(e.what()) + ". Nothing was posted");
  }
  text.resize(static_cast<size_t>(in.gcount()));
  CommentAppendix trend;
  trend.title = "Trend on " + branch;
  trend.oversized = in.gcount() > k_trend_read_limit;
  if (trend.oversized) {
    text.resize(static_cast<size_t>(k_trend_read_limit));
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw Error("driftgate post: --trend-markdown " + path +
                ": the file is empty; driftgate trend --markdown writes a table even for one commit. Nothing was "
                "posted");
  }
  if (!trend.oversized) {
    try {
      (void)nlohmann::json(text).dump();  // the comment travels as JSON, which needs UTF-8
    } catch (const nlohmann::json::type_error& e) {
      throw Error("driftgate post: --trend-markdown " + path + ": not UTF-8 text (" + e.what() +
                  "); pass the markdown driftgate trend --markdown wrote. Nothing was posted");
    }
  }
  trend.markdown = std::move(text);
  return trend;
}

struct PostRequest {
  std::string system;  // "github" or "gitlab"
  std::string report_path;
  PostSettings settings;
  GithubFlags github;
  GitlabFlags gitlab;
  bool dry_run = false;
  bool verbose = false;
  StatusRefused status_refused = StatusRefused::k_warn;
  HttpTimeouts timeouts;
  std::string ca_file;  // PEM bundle for https ("" : the system store)
};

std::optional<PostRequest> parse_request(CommandContext& context) {
  PostRequest request;
  std::string api_url, repo, sha, project_id, token_env, trend_path, trend_branch, gate_workflow, on_status_refused;
  int pr = 0, mr = 0, connect_s = 10, read_s = 30;
  bool no_check_run = false;
  po::options_description options;
  options.add_options()("system", po::value<std::string>(&request.system)->required(), "github or gitlab (positional)")(
      "report", po::value<std::string>(&request.report_path)->required(),
      "report.json from driftgate diff (positional)")(
      "key", po::value<std::string>(&request.settings.key)->default_value("default"),
      "CI matrix key: one comment and status per (project, key)")(
      "project", po::value<std::string>(&request.settings.project), "sticky comment project (default: the repository)")(
      "artifact-url", po::value<std::string>(&request.settings.artifact_url),
      "link to the full report (default: the workflow run / job page)")(
      "api-url", po::value<std::string>(&api_url), "API root (default: GITHUB_API_URL or CI_API_V4_URL)")(
      "repo", po::value<std::string>(&repo), "GitHub OWNER/NAME (default: GITHUB_REPOSITORY)")(
      "pr", po::value<int>(&pr), "GitHub pull request number (default: from the event payload)")(
      "project-id", po::value<std::string>(&project_id), "GitLab project id or path (default: CI_PROJECT_ID)")(
      "mr", po::value<int>(&mr), "GitLab merge request IID (default: CI_MERGE_REQUEST_IID)")(
      "sha", po::value<std::string>(&sha),
      "commit for the status (default: the PR head; GitLab: the pipeline's commit, CI_COMMIT_SHA)")(
      "token-env", po::value<std::string>(&token_env),
      "variable holding the token (default: GITHUB_TOKEN; DRIFTGATE_GITLAB_TOKEN for gitlab)")(
      "no-check-run", po::bool_switch(&no_check_run), "GitHub: commit status only, no check run")(
      "gate-workflow", po::value<std::string>(&gate_workflow),
      "GitHub workflow_run: the gate's workflow file (.github/workflows/FILE.yml) the run must come from")(
      "on-status-refused", po::value<std::string>(&on_status_refused)->default_value("warn"),
      "GitLab: a commit status refused for the token's role (403) after the note: warn (exit 0) or fail (exit 2)")(
      "comment-author", po::value<std::string>(&request.settings.comment_author),
      "GitHub: the login the token writes as (default: GET /user, else github-actions[bot]); "
      "another GitHub App's token: APP-SLUG[bot]")("connect-timeout", po::value<int>(&connect_s)->default_value(10),
                                                   "seconds to connect (TCP and TLS)")(
      "read-timeout", po::value<int>(&read_s)->default_value(30), "seconds to wait for response bytes")(
      "ca-file", po::value<std::string>(&request.ca_file), "PEM CA bundle for https (default: the system store)")(
      "trend-markdown", po::value<std::string>(&trend_path),
      "markdown from driftgate trend --markdown, folded after the summary when it fits")(
      "trend-branch", po::value<std::string>(&trend_branch)->default_value("main"),
      "branch the trend was drawn on (its section title: Trend on BRANCH)")(
      "dry-run", po::bool_switch(&request.dry_run), "print the requests (token redacted) instead of sending them")(
      "verbose,v", po::bool_switch(&request.verbose), "log every API call to stderr");
  po::positional_options_description positional;
  positional.add("system", 1).add("report", 1);
  po::variables_map variables;
  if (!parse_command_line("post", context.args, options, positional, k_help, variables, context.out)) {
    return std::nullopt;
  }
  if (request.system != "github" && request.system != "gitlab") {
    throw Error("driftgate post '" + request.system +
                "': unknown system; use driftgate post github|gitlab REPORT.json");
  }
  if (connect_s < 1 || read_s < 1) {
    throw Error("driftgate post: --connect-timeout and --read-timeout must be at least 1 second");
  }
  request.timeouts.connect = std::chrono::seconds(connect_s);
  request.timeouts.read = std::chrono::seconds(read_s);
  request.timeouts.write = std::chrono::seconds(read_s);
  request.settings.check_run = !no_check_run;
  if (variables.count("comment-author") != 0) {
    if (request.system != "github") {
      throw Error("--comment-author is for driftgate post github; GitLab's GET /user names every token's user");
    }
    if (!is_github_login(request.settings.comment_author)) {
      throw Error("--comment-author '" + request.settings.comment_author +
                  "': expected a GitHub login (1-39 letters, digits or hyphens), or APP-SLUG[bot] for a GitHub App");
    }
  }
  if (variables.count("gate-workflow") != 0) {
    if (request.system != "github") {
      throw Error("--gate-workflow is for driftgate post github (a workflow_run's workflow file)");
    }
    if (gate_workflow.rfind(".github/workflows/", 0) != 0 || gate_workflow.find("..") != std::string::npos) {
      throw Error("--gate-workflow '" + gate_workflow +
                  "': expected the gate's workflow file as .github/workflows/FILE.yml (the path GitHub names in "
                  "workflow_run.path)");
    }
    request.github.gate_workflow = gate_workflow;
  }
  if (on_status_refused != "warn" && on_status_refused != "fail") {
    throw Error("--on-status-refused '" + on_status_refused + "': use warn or fail");
  }
  if (!variables["on-status-refused"].defaulted() && request.system != "gitlab") {
    throw Error(
        "--on-status-refused is for driftgate post gitlab (GitHub's missing permission stops with the "
        "permissions: entry to add)");
  }
  request.status_refused = on_status_refused == "fail" ? StatusRefused::k_fail : StatusRefused::k_warn;
  if (variables.count("trend-markdown") != 0) {
    request.settings.trend = read_trend(trend_path, trend_branch);
  } else if (!variables["trend-branch"].defaulted()) {
    throw Error("driftgate post: --trend-branch " + trend_branch +
                " without --trend-markdown FILE: it titles the trend section; pass the trend too or drop it");
  }
  auto set = [&](const char* name, auto& target, const auto& value) {
    if (variables.count(name) != 0) {
      target = value;
    }
  };
  set("api-url", request.github.api_url, api_url);
  set("api-url", request.gitlab.api_url, api_url);
  set("repo", request.github.repo, repo);
  set("pr", request.github.pr, pr);
  set("sha", request.github.sha, sha);
  set("sha", request.gitlab.sha, sha);
  set("project-id", request.gitlab.project_id, project_id);
  set("mr", request.gitlab.mr, mr);
  set("token-env", request.github.token_env, token_env);
  set("token-env", request.gitlab.token_env, token_env);
  return request;
}

}  // namespace

int cmd_post(CommandContext& context) {
  std::optional<PostRequest> request = parse_request(context);
  if (!request) {
    return 0;
  }
  nlohmann::json report = parse_report(read_input_file(request->report_path, k_report_file), request->report_path);
  Redactor redactor;
  SystemClock clock;
  HttplibTransport network(request->timeouts, request->ca_file);
  DryRunTransport printer(context.out, redactor);
  HttpTransport& transport = request->dry_run ? static_cast<HttpTransport&>(printer) : network;
  ApiConfig config;
  config.log = &context.err;
  config.verbose = request->verbose;
  if (request->dry_run) {
    config.retry.mutation_spacing = std::chrono::milliseconds(0);
  }
  if (request->system == "github") {
    GithubTarget target = resolve_github_target(context.env, request->github);
    redactor.add_secret(target.token);
    if (!request->dry_run) {
      auto it = context.env.find("GITHUB_STEP_SUMMARY");
      request->settings.step_summary_path = it == context.env.end() ? "" : it->second;
    }
    config.service = "GitHub";
    config.headers = github_headers(target.token);
    config.advisor = github_advice;
    ApiClient client(transport, clock, redactor, config);
    GithubApi api(client, target.api_url, target.repo);
    if (request->dry_run && target.verify_pull) {
      // The lookup's requests are printed; the dry run's empty API has no pull request,
      // so the verification cannot pass and --pr N names the one the rest goes to.
      try {
        verify_pull_request(api, target);
      } catch (const Error& e) {
        context.out << "dry run: the pull request lookup above finds nothing in an empty API (" << e.what() << ")\n";
      }
      if (target.pr == 0) {
        context.out << "dry run: pass --pr N to see the requests that post on pull request N\n";
        return 0;
      }
      target.verify_pull = false;
    }
    post_github(report, target, request->settings, api, clock, config.retry, context.err);
    return 0;
  }
  GitlabTarget target = resolve_gitlab_target(context.env, request->gitlab);
  redactor.add_secret(target.token);
  config.service = "GitLab";
  config.headers = gitlab_headers(target.token);
  config.advisor = gitlab_advice;
  ApiClient client(transport, clock, redactor, config);
  GitlabApi api(client, target.api_url, target.project_id);
  post_gitlab(report, target, request->settings, api, clock, config.retry, context.err, request->status_refused);
  return 0;
}

}  // namespace driftgate

#include "ci/github_post.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <ostream>

#include "ci/comment_body.h"
#include "core/error.h"
#include "core/file_util.h"
#include "core/input_file.h"

namespace driftgate {

namespace {

// What the commit status and check run say. report.json comes from the gate run,
// which a fork controls; workflow_run.conclusion is set by GitHub. Green needs both:
// a report saying pass and (in a workflow_run) a run that concluded success.
// no_baseline gated nothing, so it is never green, and the status (error) and the
// check run (failure) both block a required check; a neutral check run would not:
// GitHub counts neutral and skipped as passing a required check.
struct PostedVerdict {
  std::string state;       // commit status: success, failure, error
  std::string conclusion;  // check run: success, failure
  std::string line;        // status description and check-run title
  std::string notice;      // "" or why the status overrides the report
};

PostedVerdict posted_verdict(const nlohmann::json& report, const std::optional<std::string>& run_conclusion) {
  std::string verdict = report.value("verdict", "");
  PostedVerdict posted{"success", "success", verdict_line(report), ""};
  if (verdict == "fail") {
    posted.state = posted.conclusion = "failure";
  } else if (verdict == "no_baseline") {
    posted.state = "error";
    posted.conclusion = "failure";
  } else if (verdict != "pass") {
    throw Error("report.json: verdict '" + verdict + "' is not pass, fail or no_baseline; nothing was posted");
  }
  if (run_conclusion && *run_conclusion != "success" && verdict != "fail") {
    std::string how = run_conclusion->empty() ? "ended without a conclusion" : "concluded " + *run_conclusion;
    posted.state = posted.conclusion = "failure";
    posted.line = "driftgate: FAIL - the gate run " + how + " (its report: " + verdict + ")";
    posted.notice = "The gate run " + how + ", so the status is a failure whatever its report says (" + verdict + ").";
  }
  return posted;
}

// Whose comments are ours: --comment-author, else GET /user's login, else (an
// installation token, which GET /user refuses) the Actions bot.
std::string comment_author(GithubApi& api, const PostSettings& settings, std::ostream& log) {
  if (!settings.comment_author.empty()) {
    return lower_login(settings.comment_author);
  }
  if (std::optional<std::string> login = api.authenticated_login()) {
    return *login;
  }
  log << "driftgate post: the token is a GitHub App installation token (GET /user is not for it); our comments are "
         "those by "
      << k_github_actions_login << " (another app's token: pass --comment-author APP-SLUG[bot])\n";
  return k_github_actions_login;
}

// Appends the summary to $GITHUB_STEP_SUMMARY within the 1 MiB a step's summary may
// hold, counting what earlier commands of the step already wrote there.
void append_step_summary(const std::string& path, const nlohmann::json& report, const BodyOptions& base,
                         std::ostream& log) {
  // GitHub's runner makes it an empty regular file; anything else there is refused by name.
  constexpr InputKind k_step_summary_file{"job summary ($GITHUB_STEP_SUMMARY)", 64 * k_mib, nullptr};
  std::error_code ec;
  std::string existing = std::filesystem::exists(std::filesystem::symlink_status(path, ec))
                             ? read_input_file(path, k_step_summary_file)
                             : "";
  size_t limit = k_step_summary_budget.limit;
  // Below this the summary itself may not fit; GitHub would drop the whole file.
  const size_t k_least = 4096;
  if (existing.size() + 1 + k_least > limit) {
    log << "driftgate post: no job summary: $GITHUB_STEP_SUMMARY already holds " << existing.size() << " of its "
        << limit << " bytes\n";
    return;
  }
  BodyOptions options = base;
  options.budget = BodyBudget{limit - existing.size() - 1, true};
  std::string body;
  try {
    body = render_comment_body(report, options);
  } catch (const Error& e) {
    log << "driftgate post: no job summary: " << e.what() << "\n";  // the comment and status are posted
    return;
  }
  write_file_atomic(path, existing + body + "\n");
}

}  // namespace

int verify_pull_request(GithubApi& api, const GithubTarget& target) {
  std::vector<int> tried;
  std::string seen;
  // True when `number` is open, targets target.repo and has head target.head_sha.
  auto verified = [&](int number) {
    if (std::find(tried.begin(), tried.end(), number) != tried.end()) {
      return false;
    }
    tried.push_back(number);
    GithubPull pull = api.get_pull(number);
    if (pull.state == "open" && pull.base_repo == target.repo && pull.head_sha == target.head_sha) {
      return true;
    }
    seen += (seen.empty() ? "" : ", ") + std::string("#") + std::to_string(number) + " (" + pull.state + ", targets " +
            pull.base_repo + ", head " + pull.head_sha.substr(0, 12) + ")";
    return false;
  };
  auto first_verified = [&](const std::vector<int>& numbers) -> int {
    for (int number : numbers) {
      if (verified(number)) {
        return number;
      }
    }
    return 0;
  };
  std::string looked;
  if (target.pr != 0) {
    looked = "--pr " + std::to_string(target.pr);
    if (verified(target.pr)) {
      return target.pr;
    }
  } else {
    // 1. workflow_run.pull_requests: same-repository PRs (empty for forks).
    if (int number = first_verified(target.listed_prs)) {
      return number;
    }
    looked = std::to_string(target.listed_prs.size()) + " listed in the workflow_run";
    // 2. A fork's PR, by the run's head repository owner and branch: the lookup GitHub
    //    answers for forks (commits/{sha}/pulls answers [] for a fork-only commit).
    size_t slash = target.head_repo.find('/');
    if (slash != std::string::npos && slash > 0 && !target.head_branch.empty()) {
      std::string owner = target.head_repo.substr(0, slash);
      if (int number = first_verified(api.open_pulls_from(owner, target.head_branch))) {
        return number;
      }
      looked += ", open ones from " + owner + ":" + target.head_branch;
    }
    // 3. The commit's associated PRs (a same-repository branch the payload did not list).
    if (int number = first_verified(api.pulls_of_commit(target.head_sha))) {
      return number;
    }
    looked += ", those of commit " + target.head_sha.substr(0, 12);
  }
  throw Error("no open pull request into " + target.repo + " has head " + target.head_sha + " (looked at " + looked +
              (seen.empty() ? std::string("; none found") : "; checked " + seen) +
              "); nothing was posted (the PR may have been closed or pushed to since the run)");
}

GithubPostResult post_github(const nlohmann::json& report, const GithubTarget& target, const PostSettings& settings,
                             GithubApi& api, Clock& clock, const RetryPolicy& policy, std::ostream& log) {
  GithubPostResult result;
  result.pr = target.verify_pull ? verify_pull_request(api, target) : target.pr;
  std::string artifact = settings.artifact_url.empty() ? target.run_url : settings.artifact_url;
  std::string project = settings.project.empty() ? target.repo : settings.project;
  std::string marker = sticky_marker(project, settings.key);
  std::string key_shown = settings.key == "default" ? "" : settings.key;

  PostedVerdict verdict = posted_verdict(report, target.run_conclusion);
  std::string body = render_comment_body(
      report, BodyOptions{marker, key_shown, artifact, k_github_comment_budget, settings.trend, verdict.notice});
  GithubThread thread(api, result.pr, comment_author(api, settings, log));
  StickyResult sticky = upsert_sticky_comment(thread, marker, body, clock, policy);
  result.comment_created = sticky.created;
  result.comment_id = sticky.id;
  log << "driftgate post: " << (sticky.created ? "created" : "updated") << " comment " << sticky.id << " on "
      << target.repo << "#" << result.pr << "\n";

  api.create_status(target.head_sha, verdict.state, status_name(settings), verdict.line, artifact);
  log << "driftgate post: status " << verdict.state << " on " << target.head_sha.substr(0, 12) << "\n";

  if (settings.check_run) {
    std::string summary = render_comment_body(
        report, BodyOptions{"", key_shown, artifact, k_github_check_summary_budget, {}, verdict.notice});
    try {
      api.create_check_run(target.head_sha, status_name(settings), verdict.conclusion, verdict.line, summary, artifact);
      result.check_run = true;
    } catch (const ApiError& e) {
      if (e.status() != 403) {
        throw;
      }
      // Only GitHub App tokens (the Actions GITHUB_TOKEN is one) may create check runs.
      log << "driftgate post: no check run, the commit status carries the verdict (" << e.what() << ")\n";
    }
  }
  if (!settings.step_summary_path.empty()) {
    append_step_summary(settings.step_summary_path, report,
                        BodyOptions{"", key_shown, artifact, k_step_summary_budget, settings.trend, verdict.notice},
                        log);
  }
  return result;
}

}  // namespace driftgate

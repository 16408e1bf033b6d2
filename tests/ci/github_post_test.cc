// `post_github` end to end over real HTTP against the fake GitHub on 127.0.0.1.
#include "ci/github_post.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "ci/comment_body.h"
#include "ci/httplib_transport.h"
#include "ci/markdown_escape.h"
#include "core/file_util.h"
#include "tests/ci/fake_github_server.h"
#include "tests/ci/post_test_support.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

using std::chrono::milliseconds;
using test::FakeGithubServer;
using test::make_report;
using test::report_check;

const std::string k_token = "ghs_fakeTokenForTests0001";
const std::string k_sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const std::string k_marker = "<!-- driftgate-sticky project=octo/app key=default -->";

class GithubPostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::shared_api_dir().empty()) {
      GTEST_SKIP() << "shared/api not found at " << DRIFTGATE_SHARED_API << " (the fake GitHub validates against it)";
    }
    server = std::make_unique<FakeGithubServer>(test::shared_api_dir(), "octo/app", k_token);
    target.api_url = server->url();
    target.repo = "octo/app";
    target.pr = 2;
    target.head_sha = k_sha;
    target.token = k_token;
    redactor.add_secret(k_token);
  }

  void TearDown() override {
    if (server) {
      EXPECT_TRUE(server->violations().empty()) << ::testing::PrintToString(server->violations());
    }
  }

  GithubPostResult post(const nlohmann::json& report) {
    HttpTimeouts timeouts;
    timeouts.connect = std::chrono::seconds(5);
    timeouts.read = std::chrono::seconds(10);
    HttplibTransport transport(timeouts);
    ApiConfig config{"GitHub", github_headers(k_token), github_advice, RetryPolicy{}, &log, true};
    ApiClient client(transport, clock, redactor, config);
    GithubApi api(client, target.api_url, target.repo);
    return post_github(report, target, settings, api, clock, config.retry, log);
  }

  nlohmann::json failing() { return make_report("fail", {report_check("m/i/a~b/o", "regressed", true)}); }
  nlohmann::json passing() { return make_report("pass", {report_check("m/i/a~b/o", "fixed", false)}); }

  std::unique_ptr<FakeGithubServer> server;
  GithubTarget target;
  PostSettings settings;
  test::FakeClock clock;
  Redactor redactor;
  std::ostringstream log;
};

TEST_F(GithubPostTest, FirstRunCreatesSecondUpdatesTheSameComment) {
  GithubPostResult first = post(failing());
  GithubPostResult second = post(passing());
  EXPECT_TRUE(first.comment_created);
  EXPECT_FALSE(second.comment_created);
  EXPECT_EQ(first.comment_id, second.comment_id);
  auto comments = server->comments(2);
  ASSERT_EQ(comments.size(), 1U);
  EXPECT_EQ(comments[0].body.rfind(k_marker + "\n### driftgate: PASS", 0), 0U) << comments[0].body;
  auto statuses = server->statuses();
  ASSERT_EQ(statuses.size(), 2U);
  EXPECT_EQ(statuses[0]["sha"], k_sha);
  EXPECT_EQ(statuses[0]["state"], "failure");
  EXPECT_EQ(statuses[1]["state"], "success");
  EXPECT_EQ(statuses[1]["context"], "driftgate");
  ASSERT_EQ(server->check_runs().size(), 2U);
  EXPECT_EQ(server->check_runs()[0]["conclusion"], "failure");
  EXPECT_EQ(log.str().find(k_token), std::string::npos);
}

TEST_F(GithubPostTest, FindsOurCommentOnALaterPage) {
  for (int i = 0; i < 230; ++i) {
    server->add_comment(2, 42, "someone-else", "chatter " + std::to_string(i));
  }
  server->add_own_comment(2, k_marker + "\nold");
  for (int i = 0; i < 40; ++i) {
    server->add_comment(2, 42, "someone-else", "more " + std::to_string(i));
  }
  GithubPostResult result = post(failing());
  EXPECT_FALSE(result.comment_created);
  auto comments = server->comments(2);
  ASSERT_EQ(comments.size(), 271U);
  EXPECT_NE(comments[230].body.find("driftgate: FAIL"), std::string::npos);
  EXPECT_EQ(server->requests("GET /repos/octo/app/issues/2/comments"), 3);
}

TEST_F(GithubPostTest, AnotherUsersCommentWithTheMarkerIsLeftAlone) {
  server->add_comment(2, 42, "someone-else", k_marker + "\nI copied your marker");
  GithubPostResult result = post(failing());
  EXPECT_TRUE(result.comment_created);
  auto comments = server->comments(2);
  ASSERT_EQ(comments.size(), 2U);
  EXPECT_EQ(comments[0].body, k_marker + "\nI copied your marker");
  EXPECT_EQ(comments[1].author_login, "github-actions[bot]");
}

TEST_F(GithubPostTest, CreateWhoseReplyIsLostIsNotDuplicated) {
  server->drop_after_apply_next("POST /repos/octo/app/issues/2/comments");
  GithubPostResult result = post(failing());
  EXPECT_FALSE(result.comment_created) << "found on re-listing and updated; " << log.str();
  EXPECT_EQ(server->comments(2).size(), 1U);
  EXPECT_EQ(server->requests("POST /repos/octo/app/issues/2/comments"), 1);
}

TEST_F(GithubPostTest, ServerErrorOnCreateThenSuccessLeavesExactlyOneComment) {
  server->fail_next("POST /repos/octo/app/issues/2/comments", 500, {}, R"({"message":"Server Error"})");
  post(failing());
  EXPECT_EQ(server->comments(2).size(), 1U);
  EXPECT_EQ(server->requests("POST /repos/octo/app/issues/2/comments"), 2);
  EXPECT_EQ(server->requests("GET /repos/octo/app/issues/2/comments"), 2);
}

TEST_F(GithubPostTest, RateLimitWithRetryAfterIsWaitedOut) {
  server->fail_next("GET /repos/octo/app/issues/2/comments", 429, {{"Retry-After", "3"}},
                    R"({"message":"API rate limit exceeded"})");
  server->fail_next("PATCH", 503, {}, "{}", 2);
  post(failing());
  post(failing());
  EXPECT_EQ(server->comments(2).size(), 1U);
  EXPECT_EQ(clock.sleeps[0], milliseconds(3000)) << log.str();
  EXPECT_EQ(server->requests("PATCH"), 3);
}

TEST_F(GithubPostTest, DroppedListingIsRetriedAndExhaustedQuotaWaitsForTheReset) {
  server->drop_after_apply_next("GET /repos/octo/app/issues/2/comments");
  server->fail_next("GET /user", 403,
                    {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", std::to_string(clock.epoch_seconds() + 5)}},
                    R"({"message":"API rate limit exceeded for installation."})");
  post(failing());
  EXPECT_EQ(server->comments(2).size(), 1U);
  EXPECT_EQ(server->requests("GET /repos/octo/app/issues/2/comments"), 2);
  ASSERT_GE(clock.sleeps.size(), 2U);
  EXPECT_EQ(clock.sleeps[0], milliseconds(6000)) << "until x-ratelimit-reset, plus a second";
  EXPECT_EQ(clock.sleeps[1], milliseconds(1000)) << "first back-off after the dropped listing";
}

TEST_F(GithubPostTest, TheFakeRejectsWhatGithubWouldReject) {
  HttplibTransport transport;
  std::string base = server->url() + "/repos/octo/app";
  HttpHeaders auth = {{"Authorization", "Bearer " + k_token}, {"User-Agent", "t"}};
  transport.send(HttpRequest{"POST", base + "/issues/2/comments", auth, R"({"body":"x","title":"y"})"});
  transport.send(HttpRequest{"POST", base + "/statuses/" + k_sha, github_headers(k_token), R"({"state":"green"})"});
  transport.send(HttpRequest{"GET", base + "/issues/2/comments?per_page=500", github_headers(k_token), ""});
  transport.send(HttpRequest{"PUT", base + "/issues/comments/1", github_headers(k_token), R"({"body":"x"})"});
  std::string found = ::testing::PrintToString(server->take_violations());
  for (const char* expected : {"header Accept is '*/*'", "header X-GitHub-Api-Version is ''",
                               "property 'title' is not in the schema", "body.state:", "is not one of [",
                               "per_page is at most 100", "PUT /repos/octo/app/issues/comments/1: no such operation"}) {
    EXPECT_NE(found.find(expected), std::string::npos) << expected << " not in " << found;
  }
}

TEST_F(GithubPostTest, DropThenServerErrorThenRateLimitStillLeavesExactlyOneComment) {
  // All three faults in one post, over the real HTTP transport: the listing's reply is
  // dropped, the create answers 500, the re-listing is rate limited.
  server->drop_after_apply_next("GET /repos/octo/app/issues/2/comments");
  server->fail_next("POST /repos/octo/app/issues/2/comments", 500, {}, R"({"message":"Server Error"})");
  server->fail_next("GET /repos/octo/app/issues/2/comments", 429, {{"Retry-After", "2"}},
                    R"({"message":"API rate limit exceeded"})");
  post(failing());
  EXPECT_EQ(server->comments(2).size(), 1U) << log.str();
  EXPECT_EQ(server->requests("POST /repos/octo/app/issues/2/comments"), 2) << "the 500, then the create that lands";
  EXPECT_EQ(server->requests("GET /repos/octo/app/issues/2/comments"), 4)
      << "dropped, rate limited, listed, and re-listed after the 500 before creating again";
  ASSERT_FALSE(clock.sleeps.empty());
  EXPECT_NE(std::find(clock.sleeps.begin(), clock.sleeps.end(), milliseconds(2000)), clock.sleeps.end())
      << "Retry-After is honoured; " << log.str();
}

TEST_F(GithubPostTest, PersistentFailureIsBoundedAndNamesTheCall) {
  server->fail_next("GET /repos/octo/app/issues/2/comments", 502, {}, "{}", 50);
  try {
    post(failing());
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("GitHub API: GET " + server->url() + "/repos/octo/app/issues/2/comments"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("gave up after 5 attempts"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server->requests("GET /repos/octo/app/issues/2/comments"), RetryPolicy{}.max_attempts);
  EXPECT_TRUE(server->comments(2).empty());
}

TEST_F(GithubPostTest, MissingStatusesPermissionStopsWithThePermissionToAdd) {
  server->fail_next("POST /repos/octo/app/statuses", 403, {},
                    R"({"message":"Resource not accessible by integration"})");
  try {
    post(failing());
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("add `permissions: statuses: write` to the posting job"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(server->requests("POST /repos/octo/app/statuses"), 1);
}

TEST_F(GithubPostTest, ActionsTokenIsRefusedGetUserAndWritesAsGithubActionsBot) {
  // GitHub answers GET /user with 403 "Resource not accessible by integration" for the
  // Actions GITHUB_TOKEN (the fake's default token); its comments are github-actions[bot]'s.
  server->add_comment(2, 42, "someone-else", k_marker + "\npasted by a person");
  server->add_comment(2, 49699333, "dependabot[bot]", k_marker + "\npasted by another bot");
  server->add_own_comment(2, k_marker + "\nour earlier run");
  GithubPostResult result = post(failing());
  EXPECT_FALSE(result.comment_created) << log.str();
  auto comments = server->comments(2);
  ASSERT_EQ(comments.size(), 3U);
  EXPECT_EQ(comments[0].body, k_marker + "\npasted by a person");
  EXPECT_EQ(comments[1].body, k_marker + "\npasted by another bot");
  EXPECT_NE(comments[2].body.find("driftgate: FAIL"), std::string::npos) << comments[2].body;
  EXPECT_EQ(result.comment_id, std::to_string(comments[2].id));
  EXPECT_EQ(server->requests("GET /user"), 1) << "a missing permission is not retried";
  EXPECT_NE(log.str().find("our comments are those by github-actions[bot]"), std::string::npos) << log.str();
  EXPECT_EQ(server->check_runs().size(), 1U) << "an installation token may create check runs";
}

TEST_F(GithubPostTest, OtherRefusalsOfGetUserAreErrorsNotTheBot) {
  server->set_token_owner(FakeGithubServer::TokenKind::personal, 583231, "octocat");
  server->fail_next("GET /user", 403, {}, R"({"message":"Resource not accessible by personal access token"})");
  EXPECT_THROW(post(failing()), ApiError);
  EXPECT_TRUE(server->comments(2).empty());
}

TEST_F(GithubPostTest, CommentAuthorNamesAnotherAppsBot) {
  // A token made for another GitHub App: GET /user refuses it too, and its comments
  // are by that app's bot, which --comment-author names.
  server->set_token_owner(FakeGithubServer::TokenKind::installation, 777, "driftgate-poster[bot]");
  server->add_comment(2, FakeGithubServer::k_actions_bot_id, "github-actions[bot]", k_marker + "\nby GITHUB_TOKEN");
  server->add_own_comment(2, k_marker + "\nby the app");
  settings.comment_author = "Driftgate-Poster[bot]";
  GithubPostResult result = post(failing());
  EXPECT_FALSE(result.comment_created) << log.str();
  auto comments = server->comments(2);
  ASSERT_EQ(comments.size(), 2U);
  EXPECT_EQ(comments[0].body, k_marker + "\nby GITHUB_TOKEN");
  EXPECT_NE(comments[1].body.find("driftgate: FAIL"), std::string::npos) << comments[1].body;
  EXPECT_EQ(server->requests("GET /user"), 0) << "the flag names the author, nothing to ask";
}

TEST_F(GithubPostTest, PersonalTokenWritesAsItsUserAndFallsBackToTheStatusQuietly) {
  server->set_token_owner(FakeGithubServer::TokenKind::personal, 583231, "Octocat");
  server->add_comment(2, FakeGithubServer::k_actions_bot_id, "github-actions[bot]", k_marker + "\nby GITHUB_TOKEN");
  server->add_own_comment(2, k_marker + "\nby octocat");
  GithubPostResult result = post(failing());
  EXPECT_FALSE(result.comment_created) << "found by GET /user's login; " << log.str();
  ASSERT_EQ(server->comments(2).size(), 2U);
  EXPECT_EQ(server->comments(2)[0].body, k_marker + "\nby GITHUB_TOKEN");
  EXPECT_NE(server->comments(2)[1].body.find("driftgate: FAIL"), std::string::npos);
  EXPECT_EQ(server->requests("GET /user"), 1);
  EXPECT_FALSE(result.check_run);
  EXPECT_EQ(server->statuses().size(), 1U);
  EXPECT_NE(log.str().find("no check run, the commit status carries the verdict"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("Resource not accessible by personal access token"), std::string::npos) << log.str();
}

TEST_F(GithubPostTest, WrongTokenIsAnActionableErrorWithoutTheToken) {
  target.token = "ghs_wrong";
  redactor.add_secret("ghs_wrong");
  HttplibTransport transport;
  ApiConfig config{"GitHub", github_headers("ghs_wrong"), github_advice, RetryPolicy{}, &log, true};
  ApiClient client(transport, clock, redactor, config);
  GithubApi api(client, target.api_url, target.repo);
  try {
    post_github(failing(), target, settings, api, clock, config.retry, log);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_NE(std::string(e.what()).find("check that the token variable"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("ghs_wrong"), std::string::npos);
  }
}

TEST_F(GithubPostTest, TrendGoesWhereTheRegressionsLeaveRoom) {
  std::vector<nlohmann::json> checks;
  for (int i = 0; i < 3000; ++i) {
    checks.push_back(report_check("exp/input" + std::to_string(i) + "/cpu_fp32~frozen/out", "regressed", true,
                                  std::string(100, 'm')));
  }
  test::TempDir temp;
  settings.step_summary_path = temp / "step_summary.md";
  settings.trend.title = "Trend on main";
  settings.trend.markdown = "| commit | pass rate |\n|:--|--:|\n| `abc1234` | 100% |\n";
  post(make_report("fail", checks));
  ASSERT_EQ(server->comments(2).size(), 1U);
  std::string comment = server->comments(2)[0].body;
  EXPECT_NE(comment.find("**Truncated:**"), std::string::npos);
  EXPECT_NE(comment.find("**Trend on main left out:** the changed checks alone did not fit"), std::string::npos);
  EXPECT_EQ(comment.find("| `abc1234` |"), std::string::npos);
  std::string step = read_file(settings.step_summary_path);
  EXPECT_EQ(step.find("**Truncated:**"), std::string::npos) << "1 MiB holds all 3000 checks";
  EXPECT_NE(step.find("<details><summary>Trend on main</summary>\n\n" + settings.trend.markdown), std::string::npos);
  ASSERT_EQ(server->check_runs().size(), 1U);
  std::string summary = server->check_runs()[0]["output"]["summary"];
  EXPECT_EQ(summary.find("Trend on main"), std::string::npos) << "the check run shows the regressions only";
}

TEST_F(GithubPostTest, HugeReportFitsEverySurfaceWithATruncationNotice) {
  std::vector<nlohmann::json> checks;
  for (int i = 0; i < 3000; ++i) {
    // Multi-byte names: the comment counts characters, the check summary bytes.
    checks.push_back(report_check("exp\xE2\x86\x92/input" + std::to_string(i) + "/cpu_fp32~frozen/out",
                                  i < 40 ? "regressed" : "new", i < 40, std::string(100, 'm')));
  }
  test::TempDir temp;
  settings.step_summary_path = temp / "step_summary.md";
  settings.artifact_url = "https://github.com/octo/app/actions/runs/9/artifacts/1";
  post(make_report("fail", checks));
  ASSERT_EQ(server->comments(2).size(), 1U);
  std::string comment = server->comments(2)[0].body;
  EXPECT_LE(utf16_length(comment), 65536U);
  EXPECT_GT(comment.size(), 65536U) << "bytes beyond the character limit: the characters were counted";
  EXPECT_NE(comment.find("**Truncated:**"), std::string::npos);
  EXPECT_NE(comment.find("see [report.json](" + settings.artifact_url + ")"), std::string::npos);
  ASSERT_EQ(server->check_runs().size(), 1U);
  std::string summary = server->check_runs()[0]["output"]["summary"];
  EXPECT_LE(summary.size(), 65535U);
  EXPECT_NE(summary.find("allows 65535 bytes"), std::string::npos);
  std::string step = read_file(settings.step_summary_path);
  EXPECT_LE(step.size(), 1024U * 1024U);
  EXPECT_EQ(step.find("**Truncated:**"), std::string::npos) << "1 MiB holds all 3000 checks";

  // The fake enforces the limits as GitHub does, so the bounds above are not vacuous.
  HttplibTransport transport;
  HttpResponse refused =
      transport.send(HttpRequest{"POST", server->url() + "/repos/octo/app/issues/2/comments", github_headers(k_token),
                                 nlohmann::json{{"body", std::string(65537, 'x')}}.dump()});
  EXPECT_EQ(refused.status, 422);
  EXPECT_NE(refused.body.find("Body is too long"), std::string::npos) << refused.body;
}

// GitHub answers GET /repos/{base}/commits/{sha}/pulls with [] when the commit exists
// only in a fork (TooTallNate/nx.js#410, retransmission/retransmission#280,
// nerva-project/nerva#79, google/go-github#2241), and workflow_run.pull_requests is
// empty for a fork's run; GET /repos/{base}/pulls?head=OWNER:BRANCH lists the PR.
TEST_F(GithubPostTest, ForkCommitIsUnknownToTheBaseRepositorysCommitLookup) {
  server->add_pull(7, "open", k_sha, "octo/app", "mallory/app", "fix");
  HttplibTransport transport;
  HttpResponse by_commit = transport.send(
      HttpRequest{"GET", server->url() + "/repos/octo/app/commits/" + k_sha + "/pulls", github_headers(k_token), ""});
  EXPECT_EQ(by_commit.status, 200);
  EXPECT_EQ(nlohmann::json::parse(by_commit.body), nlohmann::json::array());
  HttpResponse by_head = transport.send(HttpRequest{
      "GET", server->url() + "/repos/octo/app/pulls?state=open&head=mallory%3Afix", github_headers(k_token), ""});
  ASSERT_EQ(by_head.status, 200);
  auto listed = nlohmann::json::parse(by_head.body);
  ASSERT_EQ(listed.size(), 1U);
  EXPECT_EQ(listed[0]["number"], 7);
  EXPECT_EQ(listed[0]["head"]["label"], "mallory:fix");
}

TEST_F(GithubPostTest, WorkflowRunFindsTheForkPullByHeadOwnerAndBranchAndVerifiesIt) {
  target.pr = 0;
  target.verify_pull = true;
  target.head_repo = "mallory/app";
  target.head_branch = "fix";
  server->add_pull(6, "closed", k_sha, "octo/app", "mallory/app", "fix");
  server->add_pull(8, "open", k_sha, "octo/app", "eve/app", "fix");  // same commit, another fork's branch
  server->add_pull(7, "open", k_sha, "octo/app", "mallory/app", "fix");
  GithubPostResult result = post(failing());
  EXPECT_EQ(result.pr, 7);
  EXPECT_EQ(server->comments(7).size(), 1U);
  EXPECT_TRUE(server->comments(6).empty());
  EXPECT_TRUE(server->comments(8).empty());
  EXPECT_EQ(server->requests("GET /repos/octo/app/pulls/8"), 0) << "eve:fix is not the run's head";
  ASSERT_EQ(server->statuses().size(), 1U);
  EXPECT_EQ(server->statuses()[0]["sha"], k_sha);
}

TEST_F(GithubPostTest, WorkflowRunTriesEveryListedPullBeforeLookingUp) {
  target.pr = 0;
  target.verify_pull = true;
  target.listed_prs = {3, 4};
  target.head_repo = "octo/app";
  target.head_branch = "feature";
  server->add_pull(3, "closed", k_sha, "octo/app");
  server->add_pull(4, "open", k_sha, "octo/app");
  GithubPostResult result = post(failing());
  EXPECT_EQ(result.pr, 4);
  EXPECT_EQ(server->requests("GET /repos/octo/app/pulls/3"), 1);
  EXPECT_EQ(server->requests("GET /repos/octo/app/pulls/4"), 1);
  EXPECT_EQ(server->requests("GET /repos/octo/app/commits/"), 0) << "found among the listed ones";
}

TEST_F(GithubPostTest, WorkflowRunRefusesAForkPullThatTargetsAnotherRepositoryOrMovedOn) {
  target.pr = 0;
  target.verify_pull = true;
  target.head_repo = "mallory/app";
  target.head_branch = "fix";
  server->add_pull(7, "open", std::string(40, 'f'), "octo/app", "mallory/app", "fix");
  try {
    post(failing());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no open pull request into octo/app has head " + k_sha +
                                         " (looked at 0 listed in the workflow_run, open ones from mallory:fix, "
                                         "those of commit ec26c3e57ca3; checked #7 (open, targets octo/app, head "
                                         "ffffffffffff))"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(server->comments(7).empty());
  EXPECT_TRUE(server->statuses().empty());
}

TEST_F(GithubPostTest, WorkflowRunRefusesAPullThatIsClosedOrMovedOn) {
  target.verify_pull = true;
  target.pr = 7;
  server->add_pull(7, "open", std::string(40, 'f'), "octo/app");
  try {
    post(failing());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no open pull request into octo/app has head " + k_sha), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(server->comments(7).empty());
  EXPECT_TRUE(server->statuses().empty());
}

// workflow_run.conclusion is set by GitHub; report.json by the gate run, which a fork
// controls: the status is green only when both say so.
TEST_F(GithubPostTest, AReportSayingPassOnAFailedGateRunPostsAFailure) {
  target.run_conclusion = "failure";
  post(passing());
  ASSERT_EQ(server->statuses().size(), 1U);
  EXPECT_EQ(server->statuses()[0]["state"], "failure");
  EXPECT_EQ(server->statuses()[0]["description"],
            "driftgate: FAIL - the gate run concluded failure (its report: pass)");
  ASSERT_EQ(server->check_runs().size(), 1U);
  EXPECT_EQ(server->check_runs()[0]["conclusion"], "failure");
  auto comments = server->comments(2);
  ASSERT_EQ(comments.size(), 1U);
  EXPECT_NE(comments[0].body.find("> **The gate run concluded failure, so the status is a failure whatever its report "
                                  "says \\(pass\\).**"),
            std::string::npos)
      << comments[0].body;

  target.run_conclusion = "";  // a run without a conclusion is not a success either
  post(passing());
  EXPECT_EQ(server->statuses()[1]["state"], "failure");
  EXPECT_EQ(server->statuses()[1]["description"],
            "driftgate: FAIL - the gate run ended without a conclusion (its report: pass)");

  target.run_conclusion = "success";
  post(passing());
  EXPECT_EQ(server->statuses()[2]["state"], "success");
  EXPECT_EQ(server->check_runs()[2]["conclusion"], "success");
  EXPECT_EQ(server->comments(2)[0].body.find("> **The gate run"), std::string::npos);
  post(failing());
  EXPECT_EQ(server->statuses()[3]["state"], "failure");
  EXPECT_EQ(server->statuses()[3]["description"], "driftgate: FAIL - 1 regressed");
}

TEST_F(GithubPostTest, NoBaselineIsNeverGreenAndStatusAndCheckRunAgree) {
  auto report = make_report("no_baseline", {});
  report["baseline"] = nullptr;
  for (std::optional<std::string> conclusion : {std::optional<std::string>(), std::optional<std::string>("success")}) {
    target.run_conclusion = conclusion;
    post(report);
  }
  ASSERT_EQ(server->statuses().size(), 2U);
  ASSERT_EQ(server->check_runs().size(), 2U);
  for (int i = 0; i < 2; ++i) {
    // Both block a required check: GitHub counts a neutral (or skipped) check run as passing.
    EXPECT_EQ(server->statuses()[i]["state"], "error");
    EXPECT_EQ(server->check_runs()[i]["conclusion"], "failure");
    EXPECT_EQ(server->statuses()[i]["description"], "driftgate: NO BASELINE - nothing gated");
    EXPECT_EQ(server->check_runs()[i]["output"]["title"], "driftgate: NO BASELINE - nothing gated");
  }
}

TEST_F(GithubPostTest, WritesTheJobSummaryWhenAsked) {
  test::TempDir temp;
  std::string path = temp / "step_summary.md";
  write_file_atomic(path, "earlier step\n");
  settings.step_summary_path = path;
  post(failing());
  std::string summary = read_file(path);
  EXPECT_EQ(summary.rfind("earlier step\n### driftgate: FAIL", 0), 0U) << summary;
}

TEST_F(GithubPostTest, JobSummaryCountsWhatTheStepAlreadyWrote) {
  test::TempDir temp;
  std::string path = temp / "step_summary.md";
  std::string earlier(1024 * 1024 - 20000, 'e');
  write_file_atomic(path, earlier);
  settings.step_summary_path = path;
  std::vector<nlohmann::json> checks;
  for (int i = 0; i < 3000; ++i) {
    checks.push_back(
        report_check("exp/input" + std::to_string(i) + "/cpu_fp32~frozen/out", "new", false, std::string(100, 'm')));
  }
  post(make_report("pass", checks));
  std::string summary = read_file(path);
  EXPECT_LE(summary.size(), 1024U * 1024U) << "GitHub drops a step summary over 1 MiB";
  EXPECT_EQ(summary.rfind(earlier + "### driftgate: PASS", 0), 0U);
  EXPECT_NE(summary.find("**Truncated:**"), std::string::npos);

  write_file_atomic(path, std::string(1024 * 1024 - 100, 'f'));
  post(make_report("pass", checks));
  EXPECT_EQ(read_file(path).size(), 1024U * 1024U - 100) << "no room: left as it was";
  EXPECT_NE(log.str().find("no job summary: $GITHUB_STEP_SUMMARY already holds 1048476 of its 1048576 bytes"),
            std::string::npos)
      << log.str();
}

}  // namespace
}  // namespace driftgate

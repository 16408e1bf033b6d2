// `post_gitlab` end to end over real HTTP against the fake GitLab on 127.0.0.1.
#include "ci/gitlab_post.h"

#include <gtest/gtest.h>

#include <sstream>

#include "ci/httplib_transport.h"
#include "core/error.h"
#include "tests/ci/fake_gitlab_server.h"
#include "tests/ci/post_test_support.h"

namespace driftgate {
namespace {

using test::FakeGitlabServer;
using test::make_report;
using test::report_check;

const std::string k_token = "glpat-fakeTokenForTests01";
const std::string k_sha = std::string(40, 'c');

class GitlabPostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redactor.add_secret(k_token);
    target = resolve_gitlab_target({{"CI_API_V4_URL", server.url()},
                                    {"CI_PROJECT_ID", "314"},
                                    {"CI_MERGE_REQUEST_IID", "9"},
                                    {"CI_COMMIT_SHA", k_sha},
                                    {"DRIFTGATE_GITLAB_TOKEN", k_token}},
                                   GitlabFlags{});
    settings.key = "linux-cpu";
  }
  void TearDown() override {
    EXPECT_TRUE(server.violations().empty()) << ::testing::PrintToString(server.violations());
  }

  GitlabPostResult post(const nlohmann::json& report) {
    HttplibTransport transport;
    ApiConfig config{"GitLab", gitlab_headers(k_token), gitlab_advice, RetryPolicy{}, &log, true};
    ApiClient client(transport, clock, redactor, config);
    GitlabApi api(client, target.api_url, target.project_id);
    return post_gitlab(report, target, settings, api, clock, config.retry, log);
  }

  FakeGitlabServer server{"314", k_token};
  GitlabTarget target;
  PostSettings settings;
  test::FakeClock clock;
  Redactor redactor;
  std::ostringstream log;
};

TEST_F(GitlabPostTest, NoteIsCreatedThenUpdatedAndStatusIsPosted) {
  auto report = make_report("fail", {report_check("m/i/a~b/o", "regressed", true)});
  EXPECT_TRUE(post(report).note_created);
  EXPECT_FALSE(post(make_report("pass", {})).note_created);
  auto notes = server.notes(9);
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_EQ(notes[0].body.rfind("<!-- driftgate-sticky project=314 key=linux-cpu -->\n### driftgate: PASS", 0), 0U)
      << notes[0].body;
  auto statuses = server.statuses();
  ASSERT_EQ(statuses.size(), 2U);
  EXPECT_EQ(statuses[0]["state"], "failed");
  EXPECT_EQ(statuses[0]["name"], "driftgate/linux-cpu");
  EXPECT_EQ(statuses[0]["sha"], k_sha);
  EXPECT_EQ(statuses[1]["state"], "success");
}

TEST_F(GitlabPostTest, NoBaselineIsNeverGreen) {
  auto report = make_report("no_baseline", {});
  report["baseline"] = nullptr;
  post(report);
  auto statuses = server.statuses();
  ASSERT_EQ(statuses.size(), 1U);
  EXPECT_EQ(statuses[0]["state"], "failed") << "GitLab statuses have no neutral state";
  EXPECT_EQ(statuses[0]["description"], "driftgate: NO BASELINE - nothing gated");
}

TEST_F(GitlabPostTest, FollowsXNextPageAndLeavesOthersNotesAlone) {
  std::string marker = "<!-- driftgate-sticky project=314 key=linux-cpu -->";
  server.add_note(9, 5, marker + "\nnot yours");
  for (int i = 0; i < 130; ++i) {
    server.add_note(9, 5, "note " + std::to_string(i));
  }
  server.add_note(9, server.own_id(), marker + "\nold");
  EXPECT_FALSE(post(make_report("pass", {})).note_created);
  auto notes = server.notes(9);
  ASSERT_EQ(notes.size(), 132U);
  EXPECT_EQ(notes[0].body, marker + "\nnot yours");
  EXPECT_NE(notes[131].body.find("driftgate: PASS"), std::string::npos);
  EXPECT_EQ(server.requests("GET /api/v4/projects/314/merge_requests/9/notes"), 2);
}

TEST_F(GitlabPostTest, RateLimitIsWaitedOut) {
  server.fail_next("GET /api/v4/projects/314/merge_requests/9/notes", 429, {{"Retry-After", "2"}});
  post(make_report("pass", {}));
  EXPECT_EQ(clock.sleeps.at(0), std::chrono::milliseconds(2000));
  EXPECT_EQ(server.notes(9).size(), 1U);
}

TEST_F(GitlabPostTest, ServerErrorOrLostReplyOnCreateLeavesExactlyOneNote) {
  server.fail_next("POST /api/v4/projects/314/merge_requests/9/notes", 500, {}, 1, "500 Internal Server Error");
  EXPECT_TRUE(post(make_report("fail", {report_check("m/i/a~b/o", "regressed", true)})).note_created);
  EXPECT_EQ(server.notes(9).size(), 1U) << log.str();
  EXPECT_EQ(server.requests("POST /api/v4/projects/314/merge_requests/9/notes"), 2) << "the 500, then the create";
  EXPECT_EQ(server.requests("GET /api/v4/projects/314/merge_requests/9/notes"), 2) << "re-listed before creating again";

  target.mr = 10;
  server.drop_after_apply_next("POST /api/v4/projects/314/merge_requests/10/notes");
  server.drop_after_apply_next("GET /api/v4/projects/314/merge_requests/10/notes");
  EXPECT_FALSE(post(make_report("pass", {})).note_created) << "the lost create was found and updated; " << log.str();
  ASSERT_EQ(server.notes(10).size(), 1U);
  EXPECT_NE(server.notes(10)[0].body.find("driftgate: PASS"), std::string::npos);
  EXPECT_EQ(server.requests("POST /api/v4/projects/314/merge_requests/10/notes"), 1);
}

TEST_F(GitlabPostTest, ForbiddenOrRejectedTokenSaysWhatTheTokenNeeds) {
  server.fail_next("POST /api/v4/projects/314/statuses", 403, {}, 1, "403 Forbidden");
  try {
    post(make_report("pass", {}));
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 403);
    EXPECT_NE(std::string(e.what()).find("it needs `api` scope and at least the Reporter role (Developer for commit "
                                         "statuses)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(server.requests("POST /api/v4/projects/314/statuses"), 1) << "a 403 is not retried";

  redactor.add_secret("glpat-notTheRightOne1");
  HttplibTransport transport;
  ApiConfig config{"GitLab", gitlab_headers("glpat-notTheRightOne1"), gitlab_advice, RetryPolicy{}, &log, true};
  ApiClient client(transport, clock, redactor, config);
  GitlabApi api(client, target.api_url, target.project_id);
  try {
    post_gitlab(make_report("pass", {}), target, settings, api, clock, config.retry, log);
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_NE(std::string(e.what()).find("project access token with `api` scope"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("glpat-notTheRightOne1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(log.str().find("glpat-"), std::string::npos) << log.str();
}

TEST_F(GitlabPostTest, TheFakeRejectsWhatGitlabWouldReject) {
  HttplibTransport transport;
  std::string base = server.url() + "/projects/314";
  HttpHeaders auth = gitlab_headers(k_token);
  transport.send(HttpRequest{"POST", base + "/merge_requests/9/notes", auth, R"({"note":"x"})"});
  transport.send(HttpRequest{"POST", base + "/statuses/" + k_sha, auth, R"({"state":"failure","name":"d"})"});
  transport.send(HttpRequest{"GET", base + "/merge_requests/9/notes?per_page=500", auth, ""});
  transport.send(HttpRequest{"PATCH", base + "/merge_requests/9/notes/1", auth, R"({"body":"x"})"});
  std::string found = ::testing::PrintToString(server.take_violations());
  for (const char* expected :
       {"no string 'body'", "unknown field 'note'", "state 'failure' is not a GitLab status", "per_page is at most 100",
        "PATCH /api/v4/projects/314/merge_requests/9/notes/1: not an "
        "endpoint driftgate should call"}) {
    EXPECT_NE(found.find(expected), std::string::npos) << expected << " not in " << found;
  }
}

// GitLab's predefined variables (gitlab-org/gitlab#330964): in a merge request pipeline
// CI_COMMIT_SHA is the MR head and CI_MERGE_REQUEST_SOURCE_BRANCH_SHA is empty; in a
// merged-results pipeline CI_COMMIT_SHA is the temporary merge commit and
// CI_MERGE_REQUEST_SOURCE_BRANCH_SHA the MR head.
TEST_F(GitlabPostTest, MergedResultsPipelinePostsOnTheMergeRequestHead) {
  std::map<std::string, std::string> env = {{"CI_API_V4_URL", "https://gitlab.example.com/api/v4"},
                                            {"CI_PROJECT_ID", "1"},
                                            {"CI_MERGE_REQUEST_IID", "3"},
                                            {"DRIFTGATE_GITLAB_TOKEN", "glpat-x"},
                                            {"CI_COMMIT_SHA", std::string(40, 'c')},
                                            {"CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", ""}};
  EXPECT_EQ(resolve_gitlab_target(env, GitlabFlags{}).sha, std::string(40, 'c')) << "merge request pipeline";
  env["CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"] = std::string(40, 'a');
  EXPECT_EQ(resolve_gitlab_target(env, GitlabFlags{}).sha, std::string(40, 'a')) << "merged-results pipeline";
  GitlabFlags flags;
  flags.sha = std::string(40, 'b');
  EXPECT_EQ(resolve_gitlab_target(env, flags).sha, std::string(40, 'b')) << "--sha wins";
}

TEST_F(GitlabPostTest, ContextComesFromVariablesAndSaysWhatIsMissing) {
  try {
    resolve_gitlab_target({{"CI_API_V4_URL", "https://gitlab.example.com/api/v4"}, {"CI_PROJECT_ID", "1"}},
                          GitlabFlags{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no merge request: pass --mr IID"), std::string::npos) << e.what();
  }
  GitlabFlags flags;
  flags.mr = 3;
  flags.sha = k_sha;
  try {
    resolve_gitlab_target({{"CI_API_V4_URL", "https://gitlab.example.com/api/v4"}, {"CI_PROJECT_ID", "1"}}, flags);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--token-env DRIFTGATE_GITLAB_TOKEN: the variable is unset"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace driftgate

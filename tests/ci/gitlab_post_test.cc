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
    HttplibTransport transport;
    ApiConfig config{"GitLab", gitlab_headers(k_token), gitlab_advice, RetryPolicy{}, &log, true};
    ApiClient client(transport, clock, redactor, config);
    GitlabApi api(client, target.api_url, target.project_id);
    post_gitlab(make_report("pass", {}), target, settings, api, clock, config.retry, log, StatusRefused::k_fail);
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 403);
    EXPECT_NE(std::string(e.what()).find("it needs `api` scope, at least the Reporter role for notes and the "
                                         "Developer role for commit statuses"),
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
    EXPECT_NE(std::string(e.what()).find("personal access token) with `api` scope in a masked CI/CD variable"),
              std::string::npos)
        << e.what();
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

// A commit status needs the Developer role: GitLab's POST /projects/:id/statuses/:sha
// authorizes :create_commit_status (lib/api/commit_statuses.rb) and answers 403 to a
// Reporter (spec/requests/api/commit_statuses_spec.rb, "reporter user ... does not create
// commit status"). The fake refuses it the same way; the note, which a Reporter may
// write, is posted, and the refused status is a warning (exit 0) unless asked otherwise.
TEST(GitlabPostRoles, ReporterTokenPostsTheNoteAndWarnsAboutTheStatus) {
  FakeGitlabServer reporter_server{"314", k_token, "reporter"};
  GitlabTarget target = resolve_gitlab_target({{"CI_API_V4_URL", reporter_server.url()},
                                               {"CI_PROJECT_ID", "314"},
                                               {"CI_MERGE_REQUEST_IID", "9"},
                                               {"CI_COMMIT_SHA", k_sha},
                                               {"DRIFTGATE_GITLAB_TOKEN", k_token}},
                                              GitlabFlags{});
  Redactor redactor;
  redactor.add_secret(k_token);
  test::FakeClock clock;
  std::ostringstream log;
  HttplibTransport transport;
  ApiConfig config{"GitLab", gitlab_headers(k_token), gitlab_advice, RetryPolicy{}, &log, false};
  ApiClient client(transport, clock, redactor, config);
  GitlabApi api(client, target.api_url, target.project_id);
  PostSettings settings;
  GitlabPostResult result = post_gitlab(make_report("fail", {report_check("m/i/a~b/o", "regressed", true)}), target,
                                        settings, api, clock, config.retry, log);
  EXPECT_TRUE(result.note_created);
  EXPECT_FALSE(result.status_posted);
  EXPECT_EQ(reporter_server.notes(9).size(), 1U);
  EXPECT_TRUE(reporter_server.statuses().empty()) << "the fake refuses a Reporter's status as GitLab does";
  EXPECT_NE(log.str().find("driftgate post: warning: the commit status was refused"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("give the token the Developer role"), std::string::npos) << log.str();

  EXPECT_THROW(
      post_gitlab(make_report("pass", {}), target, settings, api, clock, config.retry, log, StatusRefused::k_fail),
      ApiError)
      << "--on-status-refused fail";
  EXPECT_TRUE(reporter_server.violations().empty()) << ::testing::PrintToString(reporter_server.violations());
}

// Where a status lands: GitLab appends it to the newest pipeline of the SHA it is given,
// filtered by pipeline_id when one is sent, else it creates a new external pipeline
// (lib/api/commit_statuses.rb: all_matching_pipelines, `source: :external`). In a
// merged-results pipeline CI_COMMIT_SHA is the temporary merge commit and
// CI_MERGE_REQUEST_SOURCE_BRANCH_SHA the MR head (predefined variables,
// gitlab-org/gitlab#330964): the status goes on CI_COMMIT_SHA with CI_PIPELINE_ID, so it
// joins the pipeline the MR shows.
TEST_F(GitlabPostTest, StatusLandsInThePipelineThatRan) {
  const std::string head(40, 'a');
  const std::string merge_commit(40, 'e');
  server.add_pipeline(100, head);          // an earlier branch pipeline of the MR head
  server.add_pipeline(200, merge_commit);  // this merged-results pipeline
  std::map<std::string, std::string> env = {
      {"CI_API_V4_URL", server.url()}, {"CI_PROJECT_ID", "314"},
      {"CI_MERGE_REQUEST_IID", "9"},   {"DRIFTGATE_GITLAB_TOKEN", k_token},
      {"CI_COMMIT_SHA", merge_commit}, {"CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", head},
      {"CI_PIPELINE_ID", "200"}};
  target = resolve_gitlab_target(env, GitlabFlags{});
  EXPECT_EQ(target.sha, merge_commit);
  EXPECT_EQ(target.pipeline_id, "200");
  post(make_report("pass", {}));
  ASSERT_EQ(server.statuses().size(), 1U);
  EXPECT_EQ(server.statuses()[0]["landed_in"], 200) << server.statuses()[0].dump();
  EXPECT_EQ(server.statuses()[0]["new_pipeline"], false);
  EXPECT_EQ(server.statuses()[0]["pipeline_id"], 200);

  // What the MR head without pipeline_id did: the status joined pipeline 100, not this one.
  HttplibTransport transport;
  HttpHeaders headers = gitlab_headers(k_token);
  headers.emplace_back("Content-Type", "application/json");
  transport.send(HttpRequest{"POST", server.url() + "/projects/314/statuses/" + head, headers,
                             R"({"state":"success","name":"driftgate"})"});
  EXPECT_EQ(server.statuses()[1]["landed_in"], 100) << "the fake models GitLab's choice";

  // An ordinary MR pipeline (CI_COMMIT_SHA is the head): a newer branch pipeline of the
  // same commit does not take the status away from this one.
  server.add_pipeline(300, head);
  server.add_pipeline(400, head);
  env["CI_COMMIT_SHA"] = head;
  env["CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"] = "";
  env["CI_PIPELINE_ID"] = "300";
  target = resolve_gitlab_target(env, GitlabFlags{});
  post(make_report("pass", {}));
  EXPECT_EQ(server.statuses().back()["landed_in"], 300);

  // --sha names another commit: no pipeline_id (it would match no pipeline of that SHA).
  GitlabFlags flags;
  flags.sha = std::string(40, 'b');
  EXPECT_EQ(resolve_gitlab_target(env, flags).pipeline_id, "");
  EXPECT_EQ(resolve_gitlab_target(env, flags).sha, std::string(40, 'b'));
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

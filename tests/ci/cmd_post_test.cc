// `driftgate post` through its command function: option handling and --dry-run.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "app/command.h"
#include "ci/comment_body.h"
#include "core/error.h"
#include "core/file_util.h"
#include "tests/ci/fake_github_server.h"
#include "tests/ci/post_test_support.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

const std::string k_token = "ghs_dryRunSecret98765";

struct Invocation {
  int code = -1;
  std::string out;
  std::string err;
};

class CmdPostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = temp.path();
    report = (dir / "report.json").string();
    write_file_atomic(report,
                      test::make_report("fail", {test::report_check("m/@team/a~b/o", "regressed", true)}).dump());
    event = (dir / "event.json").string();
    write_file_atomic(event, R"({"pull_request":{"number":12,"head":{"sha":")" + std::string(40, 'd') +
                                 R"(","repo":{"full_name":"octo/app"}},"base":{"repo":{"full_name":"octo/app"}}}})");
  }

  Invocation post(std::vector<std::string> args, std::map<std::string, std::string> env) {
    std::ostringstream out;
    std::ostringstream err;
    CommandContext context{std::move(args), std::move(env), out, err};
    Invocation result;
    result.code = cmd_post(context);
    result.out = out.str();
    result.err = err.str();
    return result;
  }

  std::map<std::string, std::string> github_env() {
    return {{"GITHUB_EVENT_PATH", event},
            {"GITHUB_EVENT_NAME", "pull_request"},
            {"GITHUB_REPOSITORY", "octo/app"},
            {"GITHUB_TOKEN", k_token}};
  }

  test::TempDir temp;
  std::filesystem::path dir;
  std::string report;
  std::string event;
};

TEST_F(CmdPostTest, DryRunPrintsTheRequestsWithTheTokenRedacted) {
  Invocation result = post({"github", report, "--dry-run", "--key", "linux"}, github_env());
  EXPECT_EQ(result.code, 0);
  EXPECT_NE(result.out.find("GET https://api.github.com/user\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("GET https://api.github.com/repos/octo/app/issues/12/comments?per_page=100"),
            std::string::npos);
  EXPECT_NE(result.out.find("POST https://api.github.com/repos/octo/app/issues/12/comments"), std::string::npos);
  EXPECT_NE(result.out.find("POST https://api.github.com/repos/octo/app/statuses/" + std::string(40, 'd')),
            std::string::npos);
  EXPECT_NE(result.out.find("Authorization: Bearer ***"), std::string::npos);
  EXPECT_EQ(result.out.find(k_token), std::string::npos);
  EXPECT_EQ(result.err.find(k_token), std::string::npos);
  EXPECT_NE(result.out.find("driftgate-sticky project=octo/app key=linux"), std::string::npos);
}

TEST_F(CmdPostTest, DryRunShowsTheContentTypeOfEveryMutation) {
  Invocation result = post({"github", report, "--dry-run"}, github_env());
  EXPECT_EQ(result.code, 0);
  // Each POST block of the listing carries the header it is sent with.
  size_t posts = 0;
  for (size_t at = result.out.find("\nPOST "); at != std::string::npos; at = result.out.find("\nPOST ", at + 1)) {
    ++posts;
    size_t block_end = result.out.find("\n\n", at + 1);
    EXPECT_NE(result.out.substr(at, block_end - at).find("\n  Content-Type: application/json\n"), std::string::npos)
        << result.out.substr(at, block_end - at);
  }
  EXPECT_GE(posts, 3U) << "comment, status, check run: " << result.out;
  size_t get = result.out.find("GET https://api.github.com/user\n");
  ASSERT_NE(get, std::string::npos);
  EXPECT_EQ(result.out.substr(get, result.out.find("\n\n", get) - get).find("Content-Type"), std::string::npos);
}

TEST_F(CmdPostTest, DryRunOfAWorkflowRunShowsThePullRequestLookup) {
  std::string run_event = (dir / "run.json").string();
  write_file_atomic(run_event, nlohmann::json{{"workflow_run",
                                               {{"event", "pull_request"},
                                                {"conclusion", "success"},
                                                {"head_sha", std::string(40, 'd')},
                                                {"head_branch", "fix/deep"},
                                                {"head_repository", {{"full_name", "mallory/app"}}},
                                                {"pull_requests", nlohmann::json::array()}}}}
                                   .dump());
  auto env = github_env();
  env["GITHUB_EVENT_PATH"] = run_event;
  env["GITHUB_EVENT_NAME"] = "workflow_run";
  Invocation result = post({"github", report, "--dry-run"}, env);
  EXPECT_EQ(result.code, 0);
  EXPECT_NE(result.out.find("GET https://api.github.com/repos/octo/app/pulls?state=open&head=mallory%3Afix%2Fdeep"
                            "&per_page=100\n"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("GET https://api.github.com/repos/octo/app/commits/" + std::string(40, 'd') + "/pulls"),
            std::string::npos);
  EXPECT_NE(result.out.find("dry run: pass --pr N to see the requests that post on pull request N"), std::string::npos);
  EXPECT_EQ(result.out.find("POST "), std::string::npos) << "no pull request: nothing posted";

  result = post({"github", report, "--dry-run", "--pr", "31"}, env);
  EXPECT_EQ(result.code, 0);
  EXPECT_NE(result.out.find("GET https://api.github.com/repos/octo/app/pulls/31\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("POST https://api.github.com/repos/octo/app/issues/31/comments"), std::string::npos);
}

TEST_F(CmdPostTest, DeeplyNestedOrHugeReportIsRefusedWithoutACrash) {
  // 600 KB nested 300,000 levels deep: a recursive reader overflows the stack.
  write_file_atomic(report, std::string(300000, '[') + std::string(300000, ']'));
  try {
    post({"github", report, "--dry-run"}, github_env());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), report +
                                         ": nested deeper than 32 levels; expected the report.json that driftgate "
                                         "diff --report FILE writes");
  }
  std::string huge = test::make_report("pass", {}).dump();
  huge.insert(1, "\"pad\":\"" + std::string(k_report_max_bytes, 'x') + "\",");
  write_file_atomic(report, huge);
  try {
    post({"github", report, "--dry-run"}, github_env());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("over the limit of 32 MiB for a report"), std::string::npos) << e.what();
  }
}

TEST_F(CmdPostTest, CommentAuthorSkipsGetUser) {
  Invocation result = post({"github", report, "--dry-run", "--comment-author", "my-app[bot]"}, github_env());
  EXPECT_EQ(result.code, 0);
  EXPECT_EQ(result.out.find("GET https://api.github.com/user\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("POST https://api.github.com/repos/octo/app/issues/12/comments"), std::string::npos);
}

TEST_F(CmdPostTest, GitlabDryRunUsesCiVariables) {
  Invocation result = post({"gitlab", report, "--dry-run"}, {{"CI_API_V4_URL", "https://gitlab.example.com/api/v4"},
                                                             {"CI_PROJECT_ID", "group/proj"},
                                                             {"CI_MERGE_REQUEST_IID", "4"},
                                                             {"CI_COMMIT_SHA", std::string(40, 'e')},
                                                             {"CI_PIPELINE_ID", "7001"},
                                                             {"DRIFTGATE_GITLAB_TOKEN", "glpat-secret-value"}});
  EXPECT_EQ(result.code, 0);
  EXPECT_NE(result.out.find("POST https://gitlab.example.com/api/v4/projects/group%2Fproj/merge_requests/4/notes"),
            std::string::npos)
      << result.out;
  EXPECT_NE(
      result.out.find("POST https://gitlab.example.com/api/v4/projects/group%2Fproj/statuses/" + std::string(40, 'e')),
      std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("\"pipeline_id\":7001"), std::string::npos) << "the status joins this pipeline";
  EXPECT_NE(result.out.find("PRIVATE-TOKEN: ***"), std::string::npos);
  EXPECT_EQ(result.out.find("glpat-secret-value"), std::string::npos);
}

TEST_F(CmdPostTest, PlatformOnlyFlagsAreRefusedOnTheOtherPlatform) {
  EXPECT_THROW(
      post({"gitlab", report, "--dry-run", "--gate-workflow", ".github/workflows/drift-gate.yml"}, github_env()),
      Error);
  EXPECT_THROW(post({"github", report, "--dry-run", "--on-status-refused", "fail"}, github_env()), Error);
  EXPECT_THROW(post({"github", report, "--dry-run", "--gate-workflow", "drift-gate.yml"}, github_env()), Error)
      << "not a path under .github/workflows/";
  EXPECT_THROW(post({"gitlab", report, "--dry-run", "--on-status-refused", "ignore"}, github_env()), Error);
}

TEST_F(CmdPostTest, BadInputIsAnError) {
  EXPECT_THROW(post({"bitbucket", report}, github_env()), Error);
  EXPECT_THROW(post({"github", (dir / "missing.json").string()}, github_env()), Error);
  EXPECT_THROW(post({"github", report, "--key", "a b"}, github_env()), Error);
  EXPECT_THROW(post({"github", report, "--api-url", "http://example.com"}, github_env()), Error);
  for (const char* author :
       {"", "a b", "-lead", "app[bot][bot]", "x[bot]\n", "far-too-long-login-name-of-forty-chars-x"}) {
    EXPECT_THROW(post({"github", report, "--dry-run", "--comment-author", author}, github_env()), Error) << author;
  }
  EXPECT_THROW(post({"gitlab", report, "--dry-run", "--comment-author", "octocat"}, github_env()), Error);
  EXPECT_THROW(post({"github", report, "--dry-run", "--trend-branch", "main"}, github_env()), Error);
}

TEST_F(CmdPostTest, TrendMarkdownIsFoldedIntoTheCommentOnTheFakeGithub) {
  if (test::shared_api_dir().empty()) {
    GTEST_SKIP() << "shared/api not found (the fake GitHub validates against it)";
  }
  test::FakeGithubServer server(test::shared_api_dir(), "octo/app", k_token);
  const std::string trend = (dir / "trend.md").string();
  const std::string markdown = "| commit | pass rate |\n|:--|--:|\n| `abc1234` | 97% |\n";
  write_file_atomic(trend, markdown);
  Invocation result = post({"github", report, "--api-url", server.url(), "--no-check-run", "--trend-markdown", trend,
                            "--trend-branch", "develop"},
                           github_env());
  EXPECT_EQ(result.code, 0) << result.err;
  auto comments = server.comments(12);
  ASSERT_EQ(comments.size(), 1U) << result.err;
  const std::string& body = comments[0].body;
  size_t summary_end = body.find("Full report:");
  size_t trend_at = body.find("<details><summary>Trend on develop</summary>\n\n" + markdown);
  ASSERT_NE(summary_end, std::string::npos) << body;
  ASSERT_NE(trend_at, std::string::npos) << body;
  EXPECT_LT(body.find("`m/@team/a~b/o`"), summary_end);
  EXPECT_LT(summary_end, trend_at);
  EXPECT_TRUE(server.violations().empty()) << ::testing::PrintToString(server.violations());
}

TEST_F(CmdPostTest, MissingTrendMarkdownPostsNothing) {
  if (test::shared_api_dir().empty()) {
    GTEST_SKIP() << "shared/api not found (the fake GitHub validates against it)";
  }
  test::FakeGithubServer server(test::shared_api_dir(), "octo/app", k_token);
  const std::string missing = (dir / "no-trend.md").string();
  try {
    post({"github", report, "--api-url", server.url(), "--trend-markdown", missing}, github_env());
    ADD_FAILURE() << "a missing --trend-markdown file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--trend-markdown " + missing + ": cannot open trend markdown file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(server.requests(""), 0) << "nothing is sent";
  const std::string empty = (dir / "empty.md").string();
  write_file_atomic(empty, "\n");
  EXPECT_THROW(post({"github", report, "--dry-run", "--trend-markdown", empty}, github_env()), Error);
  EXPECT_THROW(post({"github", report, "--dry-run", "--trend-markdown", dir.string()}, github_env()), Error);
  const std::string binary = (dir / "binary.md").string();
  write_file_atomic(binary, "| a |\n\xff\xfe\n");
  EXPECT_THROW(post({"github", report, "--api-url", server.url(), "--trend-markdown", binary}, github_env()), Error);
  EXPECT_EQ(server.requests(""), 0) << "nothing is sent";
}

TEST_F(CmdPostTest, HelpDescribesBothSystems) {
  Invocation result = post({"--help"}, {});
  EXPECT_EQ(result.code, 0);
  EXPECT_NE(result.out.find("driftgate post github|gitlab REPORT.json"), std::string::npos);
  EXPECT_NE(result.out.find("--dry-run"), std::string::npos);
  EXPECT_NE(result.out.find("--trend-markdown"), std::string::npos);
  EXPECT_NE(result.out.find("GET pulls?head=OWNER:BRANCH for a fork"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("no_baseline is never green"), std::string::npos);
}

}  // namespace
}  // namespace driftgate

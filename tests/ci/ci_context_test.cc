#include "ci/ci_context.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

std::string write_temp(const std::string& name, const std::string& content) {
  static test::TempDir temp;  // one per process, removed at exit
  std::string path = temp / name;
  std::ofstream(path) << content;
  return path;
}

TEST(CiContext, OutsideCiThereIsNoBase) {
  CiContext context = read_ci_context({{"HOME", "/root"}});
  EXPECT_EQ(context.system, "");
  EXPECT_FALSE(context.base_sha);
}

TEST(CiContext, GithubPullRequestUsesBaseAndHeadShaNotTheMergeCommit) {
  std::string path = write_temp("dg_event_pr.json", R"({"pull_request":{"base":{"sha":"aaa"},"head":{"sha":"bbb"}}})");
  CiContext context =
      read_ci_context({{"GITHUB_ACTIONS", "true"}, {"GITHUB_EVENT_PATH", path}, {"GITHUB_SHA", "merge"}});
  EXPECT_EQ(context.system, "github");
  EXPECT_EQ(context.base_sha.value_or(""), "aaa");
  EXPECT_EQ(context.head_sha.value_or(""), "bbb");
}

TEST(CiContext, GithubRealPayloadFromSharedApi) {
  std::string path = DRIFTGATE_SHARED_EVENTS "/pull_request.synchronize.json";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "shared/api payloads not present beside the checkout: " << path;
  }
  CiContext context = read_ci_context({{"GITHUB_ACTIONS", "true"}, {"GITHUB_EVENT_PATH", path}});
  ASSERT_TRUE(context.base_sha);
  EXPECT_EQ(context.base_sha->size(), 40U);
  ASSERT_TRUE(context.head_sha);
  EXPECT_NE(*context.base_sha, *context.head_sha);
}

TEST(CiContext, GithubPushEventFallsBackToGithubSha) {
  std::string path = write_temp("dg_event_push.json", R"({"ref":"refs/heads/main"})");
  CiContext context = read_ci_context({{"GITHUB_ACTIONS", "true"}, {"GITHUB_EVENT_PATH", path}, {"GITHUB_SHA", "ccc"}});
  EXPECT_FALSE(context.base_sha);
  EXPECT_EQ(context.head_sha.value_or(""), "ccc");
}

TEST(CiContext, MalformedGithubPayloadIsAnErrorNamingTheFile) {
  std::string path = write_temp("dg_event_bad.json", "{not json");
  try {
    read_ci_context({{"GITHUB_ACTIONS", "true"}, {"GITHUB_EVENT_PATH", path}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + " (GITHUB_EVENT_PATH): not a valid event payload"), std::string::npos)
        << e.what();
  }
}

// diff reads the payload as post does (ci/event_payload.h): a top-level array, which post
// refused while diff gated as if there were no event, is an error for both.
TEST(CiContext, PayloadsPostRefusesAreRefusedHereToo) {
  std::string array = write_temp("dg_event_array.json", R"([{"pull_request":{"base":{"sha":"aaa"}}}])");
  try {
    read_ci_context({{"GITHUB_ACTIONS", "true"}, {"GITHUB_EVENT_PATH", array}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), array +
                                         " (GITHUB_EVENT_PATH): not a valid event payload (the top level is an array; "
                                         "GitHub writes an object); pass --base REV to choose the baseline by hand");
  }
  std::string no_pull = write_temp("dg_event_no_pull.json", R"({"action":"opened","number":3})");
  EXPECT_THROW(read_ci_context(
                   {{"GITHUB_ACTIONS", "true"}, {"GITHUB_EVENT_PATH", no_pull}, {"GITHUB_EVENT_NAME", "pull_request"}}),
               Error);
  EXPECT_FALSE(read_ci_context({{"GITHUB_ACTIONS", "true"}, {"GITHUB_EVENT_PATH", no_pull}}).base_sha)
      << "another event's payload (no GITHUB_EVENT_NAME): no base";
}

TEST(CiContext, GitlabMergeRequestUsesDiffBaseSha) {
  CiContext context =
      read_ci_context({{"GITLAB_CI", "true"}, {"CI_MERGE_REQUEST_DIFF_BASE_SHA", "ddd"}, {"CI_COMMIT_SHA", "eee"}});
  EXPECT_EQ(context.system, "gitlab");
  EXPECT_EQ(context.base_sha.value_or(""), "ddd");
  EXPECT_EQ(context.head_sha.value_or(""), "eee");
}

}  // namespace
}  // namespace driftgate

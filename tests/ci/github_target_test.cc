// Resolving where to post from real webhook payloads (shared/api/github/events).
#include "ci/github_target.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_util.h"
#include "tests/ci/post_test_support.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

class GithubTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::shared_api_dir().empty()) {
      GTEST_SKIP() << "shared/api not found at " << DRIFTGATE_SHARED_API;
    }
  }
  test::TempDir temp;
  nlohmann::json event(const std::string& name) {
    return nlohmann::json::parse(read_file(test::shared_api_dir() + "/github/events/" + name));
  }
  std::map<std::string, std::string> env_for(const nlohmann::json& payload, const std::string& event_name) {
    std::string path = temp / ("event_" + event_name + ".json");
    write_file_atomic(path, payload.dump());
    return {{"GITHUB_EVENT_PATH", path},
            {"GITHUB_EVENT_NAME", event_name},
            {"GITHUB_REPOSITORY", "Codertocat/Hello-World"},
            {"GITHUB_TOKEN", "ghs_token1234"},
            {"GITHUB_SERVER_URL", "https://github.com"},
            {"GITHUB_RUN_ID", "77"},
            {"GITHUB_SHA", std::string(40, '0')}};
  }
};

TEST_F(GithubTargetTest, PullRequestUsesTheHeadShaNotTheMergeCommit) {
  GithubTarget target =
      resolve_github_target(env_for(event("pull_request.opened.json"), "pull_request"), GithubFlags{});
  EXPECT_EQ(target.pr, 2);
  EXPECT_EQ(target.head_sha, "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
  EXPECT_EQ(target.api_url, "https://api.github.com");
  EXPECT_FALSE(target.verify_pull);
  EXPECT_FALSE(target.run_conclusion) << "the report is this job's own";
  EXPECT_EQ(target.run_url, "https://github.com/Codertocat/Hello-World/actions/runs/77");
}

TEST_F(GithubTargetTest, ForkPullRequestEventIsRefused) {
  nlohmann::json payload = event("pull_request.synchronize.json");
  payload["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World";
  try {
    resolve_github_target(env_for(payload, "pull_request_target"), GithubFlags{});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("comes from the fork mallory/Hello-World; its pull_request_target workflow "
                                         "must not post with a write token"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(GithubTargetTest, PullRequestFromADeletedForkIsRefused) {
  nlohmann::json payload = event("pull_request.synchronize.json");
  payload["pull_request"]["head"]["repo"] = nullptr;  // what GitHub sends once the fork is deleted
  try {
    resolve_github_target(env_for(payload, "pull_request"), GithubFlags{});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("comes from the fork (deleted)"), std::string::npos) << e.what();
  }
}

TEST_F(GithubTargetTest, WorkflowRunOfAForkPullIsVerifiedThroughTheApi) {
  nlohmann::json payload = event("workflow_run.completed.json");
  payload["workflow_run"]["event"] = "pull_request";
  GithubTarget target = resolve_github_target(env_for(payload, "workflow_run"), GithubFlags{});
  EXPECT_TRUE(target.verify_pull);
  EXPECT_EQ(target.pr, 0) << "pull_requests is empty for forks";
  EXPECT_TRUE(target.listed_prs.empty());
  EXPECT_EQ(target.head_sha, payload["workflow_run"]["head_sha"]);
  EXPECT_EQ(target.head_repo, "octo-org/octo-repo");
  EXPECT_EQ(target.head_branch, "main");
  EXPECT_EQ(target.run_conclusion, std::optional<std::string>("")) << "the stored run is queued: conclusion null";
  payload["workflow_run"]["head_repository"]["full_name"] = "mallory/octo-repo";
  payload["workflow_run"]["head_branch"] = "fix";
  payload["workflow_run"]["conclusion"] = "failure";
  target = resolve_github_target(env_for(payload, "workflow_run"), GithubFlags{});
  EXPECT_EQ(target.head_repo, "mallory/octo-repo");
  EXPECT_EQ(target.head_branch, "fix");
  EXPECT_EQ(target.run_conclusion, std::optional<std::string>("failure"));
}

TEST_F(GithubTargetTest, WorkflowRunKeepsEveryListedPullRequest) {
  nlohmann::json payload = event("workflow_run.completed.json");
  payload["workflow_run"]["event"] = "pull_request";
  payload["workflow_run"]["pull_requests"] =
      nlohmann::json::array({nlohmann::json{{"number", 4}}, nlohmann::json{{"number", 9}}});
  GithubTarget target = resolve_github_target(env_for(payload, "workflow_run"), GithubFlags{});
  EXPECT_EQ(target.listed_prs, (std::vector<int>{4, 9}));
  EXPECT_EQ(target.pr, 0) << "each is verified, none is taken on trust";
  // A number GitHub never writes ("x", or one past int's range that would truncate to another PR)
  // means the payload is not GitHub's: refused, naming the entry, rather than skipped.
  for (const nlohmann::json& bad : {nlohmann::json("x"), nlohmann::json(4294967298LL)}) {
    payload["workflow_run"]["pull_requests"][1]["number"] = bad;
    try {
      resolve_github_target(env_for(payload, "workflow_run"), GithubFlags{});
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("workflow_run.pull_requests[1].number"), std::string::npos) << e.what();
    }
  }
}

TEST_F(GithubTargetTest, WorkflowRunOfANonPullRequestRunHasNothingToPostTo) {
  // The stored payload is a workflow_dispatch run.
  EXPECT_THROW(resolve_github_target(env_for(event("workflow_run.completed.json"), "workflow_run"), GithubFlags{}),
               Error);
}

// workflow_run follows a workflow by its name (`workflows: [drift gate]`, GitHub docs,
// "Events that trigger workflows: workflow_run"), and a pull request's own workflow files
// run on pull_request: one that adds a file named "drift gate" would start the poster
// too. --gate-workflow names the file the run must come from; the payload names it in
// workflow_run.path (GitHub's REST description: "The full path of the workflow", example
// "octocat/octo-repo/.github/workflows/ci.yml@main"; webhooks write the bare path), or,
// in older payloads such as @octokit/webhooks-examples 7.6.1, in workflow.path.
TEST_F(GithubTargetTest, WorkflowRunMustComeFromTheGateWorkflowFile) {
  nlohmann::json payload = event("workflow_run.completed.json");
  payload["workflow_run"]["event"] = "pull_request";
  GithubFlags flags;
  flags.gate_workflow = ".github/workflows/drift-gate.yml";
  for (const char* path :
       {".github/workflows/drift-gate.yml", "Codertocat/Hello-World/.github/workflows/drift-gate.yml@main"}) {
    payload["workflow_run"]["path"] = path;
    EXPECT_EQ(resolve_github_target(env_for(payload, "workflow_run"), flags).run_path, path);
  }
  for (const char* path : {".github/workflows/evil.yml", "mallory/Hello-World/.github/workflows/drift-gate.yml@main"}) {
    payload["workflow_run"]["path"] = path;
    try {
      resolve_github_target(env_for(payload, "workflow_run"), flags);
      FAIL() << path;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("the workflow_run is a run of ") + path +
                                           ", not of --gate-workflow .github/workflows/drift-gate.yml"),
                std::string::npos)
          << e.what();
    }
  }
  // The stored payload has no workflow_run.path: its workflow.path is .github/workflows/syntax.yml.
  payload["workflow_run"].erase("path");
  EXPECT_THROW(resolve_github_target(env_for(payload, "workflow_run"), flags), Error);
  flags.gate_workflow = ".github/workflows/syntax.yml";
  EXPECT_EQ(resolve_github_target(env_for(payload, "workflow_run"), flags).run_path, ".github/workflows/syntax.yml");
  payload.erase("workflow");
  try {
    resolve_github_target(env_for(payload, "workflow_run"), flags);
    FAIL() << "no workflow file named";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the workflow_run names no workflow file"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(resolve_github_target(env_for(payload, "workflow_run"), GithubFlags{})) << "not asked: not checked";
}

// Two payloads of the hostile-input corpus (tests/data/bad_inputs) that `post` and `diff`
// once read differently: both now go through event_payload.h.
TEST_F(GithubTargetTest, MissingOrMisshapenEventObjectsAreNamed) {
  nlohmann::json payload = event("pull_request.opened.json");
  payload.erase("pull_request");
  try {
    resolve_github_target(env_for(payload, "pull_request"), GithubFlags{});
    FAIL();
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("(GITHUB_EVENT_PATH): a pull_request event without a pull_request object"), std::string::npos)
        << what;
    EXPECT_EQ(what.find("--sha ''"), std::string::npos) << "no --sha was given: " << what;
  }
  try {
    resolve_github_target(env_for(nlohmann::json::array({event("pull_request.opened.json")}), "pull_request"),
                          GithubFlags{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a valid event payload (the top level is an array; GitHub writes an "
                                         "object)"),
              std::string::npos)
        << e.what();
  }
  nlohmann::json run = event("workflow_run.completed.json");
  run.erase("workflow_run");
  EXPECT_THROW(resolve_github_target(env_for(run, "workflow_run"), GithubFlags{}), Error);
}

TEST_F(GithubTargetTest, FlagsOverrideAndBadValuesSayWhatToPass) {
  GithubFlags flags;
  flags.repo = "octo/app";
  flags.pr = 5;
  flags.api_url = "https://ghe.example.com/api/v3/";
  GithubTarget target = resolve_github_target(env_for(event("pull_request.opened.json"), "pull_request"), flags);
  EXPECT_EQ(target.repo, "octo/app");
  EXPECT_EQ(target.pr, 5);
  EXPECT_EQ(target.api_url, "https://ghe.example.com/api/v3");
  flags.api_url = "http://ghe.example.com/api/v3";
  EXPECT_THROW(resolve_github_target(env_for(event("pull_request.opened.json"), "pull_request"), flags), Error);
  flags.api_url.reset();
  flags.token_env = "NOPE";
  try {
    resolve_github_target(env_for(event("pull_request.opened.json"), "pull_request"), flags);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--token-env NOPE: the variable is unset or empty"), std::string::npos);
  }
}

}  // namespace
}  // namespace driftgate

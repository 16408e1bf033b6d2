#include "ci/api_client.h"

#include <gtest/gtest.h>

#include <sstream>

#include "ci/github_api.h"
#include "tests/ci/post_test_support.h"

namespace driftgate {
namespace {

using std::chrono::milliseconds;
using test::FakeClock;
using test::RecordingTransport;

const std::string k_token = "ghs_SECRETTOKEN0123456789";

class ApiClientTest : public ::testing::Test {
 protected:
  ApiClientTest() {
    redactor.add_secret(k_token);
    config.service = "GitHub";
    config.headers = github_headers(k_token);
    config.advisor = github_advice;
    config.log = &log;
  }
  ApiClient client() { return ApiClient(transport, clock, redactor, config); }

  RecordingTransport transport;
  FakeClock clock;
  Redactor redactor;
  ApiConfig config;
  std::ostringstream log;
};

TEST_F(ApiClientTest, SendsGithubHeaders) {
  client().send("GET", "https://api.github.com/user");
  ASSERT_EQ(transport.requests.size(), 1U);
  HttpResponse as_headers{200, transport.requests[0].headers, "", ""};
  EXPECT_EQ(as_headers.header("accept").value_or(""), "application/vnd.github+json");
  EXPECT_EQ(as_headers.header("X-GitHub-Api-Version").value_or(""), "2022-11-28");
  EXPECT_EQ(as_headers.header("Authorization").value_or(""), "Bearer " + k_token);
  EXPECT_EQ(as_headers.header("User-Agent").value_or("").rfind("driftgate/", 0), 0U);
}

TEST_F(ApiClientTest, IdempotentCallIsRetriedAfterServerErrorsWithBackoff) {
  transport.script = {HttpResponse{500, {}, "{}", ""}, HttpResponse{0, {}, "", "Read"},
                      HttpResponse{200, {}, "{}", ""}};
  client().send("PATCH", "https://api.github.com/repos/o/r/issues/comments/1", "{}");
  EXPECT_EQ(transport.requests.size(), 3U);
  EXPECT_EQ(clock.sleeps, (std::vector<milliseconds>{milliseconds(1000), milliseconds(2000)}));
}

TEST_F(ApiClientTest, PostIsNotRetriedOnServerErrorAndSaysItMayHaveHappened) {
  transport.script = {HttpResponse{502, {}, "{}", ""}};
  try {
    client().send("POST", "https://api.github.com/repos/o/r/issues/1/comments", "{}");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.maybe_applied());
    EXPECT_EQ(e.status(), 502);
  }
  EXPECT_EQ(transport.requests.size(), 1U);
}

TEST_F(ApiClientTest, PostIsRetriedAfterRateLimit) {
  transport.script = {HttpResponse{429, {{"retry-after", "3"}}, "{}", ""}, HttpResponse{201, {}, "{}", ""}};
  client().send("POST", "https://api.github.com/repos/o/r/issues/1/comments", "{}");
  EXPECT_EQ(transport.requests.size(), 2U);
  EXPECT_EQ(clock.sleeps, (std::vector<milliseconds>{milliseconds(3000)}));
  EXPECT_NE(log.str().find("retry-after 3 s"), std::string::npos) << log.str();
}

TEST_F(ApiClientTest, MissingPermissionNamesThePermissionsEntry) {
  transport.script = {HttpResponse{403, {}, R"({"message":"Resource not accessible by integration"})", ""}};
  try {
    client().send("POST", "https://api.github.com/repos/o/r/statuses/abc", "{}");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()),
              "GitHub API: POST https://api.github.com/repos/o/r/statuses/abc -> 403 \"Resource not accessible by "
              "integration\": the workflow token lacks a permission; add `permissions: statuses: write` to the "
              "posting job (a fork PR's pull_request token is read-only: post from a workflow_run workflow)");
  }
  EXPECT_EQ(transport.requests.size(), 1U);
}

TEST_F(ApiClientTest, TokenNeverAppearsInErrorsOrLogs) {
  config.verbose = true;
  transport.script = {HttpResponse{500, {}, "{}", ""},
                      HttpResponse{401, {}, R"({"message":"Bad credentials for )" + k_token + R"("})", ""}};
  try {
    client().send("GET", "https://api.github.com/user?t=" + k_token);
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()).find(k_token), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("***"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("token was rejected"), std::string::npos) << e.what();
  }
  EXPECT_EQ(log.str().find(k_token), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("***"), std::string::npos) << log.str();
}

TEST_F(ApiClientTest, MutationsAreSpacedAboutASecondApart) {
  ApiClient api = client();
  api.send("PATCH", "https://api.github.com/a", "{}");
  api.send("GET", "https://api.github.com/b");
  api.send("PATCH", "https://api.github.com/c", "{}");
  EXPECT_EQ(clock.sleeps, (std::vector<milliseconds>{milliseconds(1000)}));
}

}  // namespace
}  // namespace driftgate

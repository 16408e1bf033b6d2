#include "ci/retry_policy.h"

#include <gtest/gtest.h>

namespace driftgate {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const auto k_now = std::chrono::system_clock::time_point(seconds(1'800'000'000));

HttpResponse response(int status, HttpHeaders headers = {}, std::string body = "{}") {
  return HttpResponse{status, std::move(headers), std::move(body), ""};
}

TEST(RetryPolicy, RetryAfterIsHonouredEvenForPost) {
  RetryDecision decision = decide_retry(response(429, {{"Retry-After", "7"}}), false, 0, k_now, RetryPolicy{});
  EXPECT_TRUE(decision.retry);
  EXPECT_EQ(decision.wait, milliseconds(7000));
}

TEST(RetryPolicy, ExhaustedQuotaWaitsUntilReset) {
  HttpHeaders headers = {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "1800000030"}};
  RetryDecision decision = decide_retry(response(403, headers), true, 0, k_now, RetryPolicy{});
  EXPECT_TRUE(decision.retry);
  EXPECT_EQ(decision.wait, milliseconds(31000));
}

TEST(RetryPolicy, SecondaryRateLimitWaitsAMinuteThenDoubles) {
  HttpResponse limited = response(403, {}, R"({"message":"You have exceeded a secondary rate limit."})");
  EXPECT_EQ(decide_retry(limited, true, 0, k_now, RetryPolicy{}).wait, milliseconds(60000));
  EXPECT_EQ(decide_retry(limited, true, 2, k_now, RetryPolicy{}).wait, milliseconds(240000));
}

TEST(RetryPolicy, ResetTooFarAwayGivesUp) {
  HttpHeaders headers = {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-reset", "1800009999"}};
  RetryDecision decision = decide_retry(response(403, headers), true, 0, k_now, RetryPolicy{});
  EXPECT_FALSE(decision.retry);
  EXPECT_NE(decision.why.find("try again later"), std::string::npos) << decision.why;
}

TEST(RetryPolicy, MissingPermissionIsNeverRetried) {
  HttpResponse forbidden =
      response(403, {{"x-ratelimit-remaining", "0"}}, R"({"message":"Resource not accessible by integration"})");
  EXPECT_TRUE(is_missing_permission(forbidden));
  EXPECT_FALSE(is_rate_limited(forbidden));
  EXPECT_FALSE(decide_retry(forbidden, true, 0, k_now, RetryPolicy{}).retry);
}

TEST(RetryPolicy, ServerErrorsBackOffExponentiallyOnlyWhenIdempotent) {
  EXPECT_EQ(decide_retry(response(502), true, 0, k_now, RetryPolicy{}).wait, milliseconds(1000));
  EXPECT_EQ(decide_retry(response(502), true, 3, k_now, RetryPolicy{}).wait, milliseconds(8000));
  RetryPolicy capped;
  capped.max_attempts = 20;
  EXPECT_EQ(decide_retry(response(500), true, 12, k_now, capped).wait, milliseconds(60000));
  EXPECT_FALSE(decide_retry(response(500), false, 0, k_now, RetryPolicy{}).retry);
  HttpResponse dropped{0, {}, "", "Read"};
  EXPECT_TRUE(decide_retry(dropped, true, 0, k_now, RetryPolicy{}).retry);
  EXPECT_FALSE(decide_retry(dropped, false, 0, k_now, RetryPolicy{}).retry);
}

TEST(RetryPolicy, BoundedByMaxAttemptsAndClientErrorsAreFinal) {
  EXPECT_FALSE(decide_retry(response(503), true, 4, k_now, RetryPolicy{}).retry);
  EXPECT_FALSE(decide_retry(response(404), true, 0, k_now, RetryPolicy{}).retry);
  EXPECT_FALSE(decide_retry(response(422), true, 0, k_now, RetryPolicy{}).retry);
}

TEST(RetryPolicy, GitlabRateLimitResetIsAnEpoch) {
  HttpHeaders headers = {{"RateLimit-Remaining", "0"}, {"RateLimit-Reset", "1800000010"}};
  EXPECT_EQ(decide_retry(response(429, headers), false, 0, k_now, RetryPolicy{}).wait, milliseconds(11000));
}

}  // namespace
}  // namespace driftgate

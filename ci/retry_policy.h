// When to retry an API call and how long to wait first: GitHub's documented rules,
// which GitLab's rate limiting also fits.
//
//   - 429, or 403 that is a rate limit: honour `retry-after` (seconds); else when
//     `x-ratelimit-remaining` is 0 wait until `x-ratelimit-reset` (GitLab:
//     `ratelimit-reset`), both epoch seconds; else (a secondary rate limit) wait at
//     least a minute, doubling per attempt. Safe for every method: the server did not
//     act on the request.
//   - no response (refused, dropped, timed out) or 500/502/503/504: exponential
//     back-off, but only for idempotent calls. A create that fails this way may have
//     happened, so its caller re-reads the state instead (see sticky_comment.h).
//   - a 403 "Resource not accessible by integration" is a missing permission, never
//     retried; nor are other 4xx.
// Every wait is bounded by `max_wait`, every call by `max_attempts`.
#pragma once

#include <chrono>
#include <string>

#include "ci/http_transport.h"

namespace driftgate {

struct RetryPolicy {
  int max_attempts = 5;                                // tries of one call, the first included
  std::chrono::seconds initial_backoff{1};             // first wait after a 5xx or a dropped connection
  std::chrono::seconds max_backoff{60};                // cap of the doubling
  std::chrono::seconds secondary_rate_limit_wait{60};  // a rate limit without a reset time
  std::chrono::seconds max_wait{900};                  // longer waits give up with an error instead
  std::chrono::milliseconds mutation_spacing{1000};    // GitHub: mutations one at a time, ~1 s apart
};

struct RetryDecision {
  bool retry = false;
  std::chrono::milliseconds wait{0};
  std::string why;  // "429 rate limited; retry-after 3 s", for the log and for errors
};

// True for a 403 whose body says the token lacks a permission (GitHub Apps / Actions).
bool is_missing_permission(const HttpResponse& response);

// True for 429, and for a 403 that carries rate-limit signals.
bool is_rate_limited(const HttpResponse& response);

// What to do after `response` to the `attempt`-th try (0-based) of a call.
RetryDecision decide_retry(const HttpResponse& response, bool idempotent, int attempt,
                           std::chrono::system_clock::time_point now, const RetryPolicy& policy);

}  // namespace driftgate

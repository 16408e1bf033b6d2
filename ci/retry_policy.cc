#include "ci/retry_policy.h"

#include <algorithm>
#include <cctype>

namespace driftgate {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string lower(std::string text) {
  for (char& c : text) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return text;
}

// A non-negative integer header value, or -1.
long long header_number(const HttpResponse& response, const std::string& name) {
  std::optional<std::string> value = response.header(name);
  if (!value || value->empty() || value->size() > 12 || value->find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::stoll(*value);
}

milliseconds doubled(seconds base, int attempt, seconds cap) {
  long long factor = 1LL << std::min(attempt, 20);
  return milliseconds(std::min<long long>(base.count() * factor, cap.count()) * 1000);
}

RetryDecision bounded(milliseconds wait, std::string why, const RetryPolicy& policy) {
  RetryDecision decision;
  decision.wait = std::max(wait, milliseconds(0));
  decision.why = std::move(why);
  decision.retry = decision.wait <= milliseconds(policy.max_wait);
  if (!decision.retry) {
    decision.why +=
        "; that is longer than the " + std::to_string(policy.max_wait.count()) + " s driftgate waits, try again later";
  }
  return decision;
}

RetryDecision rate_limit_decision(const HttpResponse& response, int attempt, std::chrono::system_clock::time_point now,
                                  const RetryPolicy& policy) {
  std::string status = std::to_string(response.status) + " rate limited";
  long long retry_after = header_number(response, "retry-after");
  if (retry_after >= 0) {
    return bounded(seconds(retry_after), status + "; retry-after " + std::to_string(retry_after) + " s", policy);
  }
  long long reset = header_number(response, "x-ratelimit-reset");
  if (reset < 0) {
    reset = header_number(response, "ratelimit-reset");
  }
  long long remaining = header_number(response, "x-ratelimit-remaining");
  if (remaining < 0) {
    remaining = header_number(response, "ratelimit-remaining");
  }
  if (remaining == 0 && reset >= 0) {
    long long now_s = std::chrono::duration_cast<seconds>(now.time_since_epoch()).count();
    long long wait = std::max(0LL, reset - now_s) + 1;
    return bounded(seconds(wait), status + "; quota resets in " + std::to_string(wait) + " s", policy);
  }
  milliseconds wait = doubled(policy.secondary_rate_limit_wait, attempt, seconds(policy.max_wait));
  return bounded(wait, status + " (secondary limit); waiting " + std::to_string(wait.count() / 1000) + " s", policy);
}

}  // namespace

bool is_missing_permission(const HttpResponse& response) {
  return response.status == 403 && lower(response.body).find("resource not accessible by") != std::string::npos;
}

bool is_rate_limited(const HttpResponse& response) {
  if (response.status == 429) {
    return true;
  }
  if (response.status != 403 || is_missing_permission(response)) {
    return false;
  }
  return response.header("retry-after") || response.header("x-ratelimit-remaining").value_or("") == "0" ||
         lower(response.body).find("rate limit") != std::string::npos;
}

RetryDecision decide_retry(const HttpResponse& response, bool idempotent, int attempt,
                           std::chrono::system_clock::time_point now, const RetryPolicy& policy) {
  RetryDecision decision;
  if (attempt + 1 >= policy.max_attempts) {
    decision.why = "gave up after " + std::to_string(policy.max_attempts) + " attempts";
    return decision;
  }
  if (is_rate_limited(response)) {
    return rate_limit_decision(response, attempt, now, policy);
  }
  bool server_error =
      response.status == 500 || response.status == 502 || response.status == 503 || response.status == 504;
  if (response.status != 0 && !server_error) {
    return decision;
  }
  std::string what = response.status == 0 ? "no response (" + response.transport_error + ")"
                                          : std::to_string(response.status) + " server error";
  if (!idempotent) {
    decision.why = what + "; not retried blindly because the server may have acted on it";
    return decision;
  }
  milliseconds wait = doubled(policy.initial_backoff, attempt, policy.max_backoff);
  long long retry_after = header_number(response, "retry-after");
  if (retry_after >= 0) {
    wait = std::max(wait, milliseconds(retry_after * 1000));
  }
  return bounded(wait, what + "; retrying in " + std::to_string(wait.count() / 1000) + " s", policy);
}

}  // namespace driftgate

// libFuzzer target: HTTP response handling in ci/ (retry decisions, the Link and
// X-Next-Page pagination, error bodies, the sticky-comment upsert), driven by a
// transport that answers every request with fuzzer-chosen statuses, headers and
// bodies and a clock that never sleeps.
//
// Every call must end in a result or in driftgate::Error (ApiError included) after
// a bounded number of requests.
#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "ci/api_client.h"
#include "ci/clock.h"
#include "ci/github_api.h"
#include "ci/gitlab_api.h"
#include "ci/http_transport.h"
#include "ci/redactor.h"
#include "ci/retry_policy.h"
#include "ci/sticky_comment.h"
#include "core/error.h"

namespace {

const char* const k_header_names[] = {
    "Link",         "X-Next-Page", "Retry-After", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Reset",
    "Content-Type", "X-Other"};
// A request budget far above what a bounded client needs; hitting it is a hang.
constexpr int k_max_requests = 5000;

class FuzzedTransport : public driftgate::HttpTransport {
 public:
  explicit FuzzedTransport(FuzzedDataProvider& input) : m_input(input) {}

  driftgate::HttpResponse send(const driftgate::HttpRequest& request) override {
    (void)request;
    if (++m_requests > k_max_requests) {
      std::abort();  // the client keeps calling: retries or pagination are unbounded
    }
    driftgate::HttpResponse response;
    if (m_input.remaining_bytes() == 0) {
      response.transport_error = "fuzz input exhausted";
      return response;
    }
    static const int k_statuses[] = {0, 200, 201, 204, 301, 400, 401, 403, 404, 422, 429, 500, 502, 503, 504};
    response.status = m_input.ConsumeBool() ? m_input.PickValueInArray(k_statuses) : m_input.ConsumeIntegral<int>();
    if (response.status == 0) {
      response.transport_error = "connection reset by peer";
    }
    int headers = m_input.ConsumeIntegralInRange(0, 4);
    for (int i = 0; i < headers; ++i) {
      response.headers.emplace_back(m_input.PickValueInArray(k_header_names), m_input.ConsumeRandomLengthString(200));
    }
    response.body = m_input.ConsumeRandomLengthString(2000);
    return response;
  }

 private:
  FuzzedDataProvider& m_input;
  int m_requests = 0;
};

class InstantClock : public driftgate::Clock {
 public:
  std::chrono::system_clock::time_point now() override { return m_now; }
  void sleep_for(std::chrono::milliseconds duration) override { m_now += duration; }

 private:
  std::chrono::system_clock::time_point m_now{std::chrono::seconds(1700000000)};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  // Pure functions of one response first.
  std::string link = input.ConsumeRandomLengthString(300);
  (void)driftgate::next_link(link);
  driftgate::HttpResponse single;
  single.status = input.ConsumeIntegral<int>();
  single.headers.emplace_back(input.PickValueInArray(k_header_names), input.ConsumeRandomLengthString(100));
  single.body = input.ConsumeRandomLengthString(500);
  (void)driftgate::is_missing_permission(single);
  (void)driftgate::is_rate_limited(single);
  (void)driftgate::ApiClient::server_message(single);
  driftgate::RetryPolicy policy;
  (void)driftgate::decide_retry(single, input.ConsumeBool(), input.ConsumeIntegralInRange(0, 10),
                                std::chrono::system_clock::time_point(std::chrono::seconds(1700000000)), policy);

  // Then whole conversations with a fuzzed server.
  FuzzedTransport transport(input);
  InstantClock clock;
  driftgate::Redactor redactor;
  bool gitlab = input.ConsumeBool();
  driftgate::ApiConfig config;
  config.service = gitlab ? "GitLab" : "GitHub";
  config.advisor = gitlab ? driftgate::gitlab_advice : driftgate::github_advice;
  driftgate::ApiClient client(transport, clock, redactor, config);
  std::string marker = driftgate::sticky_marker("fuzz", "gate");
  try {
    if (gitlab) {
      driftgate::GitlabApi api(client, "https://gitlab.example.com/api/v4", "group/project");
      driftgate::GitlabThread thread(api, 7);
      (void)driftgate::upsert_sticky_comment(thread, marker, marker + "\nbody", clock, policy);
    } else {
      driftgate::GithubApi api(client, "https://api.github.com", "owner/repo");
      // GET /user's answer decides whose comments are ours (403: an installation token).
      std::string author = api.authenticated_login().value_or(driftgate::k_github_actions_login);
      driftgate::GithubThread thread(api, 7, author);
      (void)driftgate::upsert_sticky_comment(thread, marker, marker + "\nbody", clock, policy);
    }
  } catch (const driftgate::Error&) {
  }
  return 0;
}

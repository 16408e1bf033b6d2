// One REST API as driftgate calls it: base headers, retries, spacing, logging and
// errors that say what to do, all in one place for GitHub and GitLab.
//
// Callers hand a method, a URL and a JSON body; the client adds the service's
// headers (auth, Accept, User-Agent), retries per RetryPolicy, keeps mutations
// about a second apart, and turns a final failure into an ApiError whose message
// names the call, the status, the server's message and the service-specific advice
// (which `permissions:` entry is missing, which flag to check). Everything it writes
// or throws passes through the Redactor first.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "ci/clock.h"
#include "ci/http_transport.h"
#include "ci/redactor.h"
#include "ci/retry_policy.h"
#include "core/error.h"

namespace driftgate {

class ApiError : public Error {
 public:
  ApiError(const std::string& message, int status, bool maybe_applied, bool missing_permission = false)
      : Error(message), m_status(status), m_maybe_applied(maybe_applied), m_missing_permission(missing_permission) {}
  int status() const { return m_status; }  // 0: no response
  // True when a non-idempotent call failed in a way that may have taken effect
  // (dropped connection, 5xx): the caller must re-read before trying again.
  bool maybe_applied() const { return m_maybe_applied; }
  // True for a 403 "Resource not accessible by integration" (is_missing_permission).
  bool missing_permission() const { return m_missing_permission; }

 private:
  int m_status;
  bool m_maybe_applied;
  bool m_missing_permission;
};

// Service-specific advice for a failed call ("add `permissions: statuses: write`").
using ErrorAdvisor = std::function<std::string(const HttpRequest& request, const HttpResponse& response)>;

struct ApiConfig {
  std::string service;   // "GitHub", "GitLab": first word of every error
  HttpHeaders headers;   // added to every request (auth included)
  ErrorAdvisor advisor;  // may be empty
  RetryPolicy retry;
  std::ostream* log = nullptr;  // retries and (when verbose) every call; null: silent
  bool verbose = false;
};

class ApiClient {
 public:
  ApiClient(HttpTransport& transport, Clock& clock, const Redactor& redactor, ApiConfig config)
      : m_transport(transport), m_clock(clock), m_redactor(redactor), m_config(std::move(config)) {}

  // Sends a call and returns its 2xx response. GET, PUT, PATCH and DELETE are
  // retried on 5xx and dropped connections; POST only on rate limits. Throws
  // ApiError on anything else.
  HttpResponse send(const std::string& method, const std::string& url, const std::string& body = "");

  // The server's "message" from a JSON error body, or the body's start.
  static std::string server_message(const HttpResponse& response);

 private:
  HttpResponse send_once(const HttpRequest& request);
  ApiError make_error(const HttpRequest& request, const HttpResponse& response, const std::string& why) const;

  HttpTransport& m_transport;
  Clock& m_clock;
  const Redactor& m_redactor;
  ApiConfig m_config;
  std::optional<std::chrono::system_clock::time_point> m_last_mutation;
};

}  // namespace driftgate

// The HTTP transport: the one effect behind which every API call of `driftgate post` goes.
//
// The GitHub and GitLab clients speak plain requests and responses through this
// interface, so unit tests use a recording fake, `--dry-run` uses a printing one and
// only HttplibTransport touches the network. A transport never retries and never
// throws for HTTP-level problems: a connection that fails or drops comes back as a
// response with status 0 and `transport_error` set, and the caller (ApiClient)
// decides what to do.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace driftgate {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", "PATCH", "PUT", "DELETE"
  std::string url;     // absolute: scheme://host[:port]/path?query
  HttpHeaders headers;
  std::string body;  // JSON for mutations, "" otherwise
};

struct HttpResponse {
  int status = 0;       // 0: no response (see transport_error)
  HttpHeaders headers;  // names as received
  std::string body;
  std::string transport_error;  // "connection refused", "read timeout", ...; "" when a response came

  // The first header of that name, compared case-insensitively.
  std::optional<std::string> header(const std::string& name) const;
};

// Named timeouts of one request; the defaults suit api.github.com and gitlab.com.
struct HttpTimeouts {
  std::chrono::seconds connect{10};  // TCP + TLS handshake
  std::chrono::seconds read{30};     // waiting for response bytes
  std::chrono::seconds write{30};    // sending the request
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Sends one request, once. Never throws for network or HTTP failures.
  virtual HttpResponse send(const HttpRequest& request) = 0;
};

// Case-insensitive ASCII comparison of header names.
bool header_name_equal(const std::string& a, const std::string& b);

}  // namespace driftgate

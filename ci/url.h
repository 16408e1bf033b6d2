// Absolute URLs as the API clients use them, and the rule on where plain http may go.
//
// API base URLs come from the environment or flags (GITHUB_API_URL, CI_API_V4_URL,
// --api-url) and carry a token: https is required, plain http is allowed only to a
// loopback host (the fake servers in the tests, a local proxy), so a typo can never
// send a token in clear text across a network.
#pragma once

#include <string>

namespace driftgate {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets for IPv6
  int port = 0;        // explicit or the scheme's default
  std::string target;  // path and query, at least "/"
};

// Parses an absolute http(s) URL. Throws driftgate::Error naming `what` (e.g.
// "--api-url") and the value when it is not one.
Url parse_url(const std::string& url, const std::string& what);

// 127.0.0.0/8, ::1 and localhost.
bool is_loopback_host(const std::string& host);

// Parses `url` and requires https or loopback http. Throws driftgate::Error otherwise.
Url parse_api_url(const std::string& url, const std::string& what);

// `text` with every byte outside [A-Za-z0-9-._~] percent-encoded (for path segments).
std::string url_encode(const std::string& text);

}  // namespace driftgate

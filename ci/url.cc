#include "ci/url.h"

#include <cstdio>

#include "core/error.h"

namespace driftgate {

namespace {

Error bad_url(const std::string& url, const std::string& what, const std::string& why) {
  return Error(what + " '" + url + "': " + why + "; expected an absolute URL such as https://api.github.com");
}

}  // namespace

Url parse_url(const std::string& url, const std::string& what) {
  Url parsed;
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    throw bad_url(url, what, "no scheme");
  }
  parsed.scheme = url.substr(0, scheme_end);
  if (parsed.scheme != "http" && parsed.scheme != "https") {
    throw bad_url(url, what, "scheme '" + parsed.scheme + "' is not http or https");
  }
  size_t authority_start = scheme_end + 3;
  size_t path_start = url.find_first_of("/?", authority_start);
  std::string authority =
      url.substr(authority_start, path_start == std::string::npos ? std::string::npos : path_start - authority_start);
  parsed.target = path_start == std::string::npos ? "/" : url.substr(path_start);
  if (parsed.target[0] == '?') {
    parsed.target = "/" + parsed.target;
  }
  if (authority.empty() || authority.find('@') != std::string::npos) {
    throw bad_url(url, what, authority.empty() ? "no host" : "credentials in the URL are not supported");
  }
  std::string port_text;
  if (authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) {
      throw bad_url(url, what, "unclosed IPv6 bracket");
    }
    parsed.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        throw bad_url(url, what, "junk after the IPv6 address");
      }
      port_text = authority.substr(close + 2);
    }
  } else {
    size_t colon = authority.find(':');
    parsed.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port_text = authority.substr(colon + 1);
    }
  }
  parsed.port = parsed.scheme == "https" ? 443 : 80;
  if (!port_text.empty()) {
    if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos) {
      throw bad_url(url, what, "port '" + port_text + "' is not a number");
    }
    parsed.port = std::stoi(port_text);
    if (parsed.port < 1 || parsed.port > 65535) {
      throw bad_url(url, what, "port " + port_text + " is out of range");
    }
  }
  if (parsed.host.empty()) {
    throw bad_url(url, what, "no host");
  }
  return parsed;
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Url parse_api_url(const std::string& url, const std::string& what) {
  Url parsed = parse_url(url, what);
  if (parsed.scheme == "http" && !is_loopback_host(parsed.host)) {
    throw Error(what + " '" + url +
                "': plain http would send the token in clear text; use https (plain http is allowed only to "
                "127.0.0.1, ::1 or localhost)");
  }
  return parsed;
}

std::string url_encode(const std::string& text) {
  std::string encoded;
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      encoded += static_cast<char>(c);
      continue;
    }
    char buffer[4];
    std::snprintf(buffer, sizeof(buffer), "%%%02X", c);
    encoded += buffer;
  }
  return encoded;
}

}  // namespace driftgate

// The real HTTP transport, over cpp-httplib (Debian's libcpp-httplib, built with OpenSSL).
//
// One connection per request (posting makes a handful of calls; keep-alive would
// buy nothing and complicate the dropped-connection story). https verifies the
// server certificate against the system CA store; plain http is refused unless the
// host is loopback (see url.h). Redirects are not followed: an API that redirects a
// mutation is a misconfigured base URL, and following it could carry the token
// elsewhere. A CA bundle can replace the system store (a GitHub Enterprise or
// self-managed GitLab with a private CA).
#pragma once

#include <string>

#include "ci/http_transport.h"

namespace driftgate {

class HttplibTransport : public HttpTransport {
 public:
  // `ca_file`: a PEM bundle to verify servers against; "" uses the system store.
  explicit HttplibTransport(HttpTimeouts timeouts = {}, std::string ca_file = "")
      : m_timeouts(timeouts), m_ca_file(std::move(ca_file)) {}

  HttpResponse send(const HttpRequest& request) override;

 private:
  HttpTimeouts m_timeouts;
  std::string m_ca_file;
};

}  // namespace driftgate

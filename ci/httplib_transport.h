// The real HTTP transport, over cpp-httplib (Debian's libcpp-httplib, built with OpenSSL).
//
// One connection per request (posting makes a handful of calls; keep-alive would
// buy nothing and complicate the dropped-connection story). https verifies the
// server certificate against the system CA store; plain http is refused unless the
// host is loopback (see url.h). Redirects are not followed: an API that redirects a
// mutation is a misconfigured base URL, and following it could carry the token
// elsewhere.
#pragma once

#include "ci/http_transport.h"

namespace driftgate {

class HttplibTransport : public HttpTransport {
 public:
  explicit HttplibTransport(HttpTimeouts timeouts = {}) : m_timeouts(timeouts) {}

  HttpResponse send(const HttpRequest& request) override;

 private:
  HttpTimeouts m_timeouts;
};

}  // namespace driftgate

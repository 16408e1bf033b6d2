// The real HTTP transport, over cpp-httplib (Debian's libcpp-httplib, built with OpenSSL).
//
// One connection per request (posting makes a handful of calls; keep-alive would
// buy nothing and complicate the dropped-connection story). https verifies the
// server certificate against the system CA store; plain http is refused unless the
// host is loopback (see url.h). Redirects are not followed: an API that redirects a
// mutation is a misconfigured base URL, and following it could carry the token
// elsewhere. A CA bundle can replace the system store (a GitHub Enterprise or
// self-managed GitLab with a private CA).
//
// A response body is read up to a cap, counted after decompression (a gzip bomb
// stops there too): a body over it is a transport error naming the limit, and no
// more of it is read or inflated. The largest real answer driftgate asks for is a
// page of 100 comments of at most 65,536 characters each (about 26 MB of JSON at
// 4 bytes a character), so the default leaves room for that.
#pragma once

#include <cstddef>
#include <string>

#include "ci/http_transport.h"

namespace driftgate {

class HttplibTransport : public HttpTransport {
 public:
  static constexpr std::size_t k_default_max_body = std::size_t{32} << 20;

  // `ca_file`: a PEM bundle to verify servers against; "" uses the system store.
  // `max_body`: the most bytes of a (decompressed) response body.
  explicit HttplibTransport(HttpTimeouts timeouts = {}, std::string ca_file = "",
                            std::size_t max_body = k_default_max_body)
      : m_timeouts(timeouts), m_ca_file(std::move(ca_file)), m_max_body(max_body) {}

  HttpResponse send(const HttpRequest& request) override;

 private:
  HttpTimeouts m_timeouts;
  std::string m_ca_file;
  std::size_t m_max_body;
};

}  // namespace driftgate

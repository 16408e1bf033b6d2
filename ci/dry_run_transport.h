// The transport of `driftgate post --dry-run`: prints each request instead of
// sending it, token redacted, and answers as an empty API would (no comments yet,
// every write accepted), so the listing shows the whole sequence of a first post.
#pragma once

#include <iosfwd>

#include "ci/http_transport.h"
#include "ci/redactor.h"

namespace driftgate {

class DryRunTransport : public HttpTransport {
 public:
  DryRunTransport(std::ostream& out, const Redactor& redactor) : m_out(out), m_redactor(redactor) {}

  HttpResponse send(const HttpRequest& request) override;

 private:
  std::ostream& m_out;
  const Redactor& m_redactor;
};

}  // namespace driftgate

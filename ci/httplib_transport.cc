#include "ci/httplib_transport.h"

#include <httplib.h>

#include "ci/url.h"

namespace driftgate {

HttpResponse HttplibTransport::send(const HttpRequest& request) {
  Url url = parse_api_url(request.url, "request URL");
  std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  httplib::Client client(url.scheme + "://" + host + ":" + std::to_string(url.port));
  client.set_connection_timeout(m_timeouts.connect);
  client.set_read_timeout(m_timeouts.read);
  client.set_write_timeout(m_timeouts.write);
  client.set_follow_location(false);
  client.set_keep_alive(false);
  client.set_url_encode(false);  // the API clients encode path segments themselves
  if (url.scheme == "https") {
    client.enable_server_certificate_verification(true);
    if (!m_ca_file.empty()) {
      client.set_ca_cert_path(m_ca_file);
    }
  }

  httplib::Request native;
  native.method = request.method;
  native.path = url.target;
  for (const auto& [name, value] : request.headers) {
    native.headers.emplace(name, value);
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PATCH" || request.method == "PUT") {
    native.body = request.body;
    if (!native.has_header("Content-Type")) {
      native.headers.emplace("Content-Type", "application/json");
    }
  }

  HttpResponse response;
  httplib::Result result = client.send(native);
  if (!result) {
    response.transport_error = httplib::to_string(result.error());
    return response;
  }
  response.status = result->status;
  for (const auto& [name, value] : result->headers) {
    response.headers.emplace_back(name, value);
  }
  response.body = result->body;
  return response;
}

}  // namespace driftgate

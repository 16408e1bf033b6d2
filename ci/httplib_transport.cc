#include "ci/httplib_transport.h"

#include <httplib.h>

#include "ci/url.h"
#include "core/input_file.h"

namespace driftgate {

namespace {

std::string seconds_text(std::chrono::seconds value) { return std::to_string(value.count()) + " s"; }

// What went wrong, naming the timeout or the flag that governs it.
std::string describe(httplib::Error error, const HttpTimeouts& timeouts, bool ca_file) {
  switch (error) {
    case httplib::Error::Connection:
      return "could not connect (refused, unreachable or over the connect timeout of " +
             seconds_text(timeouts.connect) + ", --connect-timeout)";
    case httplib::Error::ConnectionTimeout:
      return "connect timeout: no connection within " + seconds_text(timeouts.connect) + " (--connect-timeout)";
    case httplib::Error::Read:
      return "read timeout or dropped connection: no complete response within " + seconds_text(timeouts.read) +
             " (--read-timeout)";
    case httplib::Error::Write:
      return "write timeout or dropped connection: the request was not sent within " + seconds_text(timeouts.write) +
             " (--read-timeout)";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLLoadingCerts:
      return ca_file ? "cannot load the --ca-file CA bundle" : "cannot load the system's CA certificates";
    case httplib::Error::SSLServerVerification:
      return "the server's TLS certificate did not verify" +
             std::string(ca_file ? " against --ca-file" : " (a private CA: pass its PEM bundle with --ca-file)");
    default:
      return httplib::to_string(error);
  }
}

}  // namespace

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
  native.body = request.body;  // its Content-Type is among request.headers (ApiClient sets it)

  HttpResponse response;
  // The body arrives here chunk by chunk, after decompression: refusing a chunk that
  // would pass the cap stops both the read and the inflation.
  std::string body;
  bool over_limit = false;
  native.content_receiver = [&](const char* data, size_t length, uint64_t /*offset*/, uint64_t /*total*/) {
    if (length > m_max_body - body.size()) {
      over_limit = true;
      return false;
    }
    body.append(data, length);
    return true;
  };
  httplib::Result result = client.send(native);
  if (over_limit) {
    response.transport_error = "the response body is over the limit of " + describe_size(m_max_body) +
                               " (counted after decompression); is --api-url the API root?";
    return response;
  }
  if (!result) {
    response.transport_error = describe(result.error(), m_timeouts, !m_ca_file.empty());
    return response;
  }
  response.status = result->status;
  for (const auto& [name, value] : result->headers) {
    response.headers.emplace_back(name, value);
  }
  response.body = std::move(body);
  return response;
}

}  // namespace driftgate

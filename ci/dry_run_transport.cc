#include "ci/dry_run_transport.h"

#include <ostream>

namespace driftgate {

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

HttpResponse DryRunTransport::send(const HttpRequest& request) {
  std::string listing = request.method + " " + request.url + "\n";
  for (const auto& [name, value] : request.headers) {
    listing += "  " + name + ": " + value + "\n";
  }
  if (!request.body.empty()) {
    listing += request.body + "\n";
  }
  m_out << m_redactor.redact(listing) << "\n";

  HttpResponse response;
  std::string path = request.url.substr(0, request.url.find('?'));
  if (request.method == "GET") {
    response.status = 200;
    response.body = ends_with(path, "/user") ? R"({"id":0,"login":"dry-run"})" : "[]";
    return response;
  }
  response.status = request.method == "POST" ? 201 : 200;
  response.body = R"({"id":0})";
  return response;
}

}  // namespace driftgate

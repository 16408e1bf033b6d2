#include "ci/api_client.h"

#include <nlohmann/json.hpp>
#include <ostream>

namespace driftgate {

namespace {

bool is_idempotent(const std::string& method) { return method != "POST"; }

std::string status_text(const HttpResponse& response) {
  if (response.status == 0) {
    return "no response (" + response.transport_error + ")";
  }
  return std::to_string(response.status);
}

}  // namespace

std::string ApiClient::server_message(const HttpResponse& response) {
  nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
  std::string message;
  if (body.is_object() && body.contains("message") && body["message"].is_string()) {
    message = body["message"].get<std::string>();
  } else if (body.is_object() && body.contains("message")) {
    message = body["message"].dump();
  } else if (body.is_object() && body.contains("error") && body["error"].is_string()) {
    message = body["error"].get<std::string>();
  } else {
    message = response.body;
  }
  if (message.size() > 300) {
    message = message.substr(0, 300) + "...";
  }
  return message;
}

HttpResponse ApiClient::send_once(const HttpRequest& request) {
  if (request.method != "GET") {
    auto now = m_clock.now();
    if (m_last_mutation && now - *m_last_mutation < m_config.retry.mutation_spacing) {
      m_clock.sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(m_config.retry.mutation_spacing -
                                                                              (now - *m_last_mutation)));
    }
    m_last_mutation = m_clock.now();
  }
  HttpResponse response = m_transport.send(request);
  if (m_config.log != nullptr && m_config.verbose) {
    *m_config.log << m_redactor.redact(m_config.service + " API: " + request.method + " " + request.url + " -> " +
                                       status_text(response))
                  << "\n";
  }
  return response;
}

ApiError ApiClient::make_error(const HttpRequest& request, const HttpResponse& response, const std::string& why) const {
  std::string message =
      m_config.service + " API: " + request.method + " " + request.url + " -> " + status_text(response);
  if (response.status != 0) {
    std::string server = server_message(response);
    if (!server.empty()) {
      message += " \"" + server + "\"";
    }
  }
  if (!why.empty()) {
    message += " (" + why + ")";
  }
  std::string advice = m_config.advisor ? m_config.advisor(request, response) : "";
  if (!advice.empty()) {
    message += ": " + advice;
  }
  bool server_error = response.status == 0 || response.status >= 500;
  return ApiError(m_redactor.redact(message), response.status, server_error && !is_idempotent(request.method),
                  is_missing_permission(response));
}

HttpResponse ApiClient::send(const std::string& method, const std::string& url, const std::string& body) {
  HttpRequest request{method, url, m_config.headers, body};
  // Every mutation sends JSON; set here so the dry run prints what is sent.
  if (!body.empty() || method == "POST" || method == "PATCH" || method == "PUT") {
    request.headers.emplace_back("Content-Type", "application/json");
  }
  for (int attempt = 0;; ++attempt) {
    HttpResponse response = send_once(request);
    if (response.status >= 200 && response.status < 300) {
      return response;
    }
    RetryDecision decision = decide_retry(response, is_idempotent(method), attempt, m_clock.now(), m_config.retry);
    if (!decision.retry) {
      throw make_error(request, response, decision.why);
    }
    if (m_config.log != nullptr) {
      *m_config.log << m_redactor.redact(m_config.service + " API: " + method + " " + url + ": " + decision.why)
                    << "\n";
    }
    m_clock.sleep_for(decision.wait);
  }
}

}  // namespace driftgate

#include "ci/redactor.h"

#include <algorithm>

#include "core/error.h"

namespace driftgate {

void Redactor::add_secret(const std::string& secret) {
  if (secret.empty()) {
    return;
  }
  if (secret.size() < 4) {
    throw Error("the API token is only " + std::to_string(secret.size()) +
                " characters long: that is not a real token; check the token variable");
  }
  m_secrets.push_back(secret);
  // Longest first, so a secret that contains another is removed whole.
  std::sort(m_secrets.begin(), m_secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::string Redactor::redact(const std::string& text) const {
  std::string result = text;
  for (const auto& secret : m_secrets) {
    size_t at = 0;
    while ((at = result.find(secret, at)) != std::string::npos) {
      result.replace(at, secret.size(), k_redacted);
      at += std::char_traits<char>::length(k_redacted);
    }
  }
  return result;
}

}  // namespace driftgate

// The one place where secrets are taken out of text before it is shown.
//
// Every log line, error message and dry-run listing of `driftgate post` passes
// through a Redactor that knows the token, so a token can never reach a CI log,
// even when a server echoes it back in an error body.
#pragma once

#include <string>
#include <vector>

namespace driftgate {

inline constexpr const char* k_redacted = "***";

class Redactor {
 public:
  // Registers a secret. Empty strings are ignored; secrets of 1-3 characters are
  // refused (redacting them would mangle all text) with driftgate::Error.
  void add_secret(const std::string& secret);

  // `text` with every occurrence of every secret replaced by "***".
  std::string redact(const std::string& text) const;

 private:
  std::vector<std::string> m_secrets;
};

}  // namespace driftgate

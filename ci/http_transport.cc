#include "ci/http_transport.h"

#include <cctype>

namespace driftgate {

bool header_name_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> HttpResponse::header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (header_name_equal(key, name)) {
      return value;
    }
  }
  return std::nullopt;
}

}  // namespace driftgate

#include "differ/html_escape.h"

#include "core/safe_text.h"

namespace driftgate {

std::string html_escape(const std::string& text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : escape_invisible(text, /*keep_whitespace=*/true)) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&#39;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

std::string markdown_cell_escape(const std::string& text) {
  std::string escaped;
  for (char c : html_escape(text)) {
    if (c == '|') {
      escaped += "&#124;";
    } else if (c == '`') {
      escaped += "&#96;";
    } else if (c == '\n' || c == '\r') {
      escaped += ' ';
    } else {
      escaped += c;
    }
  }
  return escaped;
}

}  // namespace driftgate

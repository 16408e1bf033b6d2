#include "ci/markdown_escape.h"

#include <algorithm>

#include "core/safe_text.h"

namespace driftgate {

namespace {

// One line, with control, bidi and zero-width characters written as escapes.
std::string one_line(const std::string& text) {
  std::string result = text;
  std::replace(result.begin(), result.end(), '\n', ' ');
  std::replace(result.begin(), result.end(), '\r', ' ');
  std::replace(result.begin(), result.end(), '\t', ' ');
  return escape_invisible(result);
}

}  // namespace

std::string code_span(const std::string& text) {
  std::string content;
  for (char c : one_line(text)) {
    if (c == '|') {
      content += "\\|";  // GFM splits table cells on '|' even inside code spans
    } else {
      content += c;
    }
  }
  size_t longest = 0;
  size_t run = 0;
  for (char c : content) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  std::string fence(longest + 1, '`');
  bool pad = content.empty() || content.front() == '`' || content.back() == '`';
  return fence + (pad ? " " : "") + content + (pad ? " " : "") + fence;
}

std::string escape_text(const std::string& text) {
  std::string result;
  const std::string line = one_line(text);
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    switch (c) {
      case '&':
        result += "&amp;";
        break;
      case '<':
        result += "&lt;";
        break;
      case '>':
        result += "&gt;";
        break;
      case '"':
        result += "&quot;";
        break;
      case '\'':
        result += "&#39;";
        break;
      case '@':
        result += std::string("@") + k_zero_width_joiner;
        break;
      case ':':
        result += ':';
        if (line.compare(i + 1, 2, "//") == 0) {
          result += k_zero_width_joiner;  // no bare-URL autolink
        }
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '(':
      case ')':
      case '#':
      case '+':
      case '-':
      case '!':
      case '|':
      case '~':
      case '{':
      case '}':
        result += '\\';
        result += c;
        break;
      case 'w':
      case 'W':
        // GitHub autolinks "www." text (GFM's extended www autolink); a joiner before the dot breaks it.
        if (i + 3 < line.size() && (line[i + 1] | 0x20) == 'w' && (line[i + 2] | 0x20) == 'w' && line[i + 3] == '.') {
          result += line.substr(i, 3) + k_zero_width_joiner;
          i += 2;
        } else {
          result += c;
        }
        break;
      default:
        result += c;
    }
  }
  return result;
}

std::string truncate_utf8(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return text;
  }
  size_t cut = max_bytes >= 3 ? max_bytes - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return text.substr(0, cut) + "...";
}

size_t utf8_length(const std::string& text) {
  size_t count = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) {
      ++count;
    }
  }
  return count;
}

size_t utf16_length(const std::string& text) {
  size_t count = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) {
      count += (c & 0xF8) == 0xF0 ? 2 : 1;
    }
  }
  return count;
}

}  // namespace driftgate

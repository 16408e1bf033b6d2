#include "core/safe_text.h"

#include <array>
#include <cstdint>
#include <cstdio>

#include "core/error.h"

namespace driftgate {

namespace {

// One step through UTF-8: the code point at `at` and its length, or length 0 when
// the bytes there are not well-formed UTF-8 (RFC 3629: no overlongs, no surrogates).
struct Decoded {
  std::uint32_t code_point = 0;
  std::size_t length = 0;
};

Decoded decode(std::string_view text, std::size_t at) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  if (lead < 0x80) {
    return {lead, 1};
  }
  std::size_t length = 0;
  std::uint32_t code_point = 0;
  std::uint32_t least = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code_point = lead & 0x1F;
    least = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code_point = lead & 0x0F;
    least = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code_point = lead & 0x07;
    least = 0x10000;
  } else {
    return {};
  }
  if (at + length > text.size()) {
    return {};
  }
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) {
      return {};
    }
    code_point = (code_point << 6) | (byte(at + i) & 0x3F);
  }
  if (code_point < least || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    return {};
  }
  return {code_point, length};
}

bool is_control(std::uint32_t c) { return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F); }

bool is_bidi(std::uint32_t c) {
  return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

bool is_zero_width_or_separator(std::uint32_t c) {
  return (c >= 0x200B && c <= 0x200D) || c == 0x2060 || c == 0xFEFF || c == 0x2028 || c == 0x2029;
}

bool is_invisible(std::uint32_t c) { return is_control(c) || is_bidi(c) || is_zero_width_or_separator(c); }

std::string hex(std::uint32_t value, int digits, bool upper) {
  std::array<char, 16> text{};
  std::snprintf(text.data(), text.size(), upper ? "%0*X" : "%0*x", digits, static_cast<unsigned>(value));
  return text.data();
}

}  // namespace

std::string first_invisible(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    Decoded d = decode(text, at);
    if (d.length == 0) {
      return "the byte 0x" + hex(static_cast<unsigned char>(text[at]), 2, true) + " (not UTF-8)";
    }
    if (is_invisible(d.code_point)) {
      std::string name = "U+" + hex(d.code_point, 4, true);
      if (is_control(d.code_point)) {
        return name + " (a control character)";
      }
      if (is_bidi(d.code_point)) {
        return name + " (a bidirectional formatting character)";
      }
      return name + " (an invisible character)";
    }
    at += d.length;
  }
  return "";
}

std::string escape_invisible(std::string_view text, bool keep_whitespace) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    Decoded d = decode(text, at);
    if (d.length == 0) {
      out += "\\x" + hex(static_cast<unsigned char>(text[at]), 2, false);
      ++at;
      continue;
    }
    bool whitespace = d.code_point == '\t' || d.code_point == '\n';
    if (!is_invisible(d.code_point) || (keep_whitespace && whitespace)) {
      out.append(text.substr(at, d.length));
    } else if (d.code_point < 0x80) {
      out += "\\x" + hex(d.code_point, 2, false);
    } else {
      out += "\\u" + hex(d.code_point, 4, false);
    }
    at += d.length;
  }
  return out;
}

std::string ansi_c_quote(std::string_view text) {
  std::string out = "$'";
  for (std::size_t at = 0; at < text.size();) {
    Decoded d = decode(text, at);
    std::size_t length = d.length == 0 ? 1 : d.length;
    if (d.length == 0 || is_invisible(d.code_point)) {
      for (std::size_t i = 0; i < length; ++i) {
        out += "\\x" + hex(static_cast<unsigned char>(text[at + i]), 2, false);
      }
    } else if (text[at] == '\'' || text[at] == '\\') {
      out += '\\';
      out += text[at];
    } else {
      out.append(text.substr(at, length));
    }
    at += length;
  }
  return out + "'";
}

void require_printable(std::string_view text, const std::string& what) {
  std::string found = first_invisible(text);
  if (!found.empty()) {
    throw Error(what + " '" + escape_invisible(text) + "' holds " + found +
                "; ids and names must be printable text, since shells, terminals and PR comments would show or cut "
                "them otherwise");
  }
}

}  // namespace driftgate

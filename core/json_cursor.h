// A forward cursor over the bytes of one JSON line, for the fast readers that mirror a
// writer's layout (core/check_line_fast.cc): literals compared in registers, strings of
// printable ASCII scanned sixteen bytes at a time, integers and numbers checked against
// the grammar the strict reader accepts and converted as it converts them.
//
// It only ever says whether the line goes on as expected: it never reports an error, and
// anything outside its narrow grammar (escapes, non-ASCII, long numbers, -0) is "no", for
// the strict reader to judge. Its number scanners do not look for the end of the text:
// a reader gives it only text whose last byte no number goes on with ('}' or '\n').
// Header-only: every call is in the readers' hot loop.
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/text_compare.h"

namespace driftgate {

// The value of a JSON number token (number_token's grammar) when the one IEEE operation
// m * 10^e or m / 10^-e, with the digits m and 10^|e| exact doubles, gives it (correctly
// rounded, as from_chars would); false where from_chars must decide.
inline bool exact_number(std::string_view token, double& value) {
  static constexpr double k_powers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char* at = token.data();
  const char* end = at + token.size();
  bool negative = *at == '-';
  at += negative ? 1 : 0;
  uint64_t digits = 0;
  int count = 0;
  int scale = 0;  // the power of ten the digits are to be multiplied by
  bool fraction = false;
  for (; at != end && *at != 'e' && *at != 'E'; ++at) {
    if (*at == '.') {
      fraction = true;
      continue;
    }
    digits = digits * 10 + static_cast<uint64_t>(*at - '0');
    count += digits != 0 ? 1 : 0;  // leading zeros do not count
    scale -= fraction ? 1 : 0;
  }
  if (at != end) {
    ++at;
    bool down = *at == '-';
    at += *at == '-' || *at == '+' ? 1 : 0;
    int exponent = 0;
    for (; at != end; ++at) {
      exponent = exponent * 10 + (*at - '0');
    }
    scale += down ? -exponent : exponent;
  }
  if (count > 15 || scale < -22 || scale > 22) {  // 15 digits: below 2^53
    return false;
  }
  double mantissa = static_cast<double>(digits);
  value = scale < 0 ? mantissa / k_powers[-scale] : mantissa * k_powers[scale];
  value = negative ? -value : value;
  return true;
}

class JsonCursor {
 public:
  explicit JsonCursor(std::string_view line) : m_at(line.data()), m_end(line.data() + line.size()) {}

  const char* at() const { return m_at; }

  size_t left() const { return static_cast<size_t>(m_end - m_at); }
  void skip(size_t count) { m_at += count; }

  // Consumes `text` when the line continues with it.
  bool literal(std::string_view text) {
    if (left() < text.size() || !same_bytes(m_at, text.data(), text.size())) {
      return false;
    }
    m_at += text.size();
    return true;
  }
  // The same for a literal written in the code: its length is a constant.
  template <size_t N>
  bool literal(const char (&text)[N]) {
    constexpr size_t size = N - 1;
    if (left() < size || !same_bytes(m_at, text, size)) {
      return false;
    }
    m_at += size;
    return true;
  }

  // A string of printable ASCII; `out` views its content.
  bool string(std::string_view& out) {
    if (m_at == m_end || *m_at != '"') {
      return false;
    }
    const char* start = ++m_at;
#if defined(__SSE2__)
    // Sixteen bytes at a time up to the first that ends the string or refuses it ('"',
    // '\\', a control byte, DEL or a byte from 0x80: signed, those are below 0x20 too);
    // the loop below decides on that byte.
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    const __m128i del = _mm_set1_epi8(0x7f);
    while (m_end - m_at >= 16) {
      __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(m_at));
      __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)),
                                  _mm_or_si128(_mm_cmplt_epi8(bytes, space), _mm_cmpeq_epi8(bytes, del)));
      int mask = _mm_movemask_epi8(stop);
      if (mask != 0) {
        m_at += __builtin_ctz(static_cast<unsigned>(mask));
        break;
      }
      m_at += 16;
    }
#endif
    while (m_at != m_end) {
      auto c = static_cast<unsigned char>(*m_at);
      if (c == '"') {
        out = std::string_view(start, static_cast<size_t>(m_at - start));
        ++m_at;
        return true;
      }
      if (c < 0x20 || c >= 0x7f || c == '\\') {
        return false;
      }
      ++m_at;
    }
    return false;
  }

  // Numbers are scanned without end checks: the readers take only lines that end in '}'
  // (or text that ends in '\n'), which stops every digit, sign and exponent loop below, and
  // a number is only ever read after a key, '[' or ',', none of which can be the last byte.
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  // `value`, when given, gets the integer (at most 18 digits: it fits).
  bool integer(int64_t* value = nullptr) {
    const char* start = m_at;
    if (*m_at == '-') {
      ++m_at;
    }
    const char* digits = m_at;
    if (!is_digit(*m_at)) {
      return false;
    }
    if (*m_at == '0') {
      ++m_at;
    } else {
      while (is_digit(*m_at)) {
        ++m_at;
      }
    }
    if (m_at - digits > 18) {
      return false;
    }
    if (value != nullptr) {
      int64_t magnitude = 0;
      for (const char* d = digits; d != m_at; ++d) {
        magnitude = magnitude * 10 + (*d - '0');
      }
      *value = *start == '-' ? -magnitude : magnitude;
    }
    return true;
  }

  // A JSON number token; `text` views it.
  bool number_token(std::string_view& text) {
    const char* start = m_at;
    if (*m_at == '-') {
      ++m_at;
    }
    const char* integral = m_at;
    if (*m_at == '0') {
      ++m_at;
    } else {
      while (is_digit(*m_at)) {
        ++m_at;
      }
      if (m_at == integral) {
        return false;
      }
    }
    size_t digit_count = static_cast<size_t>(m_at - integral);
    if (*m_at == '.') {
      const char* fraction = ++m_at;
      while (is_digit(*m_at)) {
        ++m_at;
      }
      if (m_at == fraction) {
        return false;
      }
      digit_count += static_cast<size_t>(m_at - fraction);
    }
    if (*m_at == 'e' || *m_at == 'E') {
      ++m_at;
      if (*m_at == '+' || *m_at == '-') {
        ++m_at;
      }
      const char* exponent = m_at;
      while (is_digit(*m_at)) {
        ++m_at;
      }
      if (m_at == exponent || m_at - exponent > 2) {
        return false;
      }
    }
    if (digit_count > 24) {
      return false;
    }
    text = std::string_view(start, static_cast<size_t>(m_at - start));
    return true;
  }

  // A number as put_json_number writes it: a JSON number or "nan", "inf", "-inf".
  bool number() {
    std::string_view token;
    return *m_at == '"' ? non_finite() : number_token(token);  // a quote only starts "nan", "inf", "-inf"
  }

  // number(), converted.
  bool number(double& value) {
    if (*m_at != '"') {
      return finite_number(value);
    }
    if (literal("\"nan\"")) {
      value = __builtin_nan("");
      return true;
    }
    if (literal("\"inf\"")) {
      value = __builtin_inf();
      return true;
    }
    if (literal("\"-inf\"")) {
      value = -__builtin_inf();
      return true;
    }
    return false;
  }

  bool finite_number(double& value) {
    std::string_view token;
    if (!number_token(token)) {
      return false;
    }
    if (!exact_number(token, value)) {
      auto result = std::from_chars(token.data(), token.data() + token.size(), value);
      if (result.ec != std::errc() || result.ptr != token.data() + token.size()) {
        return false;
      }
    }
    return !(value == 0.0 && token.front() == '-');
  }

  // [integer, ...]; `values`, when given, gets them.
  bool integers(std::vector<int64_t>* values = nullptr) {
    if (!literal("[")) {
      return false;
    }
    if (values != nullptr) {
      values->clear();
    }
    if (literal("]")) {
      return true;
    }
    do {
      int64_t value = 0;
      if (!integer(values != nullptr ? &value : nullptr)) {
        return false;
      }
      if (values != nullptr) {
        values->push_back(value);
      }
    } while (literal(","));
    return literal("]");
  }

 private:
  bool non_finite() { return literal("\"nan\"") || literal("\"inf\"") || literal("\"-inf\""); }

  const char* m_at;
  const char* m_end;
};

}  // namespace driftgate

// read_canonical_check (core/run_digest.h): one pass over a check line that mirrors
// append_check_json_begin/_end (core/check_json.cc) member by member.
//
// It accepts a line only where read_run_file's reader certainly accepts it with the
// same values, and says "not mine" for everything else:
//   - strings: printable ASCII without '"' or '\' (what the writer copies unchanged;
//     anything else it escapes, and escapes are left to the full readers);
//   - integers: -?(0|[1-9][0-9]{0,17}), so they fit int64 as the reader requires;
//   - numbers: a JSON number with at most 24 digits and a 2-digit exponent (finite for
//     every reader), or the strings "nan", "inf", "-inf" where the writer writes them;
//     tolerance values take no strings (the reader refuses them);
//   - the names of statuses and tolerance rules the reader knows;
//   - the id equal to its parts joined as make_check_id joins them.
// Only max_abs is converted (std::from_chars, correctly rounded like the readers'
// strtod); a negative zero is left to the full readers, which read "-0" as 0.
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "core/record.h"
#include "core/run_digest.h"
#include "core/text_compare.h"

namespace driftgate {

namespace {

class Cursor {
 public:
  explicit Cursor(std::string_view line) : m_at(line.data()), m_end(line.data() + line.size()) {}

  const char* at() const { return m_at; }

  // Consumes `text` when the line continues with it.
  bool literal(std::string_view text) {
    if (static_cast<size_t>(m_end - m_at) < text.size() || !same_bytes(m_at, text.data(), text.size())) {
      return false;
    }
    m_at += text.size();
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

  // Numbers are scanned without end checks: read_canonical_check takes only lines that
  // end in '}', which stops every digit, sign and exponent loop below, and a number is
  // only ever read after a key, '[' or ',', none of which can be the line's last byte.
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  bool integer() {
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
    return m_at - digits <= 18 && m_at > start;
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

  // A number as the writer's put_number writes it: a JSON number or "nan", "inf", "-inf".
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
    auto result = std::from_chars(token.data(), token.data() + token.size(), value);
    if (result.ec != std::errc() || result.ptr != token.data() + token.size()) {
      return false;
    }
    return !(value == 0.0 && token.front() == '-');
  }

  // [integer, ...]
  bool integers() {
    if (!literal("[")) {
      return false;
    }
    if (literal("]")) {
      return true;
    }
    do {
      if (!integer()) {
        return false;
      }
    } while (literal(","));
    return literal("]");
  }

 private:
  bool non_finite() { return literal("\"nan\"") || literal("\"inf\"") || literal("\"-inf\""); }

  const char* m_at;
  const char* m_end;
};

// Name lookups over tables built once (to_string scans the taxonomy per call).
bool known_status(std::string_view name, CheckStatus& status) {
  static const std::vector<std::pair<std::string_view, CheckStatus>> k_names = [] {
    std::vector<std::pair<std::string_view, CheckStatus>> names;
    for (CheckStatus known : all_check_statuses()) {
      names.emplace_back(to_string(known), known);
    }
    return names;
  }();
  for (const auto& [known, value] : k_names) {
    if (name == known) {
      status = value;
      return true;
    }
  }
  return false;
}

bool known_rule(std::string_view name) {
  const auto& names = tolerance_rule_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool observed(Cursor& in) {
  std::string_view text;
  return in.literal("{\"device\":") && in.string(text) && in.literal(",\"dtype\":") && in.string(text) &&
         in.literal(",\"memory_format\":") && in.string(text) && in.literal(",\"shape\":") && in.integers() &&
         in.literal("}");
}

// The members of "stats" after "max_abs", in the writer's order: 'i' integer, 'n' number, 'a' integer array.
struct Member {
  std::string_view key;  // with the leading comma and the colon
  char kind;
};

constexpr Member k_stats_rest[] = {
    {",\"max_abs_index\":", 'a'},
    {",\"max_abs_reference\":", 'n'},
    {",\"max_abs_target\":", 'n'},
    {",\"max_rel\":", 'n'},
    {",\"max_rel_index\":", 'a'},
    {",\"rel_floor\":", 'n'},
    {",\"max_abs_reference_value\":", 'n'},
    {",\"nan_reference\":", 'i'},
    {",\"nan_target\":", 'i'},
    {",\"inf_reference\":", 'i'},
    {",\"inf_target\":", 'i'},
    {",\"min_atol\":", 'n'},
    {",\"min_rtol\":", 'n'},
    {",\"mean_abs\":", 'n'},
    {",\"p99_abs\":", 'n'},
    {",\"rmse\":", 'n'},
    {",\"cosine_similarity\":", 'n'},
    {",\"max_ulp\":", 'n'},
};

bool stats(Cursor& in, CheckDigest& digest) {
  if (!(in.literal("{\"numel\":") && in.integer() && in.literal(",\"mismatches\":") && in.integer() &&
        in.literal(",\"mismatch_fraction\":") && in.number() && in.literal(",\"max_abs\":") &&
        in.number(digest.max_abs))) {
    return false;
  }
  for (const Member& member : k_stats_rest) {
    if (!in.literal(member.key)) {
      return false;
    }
    bool ok = member.kind == 'i' ? in.integer() : member.kind == 'a' ? in.integers() : in.number();
    if (!ok) {
      return false;
    }
  }
  if (in.literal(",\"oracle\":")) {
    if (!(in.literal("{\"reference_max_abs\":") && in.number() && in.literal(",\"target_max_abs\":") && in.number() &&
          in.literal(",\"reference_rmse\":") && in.number() && in.literal(",\"target_rmse\":") && in.number() &&
          in.literal("}"))) {
      return false;
    }
  }
  if (in.literal(",\"reference_repeat_max_abs\":") && !in.number()) {
    return false;
  }
  if (in.literal(",\"target_repeat_max_abs\":") && !in.number()) {
    return false;
  }
  digest.has_stats = true;
  return in.literal("}");
}

// A tolerance value: put_raw_double's number (never a string: the reader's
// to_number would take "nan", but the writer writes null, which it refuses).
bool raw_number(Cursor& in) {
  std::string_view token;
  return in.number_token(token);
}

// The last member and the closing brace: ,"timings_ms":{"reference":N,"target":N}}
bool timings_tail(Cursor& in) {
  return in.literal(",\"timings_ms\":{\"reference\":") && in.number() && in.literal(",\"target\":") && in.number() &&
         in.literal("}}");
}

// A block (`"tolerance"`'s or an `"observed_*"` object) the same bytes as the one
// `memo` holds, read before by `read` and accepted, is accepted without reading it
// again: both end in '}', so what follows is checked as it would be. Otherwise `read`
// decides, and an accepted block becomes the memo. Neighbouring checks mostly share
// these blocks.
template <typename Read>
bool block(Cursor& in, std::string_view* memo, Read&& read) {
  if (memo != nullptr && !memo->empty() && in.literal(*memo)) {
    return true;
  }
  const char* start = in.at();
  if (!read()) {
    return false;
  }
  if (memo != nullptr) {
    *memo = std::string_view(start, static_cast<size_t>(in.at() - start));
  }
  return true;
}

// The canonical check at the start of `in` (see read_canonical_check); where it ends
// (past its closing brace), or null when it is in any other form.
const char* parse_canonical(Cursor& in, CheckDigest& digest, CanonicalMemo* memo) {
  const char* line = in.at();
  std::string_view input;
  std::string_view reference;
  std::string_view target;
  std::string_view status;
  std::string_view rule;
  // What a canonical line may leave unset (views and the status are set on the way).
  digest.record = nullptr;
  digest.has_stats = false;
  digest.max_abs = 0.0;
  digest.twin = CheckDigest::k_no_twin;
  // Strings refuse '\' (escapes are where readers differ: the full readers take every
  // line with one), and everything outside them is matched byte by byte, so a line
  // with an escape anywhere is never accepted here.
  if (!(in.literal("{\"type\":\"check\",\"id\":") && in.string(digest.id) && in.literal(",\"experiment\":") &&
        in.string(digest.experiment) && in.literal(",\"input\":") && in.string(input) &&
        in.literal(",\"reference\":") && in.string(reference) && in.literal(",\"target\":") && in.string(target) &&
        in.literal(",\"output\":") && in.string(digest.output) && in.literal(",\"status\":") && in.string(status) &&
        in.literal(",\"message\":") && in.string(digest.message) && in.literal(",\"tolerance\":"))) {
    return nullptr;
  }
  auto tolerance = [&in, &rule] {
    return in.literal("{\"rule\":") && in.string(rule) && known_rule(rule) && in.literal(",\"atol\":") &&
           raw_number(in) && in.literal(",\"rtol\":") && raw_number(in) && in.literal("}");
  };
  auto observed_block = [&in] { return observed(in); };
  if (!block(in, memo != nullptr ? &memo->tolerance : nullptr, tolerance) || !known_status(status, digest.status)) {
    return nullptr;
  }
  std::string_view* observed_memo = memo != nullptr ? &memo->observed : nullptr;
  if (in.literal(",\"observed_reference\":") && !block(in, observed_memo, observed_block)) {
    return nullptr;
  }
  if (in.literal(",\"observed_target\":") && !block(in, observed_memo, observed_block)) {
    return nullptr;
  }
  if (in.literal(",\"stats\":") && !stats(in, digest)) {
    return nullptr;
  }
  const char* timings = in.at();
  if (!timings_tail(in)) {
    return nullptr;
  }
  // make_check_id: experiment/input/reference~target/output.
  const std::string_view& id = digest.id;
  size_t at = 0;
  auto part = [&](std::string_view text, char after) {
    if (id.compare(at, text.size(), text) != 0) {
      return false;
    }
    at += text.size();
    if (after == '\0') {
      return at == id.size();
    }
    if (at >= id.size() || id[at] != after) {
      return false;
    }
    ++at;
    return true;
  };
  if (!(part(digest.experiment, '/') && part(input, '/') && part(reference, '~') && part(target, '/') &&
        part(digest.output, '\0'))) {
    return nullptr;
  }
  digest.line = std::string_view(line, static_cast<size_t>(in.at() - line));
  digest.timings_at = static_cast<uint32_t>(timings - line);
  return in.at();
}

// read_check_like over the start of `available`: where the line ends, or null.
const char* parse_like(std::string_view available, const CheckDigest& like, CheckDigest& digest) {
  size_t prefix = like.timings_at;
  if (prefix == 0 || like.record != nullptr || available.size() <= prefix ||
      std::memcmp(available.data(), like.line.data(), prefix) != 0) {  // long: libc's vector memcmp
    return nullptr;
  }
  Cursor tail(available.substr(prefix));
  if (!timings_tail(tail)) {
    return nullptr;
  }
  // The same bytes up to the timings: the same values. The message is viewed at its
  // offset in this line; id, experiment and output stay like's views (the same text).
  const char* line = available.data();
  digest = like;
  digest.message = std::string_view(line + (like.message.data() - like.line.data()), like.message.size());
  digest.line = std::string_view(line, static_cast<size_t>(tail.at() - line));
  digest.twin = CheckDigest::k_no_twin;
  return tail.at();
}

// For the *_at readers: the length of the first line of `text` when a parse of it
// stopped at that line's newline (`end`, null when it refused), else 0.
size_t first_line_read(std::string_view text, const char* end) {
  if (end == nullptr || end == text.data() + text.size() || *end != '\n') {
    return 0;
  }
  return static_cast<size_t>(end - text.data());
}

}  // namespace

bool read_check_like(std::string_view line, const CheckDigest& like, CheckDigest& digest) {
  // A line that ends in '}' stops every number scan (see Cursor).
  if (line.empty() || line.back() != '}') {
    return false;
  }
  CheckDigest read;
  const char* end = parse_like(line, like, read);
  if (end != line.data() + line.size()) {
    return false;
  }
  digest = read;
  return true;
}

size_t read_check_like_at(std::string_view text, const CheckDigest& like, CheckDigest& digest) {
  if (text.empty() || text.back() != '\n') {
    return 0;
  }
  CheckDigest read;
  size_t length = first_line_read(text, parse_like(text, like, read));
  if (length != 0) {
    digest = read;
  }
  return length;
}

bool read_canonical_check(std::string_view line, CheckDigest& digest) {
  // A canonical line ends in '}' (the number scanners rely on it).
  if (line.empty() || line.back() != '}') {
    return false;
  }
  Cursor in(line);
  return parse_canonical(in, digest, nullptr) == line.data() + line.size();
}

size_t read_canonical_check_at(std::string_view text, CheckDigest& digest, CanonicalMemo* memo) {
  // A '\n' at the end stops every number scan, as a line's closing '}' does.
  if (text.empty() || text.back() != '\n') {
    return 0;
  }
  Cursor in(text);
  return first_line_read(text, parse_canonical(in, digest, memo));
}

}  // namespace driftgate

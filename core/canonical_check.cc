// read_canonical_check (differ/run_digest.h): one pass over a check line that mirrors
// check_to_json_line (core/check_line.cc) member by member.
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
// Only max_abs is converted (correctly rounded like the readers' strtod: one exact IEEE
// operation where its digits allow, std::from_chars otherwise); a negative zero is left
// to the full readers, which read "-0" as 0.
//
// Neighbouring lines of a run repeat most of their bytes, so a memo of the last line
// read (CanonicalMemo) lets blocks and "stats" members that repeat byte for byte be
// compared instead of parsed (see stats()).
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check_json.h"
#include "core/error.h"
#include "core/record.h"
#include "core/text_compare.h"

namespace driftgate {

namespace {

// The value of a JSON number token (number_token's grammar) when the one IEEE operation
// m * 10^e or m / 10^-e, with the digits m and 10^|e| exact doubles, gives it (correctly
// rounded, as from_chars would); false where from_chars must decide.
bool exact_number(std::string_view token, double& value) {
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

class Cursor {
 public:
  explicit Cursor(std::string_view line) : m_at(line.data()), m_end(line.data() + line.size()) {}

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

  // Numbers are scanned without end checks: read_canonical_check takes only lines that
  // end in '}', which stops every digit, sign and exponent loop below, and a number is
  // only ever read after a key, '[' or ',', none of which can be the line's last byte.
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

// A string member's value, kept in `out` when given.
bool text(Cursor& in, std::string* out) {
  std::string_view view;
  if (!in.string(view)) {
    return false;
  }
  if (out != nullptr) {
    out->assign(view);
  }
  return true;
}

// An "observed_*" object; `out`, when given, gets its values.
bool observed(Cursor& in, ObservedTensor* out) {
  return in.literal("{\"device\":") && text(in, out != nullptr ? &out->device : nullptr) && in.literal(",\"dtype\":") &&
         text(in, out != nullptr ? &out->dtype : nullptr) && in.literal(",\"memory_format\":") &&
         text(in, out != nullptr ? &out->memory_format : nullptr) && in.literal(",\"shape\":") &&
         in.integers(out != nullptr ? &out->shape : nullptr) && in.literal("}");
}

// The members of "stats" in the writer's order, each with its key (the leading comma or
// brace and the colon), its kind ('i' integer, 'n' number, 'm' the number max_abs, 'a'
// integer array, 'o' the oracle object), whether the writer may leave it out, and the
// Tier1Stats field a full read puts it in.
struct Member {
  std::string_view key;
  char kind;
  bool optional;
  int64_t Tier1Stats::*integer = nullptr;
  double Tier1Stats::*number = nullptr;
  std::vector<int64_t> Tier1Stats::*integers = nullptr;
  std::optional<double> Tier1Stats::*optional_number = nullptr;
};

constexpr Member integer_member(std::string_view key, int64_t Tier1Stats::*field) {
  return {key, 'i', false, field, nullptr, nullptr, nullptr};
}
constexpr Member number_member(std::string_view key, double Tier1Stats::*field, char kind = 'n') {
  return {key, kind, false, nullptr, field, nullptr, nullptr};
}
constexpr Member integers_member(std::string_view key, std::vector<int64_t> Tier1Stats::*field) {
  return {key, 'a', false, nullptr, nullptr, field, nullptr};
}
constexpr Member optional_member(std::string_view key, std::optional<double> Tier1Stats::*field) {
  return {key, 'n', true, nullptr, nullptr, nullptr, field};
}

constexpr Member k_stats[] = {
    integer_member("{\"numel\":", &Tier1Stats::numel),
    integer_member(",\"mismatches\":", &Tier1Stats::mismatches),
    number_member(",\"mismatch_fraction\":", &Tier1Stats::mismatch_fraction),
    number_member(",\"max_abs\":", &Tier1Stats::max_abs, 'm'),
    integers_member(",\"max_abs_index\":", &Tier1Stats::max_abs_index),
    number_member(",\"max_abs_reference\":", &Tier1Stats::max_abs_reference),
    number_member(",\"max_abs_target\":", &Tier1Stats::max_abs_target),
    number_member(",\"max_rel\":", &Tier1Stats::max_rel),
    integers_member(",\"max_rel_index\":", &Tier1Stats::max_rel_index),
    number_member(",\"rel_floor\":", &Tier1Stats::rel_floor),
    number_member(",\"max_abs_reference_value\":", &Tier1Stats::max_abs_reference_value),
    integer_member(",\"nan_reference\":", &Tier1Stats::nan_reference),
    integer_member(",\"nan_target\":", &Tier1Stats::nan_target),
    integer_member(",\"inf_reference\":", &Tier1Stats::inf_reference),
    integer_member(",\"inf_target\":", &Tier1Stats::inf_target),
    number_member(",\"min_atol\":", &Tier1Stats::min_atol),
    number_member(",\"min_rtol\":", &Tier1Stats::min_rtol),
    number_member(",\"mean_abs\":", &Tier1Stats::mean_abs),
    number_member(",\"p99_abs\":", &Tier1Stats::p99_abs),
    number_member(",\"rmse\":", &Tier1Stats::rmse),
    number_member(",\"cosine_similarity\":", &Tier1Stats::cosine_similarity),
    number_member(",\"max_ulp\":", &Tier1Stats::max_ulp),
    {",\"oracle\":", 'o', true},
    optional_member(",\"reference_repeat_max_abs\":", &Tier1Stats::reference_repeat_max_abs),
    optional_member(",\"target_repeat_max_abs\":", &Tier1Stats::target_repeat_max_abs),
};
constexpr size_t k_stats_count = sizeof k_stats / sizeof k_stats[0];
constexpr size_t k_max_abs_member = 3;
static_assert(k_stats[k_max_abs_member].kind == 'm');
static_assert(k_stats_count == sizeof CanonicalMemo{}.stats_ends / sizeof(uint32_t));

// Member `M` of "stats" (its key and value) at the cursor. False when the line does not
// go on with it; an optional member that is not there is read as nothing. `full`, when
// given, gets the member's value (a full read; a digest converts max_abs only).
template <size_t M>
bool stats_member(Cursor& in, CheckDigest& digest, Tier1Stats* full) {
  constexpr Member member = k_stats[M];
  if (!in.literal(member.key)) {
    return member.optional;
  }
  if constexpr (member.kind == 'i') {
    return in.integer(full != nullptr ? &(full->*member.integer) : nullptr);
  } else if constexpr (member.kind == 'a') {
    return in.integers(full != nullptr ? &(full->*member.integers) : nullptr);
  } else if constexpr (member.kind == 'm') {
    if (!in.number(digest.max_abs)) {
      return false;
    }
    if (full != nullptr) {
      full->max_abs = digest.max_abs;
    }
    return true;
  } else if constexpr (member.kind == 'o') {
    if (full == nullptr) {
      return in.literal("{\"reference_max_abs\":") && in.number() && in.literal(",\"target_max_abs\":") &&
             in.number() && in.literal(",\"reference_rmse\":") && in.number() && in.literal(",\"target_rmse\":") &&
             in.number() && in.literal("}");
    }
    OracleErrors& oracle = full->oracle.emplace();
    return in.literal("{\"reference_max_abs\":") && in.number(oracle.reference_max_abs) &&
           in.literal(",\"target_max_abs\":") && in.number(oracle.target_max_abs) &&
           in.literal(",\"reference_rmse\":") && in.number(oracle.reference_rmse) && in.literal(",\"target_rmse\":") &&
           in.number(oracle.target_rmse) && in.literal("}");
  } else if constexpr (member.optional) {
    return full != nullptr ? in.number((full->*member.optional_number).emplace()) : in.number();
  } else {
    return full != nullptr ? in.number(full->*member.number) : in.number();
  }
}

using MemberReader = bool (*)(Cursor&, CheckDigest&, Tier1Stats*);

template <size_t... M>
constexpr std::array<MemberReader, sizeof...(M)> member_readers(std::index_sequence<M...>) {
  return {&stats_member<M>...};
}

constexpr std::array<MemberReader, k_stats_count> k_member_readers =
    member_readers(std::make_index_sequence<k_stats_count>());

// The "stats" object at the cursor, member by member. With a memo of the last one
// read, the members the two share byte for byte, each with the byte after it (the parse
// of a number looks at it), read as the memo's did and are not parsed again: the
// shared bytes are found sixteen at a time, and only the members where the two differ
// are parsed. Neighbouring checks mostly share most of their statistics. The memo's
// ends are replaced one by one as the members are read (each after its own is used).
// A full read (`full`: the values go there) takes no memo.
bool stats(Cursor& in, CheckDigest& digest, CanonicalMemo* memo, Tier1Stats* full) {
  uint32_t own_ends[k_stats_count];  // without a memo
  uint32_t* ends = memo != nullptr ? memo->stats_ends : own_ends;
  const char* known = memo != nullptr && !memo->stats.empty() ? memo->stats.data() : nullptr;
  const size_t known_size = known != nullptr ? memo->stats.size() : 0;
  const double known_max_abs = memo != nullptr ? memo->stats_max_abs : 0.0;
  const char* object = in.at();
  size_t known_begin = 0;  // where the memo's member `m` starts
  bool read = true;
  for (size_t m = 0; m < k_stats_count && read;) {
    if (known != nullptr) {
      // The memo's members from `m` on that lie, with the byte after them, in the bytes
      // both share from here on; as long as the memo's and these, one past the other.
      size_t here = static_cast<size_t>(in.at() - object);
      size_t shared =
          known_begin + shared_prefix(in.at(), known + known_begin, std::min(in.left(), known_size - known_begin));
      size_t from = known_begin;
      const size_t first = m;
      auto shift = static_cast<uint32_t>(here - from);  // from the memo's offsets to these (modulo 2^32)
      for (uint32_t end = ends[m]; end > known_begin && end < shared; end = ends[m]) {
        known_begin = end;
        ends[m] = end + shift;
        if (++m == k_stats_count) {
          break;
        }
      }
      if (first <= k_max_abs_member && k_max_abs_member < m) {
        digest.max_abs = known_max_abs;
      }
      in.skip(known_begin - from);
      if (m == k_stats_count) {
        break;
      }
    }
    size_t known_end = known != nullptr ? ends[m] : 0;
    read = k_member_readers[m](in, digest, full);
    ends[m] = static_cast<uint32_t>(in.at() - object);
    known_begin = known_end;
    ++m;
  }
  read = read && in.literal("}");
  if (memo != nullptr) {
    size_t size = static_cast<size_t>(in.at() - object);
    // A memo half replaced, or of an object too long for its ends, is no memo.
    memo->stats = read && size <= UINT32_MAX ? std::string_view(object, size) : std::string_view();
    memo->stats_max_abs = digest.max_abs;
  }
  if (!read) {
    return false;
  }
  digest.has_stats = true;
  return true;
}

// A tolerance value: put_raw_double's number (never a string: the reader's
// to_number would take "nan", but the writer writes null, which it refuses).
// `value`, when given, gets it converted (a negative zero refused, as by number()).
bool raw_number(Cursor& in, double* value = nullptr) {
  std::string_view token;
  return value != nullptr ? in.finite_number(*value) : in.number_token(token);
}

// The last member and the closing brace: ,"timings_ms":{"reference":N,"target":N}}, the
// interquartile ranges ,"reference_iqr":N,"target_iqr":N before the braces since they
// were measured (records written before have none). The values go to `out` when given
// (converted: a digest's timings), else they are only checked.
bool timings_tail(Cursor& in, CheckTimings* out = nullptr) {
  CheckTimings ignored;
  CheckTimings& values = out != nullptr ? *out : ignored;
  auto value = [&](double& into) { return out != nullptr ? in.number(into) : in.number(); };
  if (!(in.literal(",\"timings_ms\":{\"reference\":") && value(values.reference_ms) && in.literal(",\"target\":") &&
        value(values.target_ms))) {
    return false;
  }
  if (in.literal("}}")) {
    return true;
  }
  return in.literal(",\"reference_iqr\":") && value(values.reference_iqr_ms) && in.literal(",\"target_iqr\":") &&
         value(values.target_iqr_ms) && in.literal("}}");
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
// (past its closing brace), or null when it is in any other form. `full`, when given,
// gets every value of the line (read_canonical_record; no memo then): the one pass
// that reads digests also reads whole records, so the two cannot accept differently.
const char* parse_canonical(Cursor& in, CheckDigest& digest, CanonicalMemo* memo, CheckRecord* full = nullptr) {
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
  digest.timings = CheckTimings{};
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
  Tolerance* limits = full != nullptr ? &full->tolerance : nullptr;  // a full read's values go here
  auto tolerance = [&in, &rule, limits] {
    if (limits != nullptr) {
      limits->k = 0.0;
      limits->origin.clear();
    }
    // k and origin: written when the rule is oracle and when the origin is known.
    return in.literal("{\"rule\":") && in.string(rule) && known_rule(rule) && in.literal(",\"atol\":") &&
           raw_number(in, limits != nullptr ? &limits->atol : nullptr) && in.literal(",\"rtol\":") &&
           raw_number(in, limits != nullptr ? &limits->rtol : nullptr) &&
           (!in.literal(",\"k\":") || raw_number(in, limits != nullptr ? &limits->k : nullptr)) &&
           (!in.literal(",\"origin\":") || text(in, limits != nullptr ? &limits->origin : nullptr)) && in.literal("}");
  };
  auto observed_block = [&in] { return observed(in, nullptr); };
  if (full != nullptr) {
    memo = nullptr;  // it would skip values a full read converts
  }
  if (!block(in, memo != nullptr ? &memo->tolerance : nullptr, tolerance) || !known_status(status, digest.status)) {
    return nullptr;
  }
  std::string_view* observed_memo = memo != nullptr ? &memo->observed : nullptr;
  auto observed_member = [&](const char* key, std::optional<ObservedTensor>* into) {
    if (!in.literal(key)) {
      return true;  // optional
    }
    if (full != nullptr) {
      return observed(in, &into->emplace());
    }
    return block(in, observed_memo, observed_block);
  };
  if (!observed_member(",\"observed_reference\":", full != nullptr ? &full->observed_reference : nullptr) ||
      !observed_member(",\"observed_target\":", full != nullptr ? &full->observed_target : nullptr)) {
    return nullptr;
  }
  if (in.literal(",\"stats\":") && !stats(in, digest, memo, full != nullptr ? &full->stats.emplace() : nullptr)) {
    return nullptr;
  }
  const char* timings = in.at();
  if (memo != nullptr && !memo->timings.empty() && in.literal(memo->timings)) {
    // The same bytes as the last line's timings member, which was read: the same
    // values, and what follows the closing brace is checked by the caller as it would be.
    digest.timings = memo->timings_values;
  } else {
    if (!timings_tail(in, &digest.timings)) {
      return nullptr;
    }
    if (memo != nullptr) {
      memo->timings = std::string_view(timings, static_cast<size_t>(in.at() - timings));
      memo->timings_values = digest.timings;
    }
  }
  if (full != nullptr) {
    full->reference_ms = digest.timings.reference_ms;
    full->target_ms = digest.timings.target_ms;
    full->reference_iqr_ms = digest.timings.reference_iqr_ms;
    full->target_iqr_ms = digest.timings.target_iqr_ms;
  }
  // make_check_id: experiment/input/reference~target/output. The length first; then
  // every piece and separator lies inside the id.
  const std::string_view& id = digest.id;
  if (id.size() !=
      digest.experiment.size() + input.size() + reference.size() + target.size() + digest.output.size() + 4) {
    return nullptr;
  }
  const char* at = id.data();
  bool same_id = true;
  auto part = [&at, &same_id ](std::string_view text, char after) __attribute__((always_inline)) {
    same_id &= same_bytes(at, text.data(), text.size());
    at += text.size();
    if (after != '\0') {
      same_id &= *at == after;
      ++at;
    }
  };
  part(digest.experiment, '/');
  part(input, '/');
  part(reference, '~');
  part(target, '/');
  part(digest.output, '\0');
  if (!same_id) {
    return nullptr;
  }
  digest.line = std::string_view(line, static_cast<size_t>(in.at() - line));
  digest.timings_at = static_cast<uint32_t>(timings - line);
  if (full != nullptr) {
    full->id.assign(digest.id);
    full->experiment.assign(digest.experiment);
    full->input.assign(input);
    full->reference.assign(reference);
    full->target.assign(target);
    full->output.assign(digest.output);
    full->status = digest.status;
    full->message.assign(digest.message);
    full->tolerance.rule = parse_tolerance_rule(std::string(rule));
  }
  return in.at();
}

// read_check_like over the start of `available`: where the line ends, or null; its
// timings go to `timings`.
const char* like_end(std::string_view available, const CheckDigest& like, CheckTimings& timings) {
  size_t prefix = like.timings_at;
  if (prefix == 0 || like.record != nullptr || available.size() <= prefix ||
      std::memcmp(available.data(), like.line.data(), prefix) != 0) {  // long: libc's vector memcmp
    return nullptr;
  }
  Cursor tail(available.substr(prefix));
  if (!timings_tail(tail, &timings)) {
    return nullptr;
  }
  return tail.at();
}

// The digest of the line [line, end) that like_end accepted: the same bytes up to the
// timings, the same values (its own `timings`). The message is viewed at its offset in
// this line; id, experiment and output stay like's views (the same text).
void fill_like(const char* line, const char* end, const CheckDigest& like, const CheckTimings& timings,
               CheckDigest& digest) {
  digest = like;
  digest.timings = timings;
  digest.message = std::string_view(line + (like.message.data() - like.line.data()), like.message.size());
  digest.line = std::string_view(line, static_cast<size_t>(end - line));
  digest.twin = CheckDigest::k_no_twin;
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
  CheckTimings timings;
  const char* end = like_end(line, like, timings);
  if (end != line.data() + line.size()) {
    return false;
  }
  fill_like(line.data(), end, like, timings, digest);
  return true;
}

size_t read_check_like_at(std::string_view text, const CheckDigest& like, CheckDigest& digest) {
  if (text.empty() || text.back() != '\n') {
    return 0;
  }
  CheckTimings timings;
  size_t length = first_line_read(text, like_end(text, like, timings));
  if (length != 0) {
    fill_like(text.data(), text.data() + length, like, timings, digest);
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

bool read_canonical_record(std::string_view line, CheckRecord& check) {
  if (line.empty() || line.back() != '}') {
    return false;
  }
  check = CheckRecord{};
  CheckDigest digest;
  Cursor in(line);
  return parse_canonical(in, digest, nullptr, &check) == line.data() + line.size();
}

CheckTimings timings_of(const CheckDigest& check) {
  if (check.record != nullptr) {
    return {check.record->reference_ms, check.record->target_ms, check.record->reference_iqr_ms,
            check.record->target_iqr_ms};
  }
  if (check.timings_at == 0) {
    throw Error("internal: a check digest has neither a record nor a canonical line: " + std::string(check.id));
  }
  return check.timings;  // converted when the line was read (parse_canonical, like_end)
}

}  // namespace driftgate

// The fast reader (check_line_fast.h): one pass over a check line that mirrors
// check_to_json_line (core/check_line.cc) member by member.
//
// Why a second reader of one format: it is the diff's hot path. Mirroring the writer's
// layout lets it compare each key as a literal and scan each value once (~1 GB/s where
// nlohmann's DOM reads ~44 MB/s), and lines next to each other repeat most of their
// bytes, so a memo of the last line (CanonicalMemo) lets blocks and "stats" members that
// repeat byte for byte be compared instead of parsed (see stats()). What it costs: the
// layout of the top-level members, of "tolerance", "observed_*" and "timings_ms" is
// spelled here a second time, after the writer; the members of "stats" and "oracle" are
// not (they walk check_line.h's tables, the writer's). A change of the writer's layout
// that is not made here too only makes lines fall to the strict reader (slower, never
// wrong), and fuzz_check_line_fast and tests/core/check_line_test.cc (every edit of a
// line read by both) catch a reader that accepts otherwise than the strict one.
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
// A digest converts only max_abs and the timings (correctly rounded like the readers'
// strtod: one exact IEEE operation where its digits allow, std::from_chars otherwise); a
// negative zero is left to the full readers, which read "-0" as 0.
#include "core/check_line_fast.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check_line.h"
#include "core/error.h"
#include "core/json_cursor.h"
#include "core/text_compare.h"

namespace driftgate {

namespace {

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
bool text(JsonCursor& in, std::string* out) {
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
bool observed(JsonCursor& in, ObservedTensor* out) {
  return in.literal("{\"device\":") && text(in, out != nullptr ? &out->device : nullptr) && in.literal(",\"dtype\":") &&
         text(in, out != nullptr ? &out->dtype : nullptr) && in.literal(",\"memory_format\":") &&
         text(in, out != nullptr ? &out->memory_format : nullptr) && in.literal(",\"shape\":") &&
         in.integers(out != nullptr ? &out->shape : nullptr) && in.literal("}");
}

// The key of member `M` of a table as the writer writes it: `{"name":` for an object's
// first member, `,"name":` after; built at compile time, so each is one literal compare.
template <size_t Size>
constexpr std::array<char, Size> member_key(std::string_view name, bool first) {
  std::array<char, Size> key{};
  key[0] = first ? '{' : ',';
  key[1] = '"';
  for (size_t i = 0; i < name.size(); ++i) {
    key[2 + i] = name[i];
  }
  key[Size - 2] = '"';
  key[Size - 1] = ':';
  return key;
}

template <const auto& Table, size_t M>
struct MemberKey {
  static constexpr std::string_view name = Table[M].name;
  static constexpr std::array<char, name.size() + 4> bytes = member_key<name.size() + 4>(name, M == 0);
  static constexpr std::string_view text{bytes.data(), bytes.size()};
};

constexpr size_t max_abs_member() {
  for (size_t m = 0; m < k_stats_member_count; ++m) {
    if (k_stats_members[m].number == &Tier1Stats::max_abs) {
      return m;
    }
  }
  return k_stats_member_count;
}
constexpr size_t k_max_abs_member = max_abs_member();  // a digest converts this one member
static_assert(k_max_abs_member < k_stats_member_count);
static_assert(!k_stats_members[0].optional(), "the writer's first stats member opens the object");

// The "oracle" object; `out`, when given, gets its values.
template <size_t... I>
bool oracle_object(JsonCursor& in, OracleErrors* out, std::index_sequence<I...>) {
  return ((in.literal(MemberKey<k_oracle_members, I>::text) &&
           (out != nullptr ? in.number(out->*k_oracle_members[I].field) : in.number())) &&
          ...) &&
         in.literal("}");
}

// Member `M` of "stats" (its key and value) at the cursor. False when the line does not
// go on with it; an optional member that is not there is read as nothing. `full`, when
// given, gets the member's value (a full read; a digest converts max_abs only).
template <size_t M>
bool stats_member(JsonCursor& in, CheckDigest& digest, Tier1Stats* full) {
  using Kind = StatsMember::Kind;
  constexpr StatsMember member = k_stats_members[M];
  if (!in.literal(MemberKey<k_stats_members, M>::text)) {
    return member.optional();
  }
  if constexpr (M == k_max_abs_member) {
    if (!in.number(digest.max_abs)) {
      return false;
    }
    if (full != nullptr) {
      full->max_abs = digest.max_abs;
    }
    return true;
  } else if constexpr (member.kind == Kind::k_integer) {
    return in.integer(full != nullptr ? &(full->*member.integer) : nullptr);
  } else if constexpr (member.kind == Kind::k_integers) {
    return in.integers(full != nullptr ? &(full->*member.integers) : nullptr);
  } else if constexpr (member.kind == Kind::k_oracle) {
    return oracle_object(in, full != nullptr ? &(full->*member.oracle).emplace() : nullptr,
                         std::make_index_sequence<std::size(k_oracle_members)>());
  } else if constexpr (member.kind == Kind::k_optional_number) {
    return full != nullptr ? in.number((full->*member.optional_number).emplace()) : in.number();
  } else {
    return full != nullptr ? in.number(full->*member.number) : in.number();
  }
}

using MemberReader = bool (*)(JsonCursor&, CheckDigest&, Tier1Stats*);

template <size_t... M>
constexpr std::array<MemberReader, sizeof...(M)> member_readers(std::index_sequence<M...>) {
  return {&stats_member<M>...};
}

constexpr std::array<MemberReader, k_stats_member_count> k_member_readers =
    member_readers(std::make_index_sequence<k_stats_member_count>());

// The "stats" object at the cursor, member by member. With a memo of the last one
// read, the members the two share byte for byte, each with the byte after it (the parse
// of a number looks at it), read as the memo's did and are not parsed again: the
// shared bytes are found sixteen at a time, and only the members where the two differ
// are parsed. Neighbouring checks mostly share most of their statistics. The memo's
// ends are replaced one by one as the members are read (each after its own is used).
// A full read (`full`: the values go there) takes no memo.
bool stats(JsonCursor& in, CheckDigest& digest, CanonicalMemo* memo, Tier1Stats* full) {
  uint32_t own_ends[k_stats_member_count];  // without a memo
  uint32_t* ends = memo != nullptr ? memo->stats_ends : own_ends;
  const char* known = memo != nullptr && !memo->stats.empty() ? memo->stats.data() : nullptr;
  const size_t known_size = known != nullptr ? memo->stats.size() : 0;
  const double known_max_abs = memo != nullptr ? memo->stats_max_abs : 0.0;
  const char* object = in.at();
  size_t known_begin = 0;  // where the memo's member `m` starts
  bool read = true;
  for (size_t m = 0; m < k_stats_member_count && read;) {
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
        if (++m == k_stats_member_count) {
          break;
        }
      }
      if (first <= k_max_abs_member && k_max_abs_member < m) {
        digest.max_abs = known_max_abs;
      }
      in.skip(known_begin - from);
      if (m == k_stats_member_count) {
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

// A tolerance value: put_json_double's number (never a string: the reader's
// to_number would take "nan", but the writer writes null, which it refuses).
// `value`, when given, gets it converted (a negative zero refused, as by number()).
bool raw_number(JsonCursor& in, double* value = nullptr) {
  std::string_view token;
  return value != nullptr ? in.finite_number(*value) : in.number_token(token);
}

// The last member and the closing brace: ,"timings_ms":{"reference":N,"target":N}}, the
// interquartile ranges ,"reference_iqr":N,"target_iqr":N before the braces since they
// were measured (records written before have none). The values go to `out` when given
// (converted: a digest's timings), else they are only checked.
bool timings_tail(JsonCursor& in, CheckTimings* out = nullptr) {
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
bool block(JsonCursor& in, std::string_view* memo, Read&& read) {
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
const char* parse_canonical(JsonCursor& in, CheckDigest& digest, CanonicalMemo* memo, CheckRecord* full = nullptr) {
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
  if (!(in.literal(k_check_line_prefix) && in.string(digest.id) && in.literal(",\"experiment\":") &&
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
  JsonCursor tail(available.substr(prefix));
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
  // A line that ends in '}' stops every number scan (see JsonCursor).
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
  JsonCursor in(line);
  return parse_canonical(in, digest, nullptr) == line.data() + line.size();
}

size_t read_canonical_check_at(std::string_view text, CheckDigest& digest, CanonicalMemo* memo) {
  // A '\n' at the end stops every number scan, as a line's closing '}' does.
  if (text.empty() || text.back() != '\n') {
    return 0;
  }
  JsonCursor in(text);
  return first_line_read(text, parse_canonical(in, digest, memo));
}

bool read_canonical_record(std::string_view line, CheckRecord& check) {
  if (line.empty() || line.back() != '}') {
    return false;
  }
  check = CheckRecord{};
  CheckDigest digest;
  JsonCursor in(line);
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

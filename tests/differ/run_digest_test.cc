// The digest reader (differ/run_digest.h) held to the strict reader it stands in for:
//   - read_canonical_check accepts a line only where the strict per-line reader accepts
//     it with the same id, experiment, output, status, message and max_abs: over
//     random records as the writer writes them, and over thousands of edits of such lines;
//   - read_run_digest reads every file read_run_file reads, to the same values, and
//     refuses every file it refuses with exactly its message;
//   - the inline comparisons of core/text_compare.h answer as std::string_view does.
#include "differ/run_digest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/check_line_fast.h"
#include "core/error.h"
#include "core/record.h"
#include "core/text_compare.h"
#include "differ/id_order.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
constexpr double k_inf = std::numeric_limits<double>::infinity();

// ---- the strict readers ------------------------------------------------------

// NaN is NaN; otherwise the same value with the same sign (0.0 and -0.0 differ).
bool same_number(double a, double b) {
  return std::isnan(a) ? std::isnan(b) : (a == b && std::signbit(a) == std::signbit(b));
}

// `line` as the strict reader alone reads it (parse_check_line_strict: no fast path),
// or nullopt where it refuses the line.
std::optional<CheckRecord> strict_check(std::string_view line) {
  try {
    return parse_check_line_strict(line);
  } catch (const Error&) {
    return std::nullopt;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

// `line` as parse_run_dom_only reads it (every line through nlohmann), inside the
// smallest run built around the experiment, output and status `digest` claims for it;
// nullopt where the file is refused (had the DOM reader read other values, the summary
// would not match them).
std::optional<CheckRecord> dom_check(const std::string& line, const CheckDigest& digest) {
  RunHeader header;
  header.tool_version = "0.1.0";
  header.commit.sha = "0123456789abcdef0123456789abcdef01234567";
  header.environment.keyed["schema"] = "1";
  ExperimentHeader experiment;
  experiment.name = std::string(digest.experiment);
  experiment.inputs = {"i"};
  experiment.reference = "r";
  experiment.targets = {"t"};
  header.experiments.push_back(experiment);
  RunSummary summary = summarize_keys(header, 1, [&](size_t) {
    return CheckKey{digest.experiment, digest.output, digest.status};
  });
  std::istringstream in(header_to_json_line(header) + "\n" + line + "\n" + summary_to_json_line(summary) + "\n");
  try {
    RunFile run = parse_run_dom_only(in, "one.jsonl");
    if (run.checks.size() != 1) {
      return std::nullopt;
    }
    return run.checks[0];
  } catch (const Error&) {
    return std::nullopt;
  }
}

::testing::AssertionResult same_values(const CheckDigest& digest, const CheckRecord& check) {
  std::string differs;
  if (digest.id != check.id) {
    differs += " id ('" + std::string(digest.id) + "' vs '" + check.id + "')";
  }
  if (digest.experiment != check.experiment) {
    differs += " experiment";
  }
  if (digest.output != check.output) {
    differs += " output";
  }
  if (digest.status != check.status) {
    differs += std::string(" status (") + to_string(digest.status) + " vs " + to_string(check.status) + ")";
  }
  if (digest.message != check.message) {
    differs += " message";
  }
  if (digest.has_stats != check.stats.has_value()) {
    differs += " has_stats";
  } else if (check.stats && !same_number(digest.max_abs, check.stats->max_abs)) {
    std::ostringstream values;
    values.precision(17);
    values << " max_abs (" << digest.max_abs << " vs " << check.stats->max_abs << ")";
    differs += values.str();
  }
  // The timings, converted while the line was read (the latency table reads them).
  const CheckTimings timings = timings_of(digest);
  const std::pair<double, double> pairs[] = {{timings.reference_ms, check.reference_ms},
                                             {timings.target_ms, check.target_ms},
                                             {timings.reference_iqr_ms, check.reference_iqr_ms},
                                             {timings.target_iqr_ms, check.target_iqr_ms}};
  for (const auto& [read, expected] : pairs) {
    if (!same_number(read, expected)) {
      std::ostringstream values;
      values.precision(17);
      values << " timings (" << read << " vs " << expected << ")";
      differs += values.str();
    }
  }
  if (differs.empty()) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "differs in" << differs;
}

// Where read_canonical_check accepts `line`, both strict readers accept it with the
// same values; returns whether it accepted.
bool expect_canonical_only_if_strict(const std::string& line) {
  CheckDigest digest;
  if (!read_canonical_check(line, digest)) {
    return false;
  }
  EXPECT_EQ(digest.line.data(), line.data()) << "the line is kept as a view into the input";
  EXPECT_EQ(digest.line.size(), line.size());
  EXPECT_EQ(digest.record, nullptr);
  std::optional<CheckRecord> strict = strict_check(line);
  if (!strict) {
    ADD_FAILURE() << "read_canonical_check accepts a line the strict reader refuses:\n" << line;
    return true;
  }
  EXPECT_TRUE(same_values(digest, *strict)) << "against the per-line reader:\n" << line;
  std::optional<CheckRecord> dom = dom_check(line, digest);
  if (!dom) {
    ADD_FAILURE() << "parse_run_dom_only refuses (or reads otherwise) a line read_canonical_check accepts:\n" << line;
    return true;
  }
  EXPECT_TRUE(same_values(digest, *dom)) << "against the DOM reader:\n" << line;
  return true;
}

// ---- random records ----------------------------------------------------------

// Random check records. "Ordinary" ones are what a real run writes nearly always:
// printable ASCII without '"' or '\', finite numbers below 1e100 in magnitude (two
// exponent digits), integers of at most 18 digits, no tier-2/3 or mitigation members,
// a max_abs that is not -0.0: lines the canonical reader must take.
class RecordMaker {
 public:
  explicit RecordMaker(uint32_t seed) : m_random(seed) {}

  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(m_random); }
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }

  std::string text(bool ordinary, size_t max_length) {
    static const char* const k_pieces[] = {"\"",      "\\",        "\t",          "\n",           "\x01",
                                           "\x1f",    "\x7f",      "caf\xc3\xa9", "\xe2\x9c\x93", "\xf0\x9f\x98\x80",
                                           "\\u0041", "</script>", "\r"};
    size_t length = chance(10) ? 0 : below(max_length + 1);
    std::string out;
    while (out.size() < length) {
      if (!ordinary && chance(8)) {
        out += k_pieces[below(std::size(k_pieces))];
      } else {
        char c = static_cast<char>(0x20 + below(0x7f - 0x20));
        if (c != '"' && c != '\\') {
          out += c;
        }
      }
    }
    return out;
  }

  double number(bool ordinary, bool allow_negative_zero = true) {
    static const double k_ordinary[] = {0.0,       1.0,   -1.0,          0.5,       1e-5, 1.3e-6,   2.5e-3,
                                        0.007,     3.0,   123456789.125, 0.1 + 0.2, 1e15, 1e16,     1e21,
                                        -1e21,     1e-99, 9.99e98,       -4.5e-90,  1e20, 0.999999, 9007199254740993.0,
                                        1.0 / 3.0, -7.25, 65504.0};
    // clang-format off
    static const double k_special[] = {
        k_nan, k_inf, -k_inf, 1e-300, 1e300, -1e300, 5e-324, -5e-324, std::numeric_limits<double>::max(),
        -std::numeric_limits<double>::max(), std::numeric_limits<double>::min(), 1e100, 1e-100, -1e-100,
        2.2250738585072009e-308
    };
    // clang-format on
    if (allow_negative_zero && chance(4)) {
      return -0.0;
    }
    if (!ordinary && chance(30)) {
      return k_special[below(std::size(k_special))];
    }
    if (chance(40)) {
      return k_ordinary[below(std::size(k_ordinary))];
    }
    double sign = chance(30) ? -1.0 : 1.0;
    double mantissa = std::uniform_real_distribution<double>(1.0, 10.0)(m_random);
    int exponent = ordinary ? static_cast<int>(below(181)) - 90 : static_cast<int>(below(629)) - 320;
    double value = sign * mantissa * std::pow(10.0, exponent);
    if (ordinary && (!std::isfinite(value) || std::fabs(value) >= 1e99 || std::fabs(value) < 1e-90)) {
      return sign * mantissa;
    }
    return value;
  }

  int64_t integer(bool ordinary) {
    if (!ordinary && chance(20)) {
      static const int64_t k_special[] = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                                          1000000000000000000, -1000000000000000000, 999999999999999999};
      return k_special[below(std::size(k_special))];
    }
    switch (below(4)) {
      case 0:
        return 0;
      case 1:
        return static_cast<int64_t>(below(1000));
      case 2:
        return -static_cast<int64_t>(below(1000));
      default:
        return std::uniform_int_distribution<int64_t>(-999999999999999999, 999999999999999999)(m_random);
    }
  }

  std::vector<int64_t> integers(bool ordinary) {
    std::vector<int64_t> values(below(5));
    for (auto& value : values) {
      value = integer(ordinary);
    }
    return values;
  }

  ObservedTensor observed(bool ordinary) {
    return ObservedTensor{text(ordinary, 8), text(ordinary, 10), text(ordinary, 14), integers(ordinary)};
  }

  Tier1Stats stats(bool ordinary) {
    Tier1Stats stats;
    stats.numel = integer(ordinary);
    stats.mismatches = integer(ordinary);
    stats.mismatch_fraction = number(ordinary);
    stats.max_abs = number(ordinary, !ordinary);
    stats.max_abs_index = integers(ordinary);
    stats.max_abs_reference = number(ordinary);
    stats.max_abs_target = number(ordinary);
    stats.max_rel = number(ordinary);
    stats.max_rel_index = integers(ordinary);
    stats.rel_floor = number(ordinary);
    stats.max_abs_reference_value = number(ordinary);
    stats.nan_reference = integer(ordinary);
    stats.nan_target = integer(ordinary);
    stats.inf_reference = integer(ordinary);
    stats.inf_target = integer(ordinary);
    stats.min_atol = number(ordinary);
    stats.min_rtol = number(ordinary);
    stats.mean_abs = number(ordinary);
    stats.p99_abs = number(ordinary);
    stats.rmse = number(ordinary);
    stats.cosine_similarity = number(ordinary);
    stats.max_ulp = number(ordinary);
    if (chance(30)) {
      stats.oracle = OracleErrors{number(ordinary), number(ordinary), number(ordinary), number(ordinary)};
    }
    if (chance(30)) {
      stats.reference_repeat_max_abs = number(ordinary);
    }
    if (chance(30)) {
      stats.target_repeat_max_abs = number(ordinary);
    }
    return stats;
  }

  // A check; unless `valid` or `ordinary`, its tolerance may be non-finite (written as null) and its
  // id may not match its parts, which the strict reader refuses.
  CheckRecord check(bool ordinary, bool valid, size_t serial) {
    CheckRecord check;
    check.experiment = text(ordinary, 12);
    check.input = text(ordinary, 12) + "#" + std::to_string(serial);  // unique ids within a run
    check.reference = text(ordinary, 10);
    check.target = text(ordinary, 10);
    check.output = text(ordinary, 14);
    check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
    if (!ordinary && !valid && chance(5)) {
      check.id += "x";  // an id that does not match its parts
    }
    check.status = all_check_statuses()[below(all_check_statuses().size())];
    check.message = chance(30) ? "" : text(ordinary, 60);
    check.tolerance.rule = parse_tolerance_rule(tolerance_rule_names()[below(tolerance_rule_names().size())]);
    check.tolerance.atol = valid ? std::fabs(number(true)) : number(ordinary);
    check.tolerance.rtol = valid ? std::fabs(number(true)) : number(ordinary);
    if (chance(30)) {
      check.tolerance.k = valid ? std::fabs(number(true)) + 1.0 : number(ordinary);
    }
    if (chance(40)) {
      check.tolerance.origin = text(ordinary, 30);
    }
    if (chance(50)) {
      check.observed_reference = observed(ordinary);
    }
    if (chance(50)) {
      check.observed_target = observed(ordinary);
    }
    if (chance(70)) {
      check.stats = stats(ordinary);
    }
    if (!ordinary && chance(10)) {
      Localization localization;
      localization.alignment = "position";
      localization.layers = 2;
      localization.observed = 2;
      localization.coverage = 1.0;
      localization.first_divergent = "head/aten::linear#1";
      localization.profile = {{"stem/aten::conv2d#1", LayerStatus::k_ok, 1e-7, 2e-8, 1e-4, 0.0},
                              {"head/aten::linear#1", LayerStatus::k_divergent, 0.02, 1e-8, 1e-4, 3.5}};
      check.localization = localization;
    }
    if (!ordinary && chance(10)) {
      check.task = TaskResult{"classification", "top1+top5", {{"top1_agreement", 0.75}}, {"input 3 flipped"}};
    }
    if (!ordinary && chance(10)) {
      Mitigation mitigation;
      MitigationChoice choice;
      choice.restores = "tier1";
      choice.fallbacks = {"fp32"};
      choice.backend = "cpu_bf16+fp32";
      choice.latency_ms = 2.5;
      choice.reference_equivalent = true;
      mitigation.choices = {choice};
      mitigation.target_ms = 1.25;
      mitigation.reference_ms = 2.25;
      mitigation.tried = 3;
      mitigation.message = "fp32 restores agreement";
      check.mitigation = mitigation;
    }
    // Converted by the digest reader (for the latency table) as max_abs is, so an
    // ordinary line has no negative zero in them either (the strict reader decides those).
    check.reference_ms = number(ordinary, !ordinary);
    check.target_ms = number(ordinary, !ordinary);
    return check;
  }

 private:
  std::mt19937 m_random;
};

// ---- read_canonical_check ----------------------------------------------------

TEST(CanonicalCheck, TakesOrdinaryWriterLinesAndOnlyWhatTheStrictReaderReadsTheSame) {
  RecordMaker maker(20261201);
  int ordinary_lines = 0;
  int accepted = 0;
  int refused = 0;
  for (size_t i = 0; i < 4000; ++i) {
    bool ordinary = i % 3 == 0;
    CheckRecord check = maker.check(ordinary, !ordinary && i % 3 == 1, i);
    std::string line = check_to_json_line(check);
    bool canonical = expect_canonical_only_if_strict(line);
    if (ordinary) {
      ++ordinary_lines;
      EXPECT_TRUE(canonical) << "the fast path is not taken for an ordinary line:\n" << line;
    }
    if (canonical) {
      ++accepted;
      CheckDigest digest;
      read_canonical_check(line, digest);
      EXPECT_TRUE(same_values(digest, check)) << "against the record written:\n" << line;
    } else {
      ++refused;
    }
  }
  EXPECT_GT(ordinary_lines, 1000);
  EXPECT_GE(accepted, ordinary_lines);
  EXPECT_GT(refused, 1500);
  RecordProperty("accepted", accepted);
  RecordProperty("refused", refused);
}

// Edge values (NaN, infinities, -0.0, huge and tiny), one line each, in members of every kind.
TEST(CanonicalCheck, EdgeValuesAgreeWithTheStrictReader) {
  const double k_values[] = {0.0,    -0.0,   k_nan,  k_inf,         -k_inf,
                             1e-300, 1e300,  -1e300, 1e-99,         -1e-99,
                             1e99,   5e-324, -2.5,   123456789.125, 1e21,
                             1e-7,   1e16,   -1e16,  0.1,           1e-5,
                             -3e-5,  1e-4,   1e22,   1e23,          std::numeric_limits<double>::max()};
  RecordMaker maker(3);
  int accepted = 0;
  for (double value : k_values) {
    for (int member = 0; member < 6; ++member) {
      CheckRecord check = maker.check(true, true, 0);
      check.stats = maker.stats(true);
      switch (member) {
        case 0:
          check.stats->max_abs = value;
          break;
        case 1:
          check.stats->max_abs_target = value;
          break;
        case 2:
          check.stats->oracle = OracleErrors{value, value, value, value};
          break;
        case 3:
          check.stats->target_repeat_max_abs = value;
          break;
        case 4:
          check.reference_ms = value;
          break;
        default:
          check.tolerance.atol = value;
          break;
      }
      std::string line = check_to_json_line(check);
      bool canonical = expect_canonical_only_if_strict(line);
      accepted += canonical ? 1 : 0;
      // The common values are taken by the fast path.
      if (member == 0 && (value == 0.0 && !std::signbit(value))) {
        EXPECT_TRUE(canonical) << line;
      }
      if (member == 0 && (std::isnan(value) || std::isinf(value) || value == -2.5 || value == 1e-99)) {
        EXPECT_TRUE(canonical) << line;
      }
    }
  }
  EXPECT_GT(accepted, 60);
}

// Numbers in forms the writer never writes, in max_abs (the one member converted):
// accepted or not, never read otherwise than the strict reader reads them.
// Numbers in every form a hand may write, valid JSON or not.
// clang-format off
const char* const k_number_forms[] = {
      "-0", "-0.0", "-0e0", "-0.000e-5", "0", "0.0", "0e0", "00", "01", "-01", "1.", ".5", "-.5", "+1", "1e", "1e+",
      "1e-", "1E5", "1e+05", "1e-05", "1e5", "1e99", "1e100", "1e-100", "1e999", "1e-999", "1e001", "2.5E-3",
      "-1e99", "1.0e+01", "0.5e1", "1.50", "100000.0", "1_0", "0x10", "Infinity", "NaN", "-Infinity", "\"nan\"",
      "\"inf\"", "\"-inf\"", "\"NaN\"", "\"Infinity\"", "\"1\"", "\"-nan\"", "\"+inf\"", "null", "true", "false",
      "[]", "{}", "[1]", "18446744073709551615", "18446744073709551616", "9223372036854775807",
      "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "123456789012345678901234",
      "1234567890123456789012345", "0.000000000000000000000001e-99", "0.0000000000000000000000001",
      "999999999999999999999999e99", "4.9406564584124654e-324", "2.4703282292062328e-324", "1.7976931348623157e308",
      "17976931348623157e292", "0.1e-98", " 1", "1 ", "1,", "\"\"", "\"0.25\""
};
// clang-format on

TEST(CanonicalCheck, NumberFormsInMaxAbsAgreeWithTheStrictReader) {
  RecordMaker maker(11);
  CheckRecord check = maker.check(true, true, 0);
  check.stats = maker.stats(true);
  check.stats->max_abs = 0.25;
  std::string line = check_to_json_line(check);
  const std::string key = "\"max_abs\":0.25,";
  size_t at = line.find(key);
  ASSERT_NE(at, std::string::npos) << line;
  int accepted = 0;
  for (const char* form : k_number_forms) {
    std::string edited = line;
    edited.replace(at + key.size() - 5, 4, form);
    accepted += expect_canonical_only_if_strict(edited) ? 1 : 0;
  }
  EXPECT_GT(accepted, 20);
}

// The timings are converted by the digest reader too (the latency table reads them):
// each form in each of the four, read to the strict reader's values (same_values) or
// left to it. The common forms are taken.
TEST(CanonicalCheck, NumberFormsInTimingsAgreeWithTheStrictReader) {
  RecordMaker maker(12);
  CheckRecord check = maker.check(true, true, 0);
  check.reference_ms = check.target_ms = check.reference_iqr_ms = check.target_iqr_ms = 0.25;
  const std::string line = check_to_json_line(check);
  int accepted = 0;
  for (const char* key : {"{\"reference\":", ",\"target\":", ",\"reference_iqr\":", ",\"target_iqr\":"}) {
    const size_t at = line.find(key, line.find("\"timings_ms\":"));
    ASSERT_NE(at, std::string::npos) << line;
    const size_t value = at + std::strlen(key);
    ASSERT_EQ(line.compare(value, 4, "0.25"), 0) << line;
    for (const char* form : k_number_forms) {
      std::string edited = line;
      edited.replace(value, 4, form);
      const bool canonical = expect_canonical_only_if_strict(edited);
      accepted += canonical ? 1 : 0;
      const std::string_view common(form);
      if (common == "0" || common == "0.0" || common == "1e-05" || common == "\"nan\"" || common == "\"inf\"" ||
          common == "1e99" || common == "100000.0") {
        EXPECT_TRUE(canonical) << edited;
      }
    }
  }
  EXPECT_GT(accepted, 80);
}

// Edits of canonical lines: bytes replaced, deleted, inserted, lines cut, tokens retyped,
// members duplicated, removed or swapped. Whatever the canonical reader accepts, the
// strict reader reads to the same values.
TEST(CanonicalCheck, NoEditMakesItAcceptWhatTheStrictReaderRefusesOrReadsOtherwise) {
  RecordMaker maker(424242);
  std::mt19937 random(99);
  auto below = [&random](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  std::vector<std::string> lines;
  for (size_t i = 0; lines.size() < 40; ++i) {
    CheckRecord check = maker.check(true, true, i);
    if (i % 2 == 0) {
      check.stats = maker.stats(true);
      check.stats->oracle = OracleErrors{1e-7, 2e-7, 3e-8, 4e-8};
      check.stats->reference_repeat_max_abs = 0.0;
      check.stats->target_repeat_max_abs = 1.5e-6;
      check.observed_reference = maker.observed(true);
      check.observed_target = maker.observed(true);
    }
    std::string line = check_to_json_line(check);
    CheckDigest digest;
    ASSERT_TRUE(read_canonical_check(line, digest)) << line;
    lines.push_back(line);
  }
  // clang-format off
  static const std::string k_bytes[] = {
      "\\", std::string(1, '\0'), "\x01", "\t", "\n", "\r", " ", "\x7f", "\x80", "\xc3", "\xff", "\"", ",", ":", "{",
      "}", "[", "]", "0", "1", "9", "-", "+", ".", "e", "E", "a", "x", "n", "/", "~"
  };
  static const std::string k_inserts[] = {
      "\\\\", "\\\"", "\\u0041", "\\ud800", " ", "-0", "1e100", "1e-100", "00", ".5", "1.", "\"x\"", "\"\"", "null",
      "[]", "{}", "1e5", "-", "\xc3\xa9", "\xe2\x9c\x93", "\xed\xa0\x80", "\"nan\"", ",\"id\":\"x\"",
      ",\"stats\":{}", ",\"numel\":1", "\xef\xbb\xbf", "\r\n"
  };
  static const std::string k_tokens[] = {
      "-0", "-0.0", "0", "00", "01", "1.", ".5", "+1", "1e100", "1e-100", "1e99", "1E5", "1e+05", "1.0", "1e5",
      "\"1\"", "\"nan\"", "\"NaN\"", "\"inf\"", "\"-inf\"", "null", "true", "[]", "{}", "[1.5]", "[-0]", "[1,]",
      "[,1]", "\"x\"", "\"\"", "18446744073709551615", "9223372036854775808", "999999999999999999",
      "1000000000000000000", "-999999999999999999", "-1000000000000000000", "123456789012345678901234",
      "1234567890123456789012345", "\"\\u0041\"", "\"\xc3\xa9\"", "\"a\\\"b\"", "{\"a\":1}"
  };
  // clang-format on
  // The value spans (after ':', '[' or ',' outside strings) of `text`.
  auto value_spans = [](const std::string& text) {
    std::vector<std::pair<size_t, size_t>> spans;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (in_string) {
        in_string = c != '"';
        continue;
      }
      if (c == '"') {
        if (i > 0 && text[i - 1] == ':') {
          size_t end = text.find('"', i + 1);
          spans.emplace_back(i, end + 1 - i);
        }
        in_string = true;
      } else if ((c == ':' || c == '[' || c == ',') && i + 1 < text.size() &&
                 (text[i + 1] == '-' || (text[i + 1] >= '0' && text[i + 1] <= '9'))) {
        size_t end = i + 1;
        while (end < text.size() && std::strchr("-+.eE0123456789", text[end]) != nullptr) {
          ++end;
        }
        spans.emplace_back(i + 1, end - i - 1);
      }
    }
    return spans;
  };
  // The members `,"key":value` at the top level and one level down (value spans to the matching delimiter).
  auto members = [](const std::string& text) {
    std::vector<std::pair<size_t, size_t>> found;
    for (size_t at = text.find(",\""); at != std::string::npos; at = text.find(",\"", at + 1)) {
      size_t colon = text.find("\":", at + 2);
      if (colon == std::string::npos) {
        break;
      }
      size_t end = colon + 2;
      int depth = 0;
      bool in_string = false;
      for (; end < text.size(); ++end) {
        char c = text[end];
        if (in_string) {
          in_string = c != '"';
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (depth-- == 0) {
            break;
          }
        } else if (c == ',' && depth == 0) {
          break;
        }
      }
      found.emplace_back(at, end - at);
    }
    return found;
  };

  size_t edits = 0;
  size_t accepted = 0;
  auto check_edit = [&](const std::string& edited) {
    ++edits;
    accepted += expect_canonical_only_if_strict(edited) ? 1 : 0;
  };
  // Systematic: every value retyped, every member duplicated, removed, or moved to the end.
  for (size_t l = 0; l < 6; ++l) {
    const std::string& line = lines[l];
    for (auto [at, length] : value_spans(line)) {
      for (const std::string& token : k_tokens) {
        std::string edited = line;
        edited.replace(at, length, token);
        check_edit(edited);
      }
    }
    for (auto [at, length] : members(line)) {
      std::string member = line.substr(at, length);
      std::string duplicated = line;
      duplicated.insert(at + length, member);
      check_edit(duplicated);
      std::string removed = line;
      removed.erase(at, length);
      check_edit(removed);
      std::string moved = removed;
      moved.insert(moved.size() - 1, member);
      check_edit(moved);
    }
  }
  // Random: a few thousand single edits of every kind.
  for (int round = 0; round < 6000; ++round) {
    std::string edited = lines[below(lines.size())];
    switch (below(7)) {
      case 0:  // a byte replaced
        edited.replace(below(edited.size()), 1, k_bytes[below(std::size(k_bytes))]);
        break;
      case 1:  // a byte removed
        edited.erase(below(edited.size()), 1);
        break;
      case 2:  // a byte inserted
        edited.insert(below(edited.size() + 1), k_bytes[below(std::size(k_bytes))]);
        break;
      case 3:  // cut
        edited.resize(below(edited.size()));
        break;
      case 4:  // a text inserted
        edited.insert(below(edited.size() + 1), k_inserts[below(std::size(k_inserts))]);
        break;
      case 5: {  // a value retyped
        auto spans = value_spans(edited);
        auto [at, length] = spans[below(spans.size())];
        edited.replace(at, length, k_tokens[below(std::size(k_tokens))]);
        break;
      }
      default: {  // a random byte replaced, twice
        for (int n = 0; n < 2; ++n) {
          edited[below(edited.size())] = static_cast<char>(below(256));
        }
        break;
      }
    }
    check_edit(edited);
  }
  RecordProperty("edits", static_cast<int>(edits));
  RecordProperty("accepted_edits", static_cast<int>(accepted));
  EXPECT_GT(edits, 8000u);
  // Edits that keep the line canonical (a digit, a letter of a text) do happen: the
  // comparison above is not vacuous.
  EXPECT_GT(accepted, 300u);
}

// ---- whole files ---------------------------------------------------------------

// A consistent run over `checks`: header experiments derived from them, summary recomputed.
RunFile run_of(std::vector<CheckRecord> checks) {
  RunFile run;
  run.header.tool_version = "0.1.0";
  run.header.commit = {"0123456789abcdef0123456789abcdef01234567", "main", false};
  run.header.environment.keyed = {{"libtorch", "2.1.0"}, {"schema", "1"}};
  run.header.environment.info = {{"cpu_model", "test cpu"}};
  std::set<std::string> names;
  for (const auto& check : checks) {
    names.insert(check.experiment);
  }
  for (const auto& name : names) {
    ExperimentHeader experiment;
    experiment.name = name;
    experiment.config_path = "configs/" + name + ".yaml";
    experiment.config_hash = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    experiment.model_path = "models/" + name + ".pt";
    experiment.model_hash = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    std::set<std::string> inputs;
    for (const auto& check : checks) {
      if (check.experiment == name) {
        inputs.insert(check.input);
      }
    }
    experiment.inputs.assign(inputs.begin(), inputs.end());
    experiment.reference = "cpu_fp32";
    experiment.targets = {"onednn_off"};
    experiment.tolerance_origin = "default";
    run.header.experiments.push_back(experiment);
  }
  run.checks = std::move(checks);
  run.summary = summarize(run.header, run.checks);
  return run;
}

std::string text_of(const RunFile& run) {
  std::ostringstream out;
  write_run(out, run);
  return out.str();
}

// A check of experiment `experiment` whose id is built from its parts.
CheckRecord plain_check(const std::string& input, CheckStatus status, double max_abs,
                        const std::string& experiment = "exp", const std::string& message = "") {
  CheckRecord check;
  check.experiment = experiment;
  check.input = input;
  check.reference = "cpu_fp32";
  check.target = "onednn_off";
  check.output = "out";
  check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
  check.status = status;
  check.message = message;
  Tier1Stats stats;
  stats.numel = 10;
  stats.max_abs = max_abs;
  check.stats = stats;
  check.reference_ms = 1.5;
  check.target_ms = 2.25;
  return check;
}

// Checks of every kind a real run holds: ordinary ones, escaped and non-ASCII texts,
// 3-digit exponents and -0.0, tier-2 localization, tier-3 task results, mitigations.
std::vector<CheckRecord> varied_checks(uint32_t seed, size_t count) {
  RecordMaker maker(seed);
  std::vector<CheckRecord> checks;
  for (size_t i = 0; checks.size() < count; ++i) {
    bool ordinary = i % 2 == 0;
    CheckRecord check = maker.check(ordinary, true, i);
    if (!strict_check(check_to_json_line(check))) {
      continue;  // e.g. an experiment of a name the header cannot hold: not a file read_run_file takes
    }
    checks.push_back(check);
  }
  checks.push_back(plain_check("quote\"and\\backslash", CheckStatus::k_fail_numeric, 0.5, "exp", "tab\there \"q\""));
  checks.push_back(plain_check("caf\xc3\xa9", CheckStatus::k_pass, 1e-300, "exp", "caf\xc3\xa9 \xe2\x9c\x93"));
  checks.push_back(plain_check("negative_zero", CheckStatus::k_pass, -0.0));
  checks.push_back(plain_check("nan", CheckStatus::k_fail_nonfinite, k_nan));
  CheckRecord localized = plain_check("localized", CheckStatus::k_fail_numeric, 0.03, "exp", "diverges");
  localized.localization = Localization{};
  localized.localization->alignment = "boundary";
  localized.localization->layers = 1;
  localized.localization->profile = {{"head/aten::linear#1", LayerStatus::k_divergent, 0.02, 1e-8, 1e-4, 3.5}};
  checks.push_back(localized);
  CheckRecord task = plain_check("task", CheckStatus::k_fail_task, 0.0, "exp", "top-1 flipped");
  task.output = "task:classification";
  task.id = make_check_id(task.experiment, task.input, task.reference, task.target, task.output);
  task.stats.reset();
  task.task = TaskResult{"classification", "top1+top5", {{"top1_agreement", 0.5}}, {"flip at input 0"}};
  checks.push_back(task);
  CheckRecord mitigated = plain_check("mitigated", CheckStatus::k_fail_numeric, 0.1);
  MitigationChoice selective{"tier3", {},   {"features.7.block.0.2", "classifier.3"}, "cpu_bf16+fp32_modules_4", 1.5,
                             0.25,    false};
  mitigated.mitigation = Mitigation{{selective}, 1.0, 2.0, 2, "", "2 submodules in float32 restore"};
  checks.push_back(mitigated);
  return checks;
}

// `digest` holds the checks of `run` with their values, each once, and id_order sorts them.
// (Which order `checks` itself is in is id_order's business: the diff and the proposed
// baseline walk them through it.)
void expect_same_run(const RunDigest& digest, const RunFile& run, const std::string& what, size_t* canonical = nullptr,
                     size_t* full = nullptr) {
  EXPECT_EQ(header_to_json_line(digest.header), header_to_json_line(run.header)) << what;
  EXPECT_EQ(summary_to_json_line(digest.summary), summary_to_json_line(run.summary)) << what;
  ASSERT_EQ(digest.checks.size(), run.checks.size()) << what;
  ASSERT_EQ(digest.id_order.size(), digest.checks.size()) << what;
  std::vector<const CheckRecord*> by_id;
  for (const auto& check : run.checks) {
    by_id.push_back(&check);
  }
  std::sort(by_id.begin(), by_id.end(), [](const CheckRecord* a, const CheckRecord* b) { return a->id < b->id; });
  std::vector<bool> seen(digest.checks.size(), false);
  for (size_t i = 0; i < digest.id_order.size(); ++i) {
    size_t index = digest.id_order[i];
    ASSERT_LT(index, digest.checks.size()) << what;
    ASSERT_FALSE(seen[index]) << what << ": id_order names check " << index << " twice";
    seen[index] = true;
    const CheckDigest& check = digest.checks[index];
    const CheckRecord& record = *by_id[i];
    EXPECT_TRUE(same_values(check, record)) << what << ", check " << record.id;
    EXPECT_EQ(check_line_of(check), check_to_json_line(record)) << what << ", check " << record.id;
    EXPECT_NE(check.line.empty(), check.record == nullptr) << what << ", check " << record.id;
    if (canonical != nullptr && check.record == nullptr) {
      ++*canonical;
    }
    if (full != nullptr && check.record != nullptr) {
      ++*full;
    }
  }
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// Inserts blank lines before the first line, between every two lines and after the last.
std::string with_blank_lines(const std::string& text) {
  std::string out = "\n\n";
  for (char c : text) {
    out += c;
    if (c == '\n') {
      out += '\n';
    }
  }
  return out + "\n";
}

std::string with_crlf(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += '\r';
    }
    out += c;
  }
  return out;
}

TEST(RunDigest, ReadsEveryFileReadRunFileReadsToTheSameValues) {
  test::TempDir dir;
  std::vector<CheckRecord> checks = varied_checks(5, 300);
  RunFile as_written = run_of(checks);
  RunFile sorted = as_written;
  std::sort(sorted.checks.begin(), sorted.checks.end(),
            [](const CheckRecord& a, const CheckRecord& b) { return a.id < b.id; });
  RunFile reversed = sorted;
  std::reverse(reversed.checks.begin(), reversed.checks.end());
  RunFile empty = run_of({});
  RunFile plain = run_of({plain_check("a", CheckStatus::k_pass, 1e-6), plain_check("b", CheckStatus::k_pass, 2e-6)});
  std::string text = text_of(as_written);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"as_written", text},
      {"sorted", text_of(sorted)},
      {"reversed", text_of(reversed)},
      {"no_checks", text_of(empty)},
      {"plain", text_of(plain)},
      {"blank_lines", with_blank_lines(text)},
      {"crlf", with_crlf(text)},
      {"no_final_newline", text.substr(0, text.size() - 1)},
  };
  size_t canonical = 0;
  size_t full = 0;
  for (const auto& [name, content] : files) {
    std::string path = dir / (name + ".jsonl");
    write_text(path, content);
    RunFile strict = read_run_file(path);
    expect_same_run(read_run_digest(path), strict, name, &canonical, &full);
    expect_same_run(digest_run_text(content, name), strict, name + " (in memory)");
    // digest_of and digest_view of the parsed run: views into its records.
    auto shared = std::make_shared<const RunFile>(strict);
    RunDigest of = digest_of(shared);
    expect_same_run(of, strict, name + " (digest_of)");
    for (const auto& check : of.checks) {
      EXPECT_NE(check.record, nullptr);
    }
    expect_same_run(digest_view(strict), strict, name + " (digest_view)");
  }
  // Both paths are taken: the canonical reader for the ordinary lines, the full reader for the rest.
  EXPECT_GT(canonical, 300u);
  EXPECT_GT(full, 300u);
}

// A digest keeps what its views point into alive: a file's bytes after it is removed, a
// run given to digest_of after the caller lets go of it.
TEST(RunDigest, ViewsOutliveTheFileAndTheCallersRun) {
  test::TempDir dir;
  std::string path = dir / "run.jsonl";
  RunFile run = run_of(varied_checks(8, 40));
  write_text(path, text_of(run));
  RunDigest digest = read_run_digest(path);
  std::filesystem::remove(path);
  write_text(path, "overwritten\n");
  expect_same_run(digest, run, "after the file was replaced");
  auto shared = std::make_shared<const RunFile>(run);
  RunDigest of = digest_of(shared);
  shared.reset();
  expect_same_run(of, run, "digest_of after the caller let go");
  RunDigest moved = std::move(of);
  expect_same_run(moved, run, "moved");
}

// What a reader makes of a file: its values (checks by id), or the message of the error it throws.
std::string outcome_of(const std::function<RunFile()>& read) {
  try {
    RunFile run = read();
    std::string out = "ok\n" + header_to_json_line(run.header) + "\n" + summary_to_json_line(run.summary) + "\n";
    out += "checks " + std::to_string(run.checks.size()) + "\n";
    std::sort(run.checks.begin(), run.checks.end(),
              [](const CheckRecord& a, const CheckRecord& b) { return a.id < b.id; });
    for (const auto& check : run.checks) {
      std::ostringstream line;
      line.precision(17);
      line << check.id << "|" << check.experiment << "|" << check.output << "|" << to_string(check.status) << "|"
           << check.message << "|" << check.stats.has_value() << "|" << (check.stats ? check.stats->max_abs : 0.0)
           << "|" << std::signbit(check.stats ? check.stats->max_abs : 0.0) << "|" << check_to_json_line(check);
      out += line.str() + "\n";
    }
    return out;
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

std::string digest_outcome_of(const std::function<RunDigest()>& read) {
  try {
    RunDigest digest = read();
    std::string out = "ok\n" + header_to_json_line(digest.header) + "\n" + summary_to_json_line(digest.summary) + "\n";
    out += "checks " + std::to_string(digest.checks.size()) + "\n";
    if (digest.id_order.size() != digest.checks.size()) {
      out += "id_order holds " + std::to_string(digest.id_order.size()) + "\n";
    }
    for (size_t index : digest.id_order) {
      const CheckDigest& check = digest.checks.at(index);
      // The check as the strict reader reads the line the digest gives for it.
      std::optional<CheckRecord> reread = strict_check(check_line_of(check));
      std::ostringstream line;
      line.precision(17);
      line << check.id << "|" << check.experiment << "|" << check.output << "|" << to_string(check.status) << "|"
           << check.message << "|" << check.has_stats << "|" << check.max_abs << "|" << std::signbit(check.max_abs)
           << "|" << (reread ? check_to_json_line(*reread) : "(line refused: " + check_line_of(check) + ")");
      out += line.str() + "\n";
    }
    return out;
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

// Both readers on `text` as a file at `path` and in memory: the same values or the same error.
void expect_same_outcome(const std::string& path, const std::string& text, const std::string& what) {
  write_text(path, text);
  std::string strict = outcome_of([&] { return read_run_file(path); });
  EXPECT_EQ(digest_outcome_of([&] { return read_run_digest(path); }), strict) << what << ":\n" << text;
  std::string in_memory = outcome_of([&] {
    std::istringstream in(text);
    return parse_run(in, "note:run");
  });
  EXPECT_EQ(digest_outcome_of([&] { return digest_run_text(text, "note:run"); }), in_memory) << what;
}

TEST(RunDigest, RefusesWhatReadRunFileRefusesWithItsMessage) {
  test::TempDir dir;
  RunFile run = run_of({plain_check("a", CheckStatus::k_pass, 1e-6), plain_check("b", CheckStatus::k_pass, 2e-6),
                        plain_check("c", CheckStatus::k_fail_numeric, 0.5, "exp", "elements outside"),
                        plain_check("d", CheckStatus::k_pass, 0.0, "other")});
  std::string header = header_to_json_line(run.header);
  std::vector<std::string> lines;
  for (const auto& check : run.checks) {
    lines.push_back(check_to_json_line(check));
  }
  std::string summary = summary_to_json_line(run.summary);
  auto join = [](const std::vector<std::string>& parts) {
    std::string text;
    for (const auto& part : parts) {
      text += part + "\n";
    }
    return text;
  };
  std::string good = join({header, lines[0], lines[1], lines[2], lines[3], summary});
  // The same run with its checks in another order and a duplicated id, summarized over what it holds.
  RunFile duplicated = run;
  duplicated.checks.push_back(run.checks[0]);
  std::string duplicated_summary = summary_to_json_line(summarize(duplicated.header, duplicated.checks));
  RunFile fewer = run;
  fewer.checks.pop_back();
  std::string fewer_summary = summary_to_json_line(summarize(fewer.header, fewer.checks));
  // A line the full reader reads (a localization) with the id of a canonical one.
  CheckRecord localized = run.checks[1];
  localized.localization = Localization{};
  localized.localization->alignment = "position";
  std::string localized_line = check_to_json_line(localized);
  std::string bad_status = lines[1];
  bad_status.replace(bad_status.find("\"pass\""), 6, "\"passed\"");
  std::string bad_id = lines[1];
  bad_id.replace(bad_id.find("exp/b/"), 6, "exp/x/");
  std::string wrong_type = lines[1];
  wrong_type.replace(wrong_type.find("\"numel\":10"), 10, "\"numel\":\"10\"");
  std::string bad_schema = header;
  bad_schema.replace(bad_schema.find("\"schema\":1"), 10, "\"schema\":99");
  std::string bad_key = header;
  bad_key.replace(bad_key.find("\"env_key\":\"") + 11, 4, "ffff");
  std::string with_nul = lines[1];
  with_nul[with_nul.find("cpu_fp32")] = '\0';

  const std::vector<std::pair<std::string, std::string>> broken = {
      {"empty file", ""},
      {"blank lines only", "\n\n\n"},
      {"header only", join({header})},
      {"missing summary", join({header, lines[0], lines[1]})},
      {"truncated last line", good.substr(0, good.size() - 20)},
      {"truncated last line, no newline", good.substr(0, good.size() - 1 - summary.size() / 2)},
      {"cut inside a check line", good.substr(0, good.find(lines[2]) + lines[2].size() / 2)},
      {"cut inside a check line, then the summary",
       join({header, lines[0], lines[1].substr(0, lines[1].size() - 3), lines[2], lines[3], summary})},
      {"duplicated id, summary of what is there",
       join({header, lines[0], lines[1], lines[2], lines[3], lines[0], duplicated_summary})},
      {"duplicated id, the original summary",
       join({header, lines[0], lines[1], lines[2], lines[3], lines[0], summary})},
      {"duplicated id, adjacent", join({header, lines[0], lines[0], lines[1], lines[2], lines[3], duplicated_summary})},
      {"duplicated id, unsorted", join({header, lines[3], lines[0], lines[2], lines[1], lines[0], duplicated_summary})},
      {"duplicated id, one read in full",
       join({header, lines[0], lines[1], lines[2], lines[3], localized_line, duplicated_summary})},
      {"summary count mismatch", join({header, lines[0], lines[1], lines[2], lines[3], fewer_summary})},
      {"a second header", join({header, lines[0], header, lines[1], lines[2], lines[3], summary})},
      {"a second header at the end", join({header, lines[0], lines[1], lines[2], lines[3], summary, header})},
      {"a line after the summary", join({header, lines[0], lines[1], lines[2], summary, lines[3]})},
      {"two summaries", join({header, lines[0], lines[1], lines[2], lines[3], summary, summary})},
      {"a summary in the middle", join({header, lines[0], lines[1], summary, lines[2], lines[3], summary})},
      {"a corrupt check line in the middle", join({header, lines[0], "{not json", lines[2], lines[3], summary})},
      {"an unknown status", join({header, lines[0], bad_status, lines[2], lines[3], summary})},
      {"an id that does not match its parts", join({header, lines[0], bad_id, lines[2], lines[3], summary})},
      {"a string where an integer belongs", join({header, lines[0], wrong_type, lines[2], lines[3], summary})},
      {"a NUL byte in a check line", join({header, lines[0], with_nul, lines[2], lines[3], summary})},
      {"blank lines before a corrupt line",
       "\n\n" + header + "\n\n" + lines[0] + "\n\n\n" + lines[1] + "\n\n{\"type\":\n" + lines[3] + "\n" + summary},
      {"a line of spaces", join({header, lines[0], "   ", lines[1], lines[2], lines[3], summary})},
      {"a carriage return alone", join({header, lines[0], "\r", lines[1], lines[2], lines[3], summary})},
      {"a carriage return after the summary", join({header, lines[0], lines[1], lines[2], lines[3], summary, "\r"})},
      {"spaces before the header", join({"  ", header, lines[0], lines[1], lines[2], lines[3], summary})},
      {"the first line is a check", join({lines[0], header, lines[1], lines[2], lines[3], summary})},
      {"checks without a header", join({lines[0], lines[1], lines[2], lines[3], summary})},
      {"summary only", join({summary})},
      {"an unknown schema", join({bad_schema, lines[0], lines[1], lines[2], lines[3], summary})},
      {"an env_key that does not match", join({bad_key, lines[0], lines[1], lines[2], lines[3], summary})},
      {"an unknown line type", join({header, lines[0], "{\"type\":\"note\"}", lines[1], lines[2], lines[3], summary})},
      {"an array line", join({header, lines[0], "[1]", lines[1], lines[2], lines[3], summary})},
      {"the summary is not a summary", join({header, lines[0], lines[1], lines[2], lines[3], "{\"type\":\"end\"}"})},
      {"the summary's by_status mistyped", join({header, lines[0], lines[1], lines[2], lines[3],
                                                 summary.substr(0, summary.find("\"pass\":") + 7) + "\"3\"" +
                                                     summary.substr(summary.find("\"pass\":") + 8)})},
  };
  for (const auto& [what, text] : broken) {
    std::string path = dir / "broken.jsonl";
    write_text(path, text);
    std::string strict;
    try {
      read_run_file(path);
      ADD_FAILURE() << what << ": read_run_file accepts it; the case is not broken";
      continue;
    } catch (const Error& e) {
      strict = e.what();
    }
    EXPECT_EQ(strict.rfind(path, 0), 0u) << what << ": " << strict;
    try {
      read_run_digest(path);
      ADD_FAILURE() << what << ": read_run_digest accepts what read_run_file refuses (" << strict << ")";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), strict) << what;
    }
    std::string in_memory;
    try {
      std::istringstream in(text);
      parse_run(in, "note:run");
    } catch (const Error& e) {
      in_memory = e.what();
    }
    try {
      digest_run_text(text, "note:run");
      ADD_FAILURE() << what << ": digest_run_text accepts what parse_run refuses (" << in_memory << ")";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), in_memory) << what;
    }
  }
  // Paths that are not run files at all.
  for (const std::string& path : {dir / "does-not-exist.jsonl", dir.path()}) {
    EXPECT_EQ(digest_outcome_of([&] { return read_run_digest(path); }), outcome_of([&] { return read_run_file(path); }))
        << path;
  }
}

// Every prefix of a small file, and random edits of its bytes and lines: the digest
// reader accepts exactly what read_run_file accepts, to the same values, and otherwise
// throws its message.
TEST(RunDigest, CutsAndEditsOfAWholeFileAreJudgedAsReadRunFileJudgesThem) {
  test::TempDir dir;
  std::string path = dir / "edited.jsonl";
  std::vector<CheckRecord> checks = {plain_check("a", CheckStatus::k_pass, 1e-6),
                                     plain_check("b", CheckStatus::k_fail_numeric, 0.5, "exp", "outside"),
                                     plain_check("c", CheckStatus::k_pass, 0.0, "other")};
  CheckRecord escaped = plain_check("d", CheckStatus::k_pass, 1e-300, "exp", "q\"uote");
  checks.push_back(escaped);
  std::string text = text_of(run_of(checks));
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    expect_same_outcome(path, text.substr(0, cut), "cut at " + std::to_string(cut));
  }
  std::vector<std::string> lines;
  std::istringstream split(text);
  for (std::string line; std::getline(split, line);) {
    lines.push_back(line);
  }
  std::mt19937 random(17);
  auto below = [&random](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  static const char k_bytes[] = {'\n', '\\', '"', ',', '0', '1', '9', '-', 'e', '.', ' ', '\r', '{', '}', 'x'};
  for (int round = 0; round < 1500; ++round) {
    std::string edited;
    switch (below(4)) {
      case 0: {  // a byte replaced
        edited = text;
        edited[below(edited.size())] = k_bytes[below(std::size(k_bytes))];
        break;
      }
      case 1: {  // a byte removed or inserted
        edited = text;
        size_t at = below(edited.size());
        if (below(2) == 0) {
          edited.erase(at, 1);
        } else {
          edited.insert(at, 1, k_bytes[below(std::size(k_bytes))]);
        }
        break;
      }
      default: {  // lines duplicated, removed or swapped
        std::vector<std::string> shuffled = lines;
        size_t i = below(shuffled.size());
        size_t j = below(shuffled.size());
        switch (below(3)) {
          case 0:
            shuffled.insert(shuffled.begin() + static_cast<std::ptrdiff_t>(j), shuffled[i]);
            break;
          case 1:
            shuffled.erase(shuffled.begin() + static_cast<std::ptrdiff_t>(i));
            break;
          default:
            std::swap(shuffled[i], shuffled[j]);
            break;
        }
        for (const auto& line : shuffled) {
          edited += line + "\n";
        }
        break;
      }
    }
    expect_same_outcome(path, edited, "edit " + std::to_string(round));
  }
}

// ---- the reader's memos, spares and sort -------------------------------------------

// What a digest read from a line says (its values, and where its views lie in the line).
std::string describe(const CheckDigest& digest, std::string_view text) {
  std::ostringstream out;
  out.precision(17);
  auto at = [&text](std::string_view view) { return std::to_string(view.data() - text.data()); };
  out << digest.id << "@" << at(digest.id) << "|" << digest.experiment << "@" << at(digest.experiment) << "|"
      << digest.output << "@" << at(digest.output) << "|" << to_string(digest.status) << "|" << digest.message << "@"
      << at(digest.message) << "|" << digest.has_stats << "|" << digest.max_abs << "|" << std::signbit(digest.max_abs)
      << "|" << digest.line.size() << "@" << at(digest.line) << "|" << digest.timings_at;
  const CheckTimings timings = timings_of(digest);
  out << "|" << timings.reference_ms << "|" << timings.target_ms << "|" << timings.reference_iqr_ms << "|"
      << timings.target_iqr_ms;
  return out.str();
}

// Neighbouring lines that share some of their "stats" members byte for byte and differ
// in others (in length too, shifting what follows), with optional members coming and
// going, number forms edited, stats absent, and broken lines between: read with the
// memo, each reads as it reads alone, and as the strict reader reads it.
TEST(CanonicalCheck, TheMemoReadsEveryLineAsItReadsAlone) {
  RecordMaker maker(77);
  std::mt19937 random(78);
  auto below = [&random](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  CheckRecord base = plain_check("img", CheckStatus::k_pass, 1e-7);
  base.stats = maker.stats(true);
  base.stats->max_abs = 1e-7;
  base.stats->oracle = OracleErrors{1e-7, 2e-7, 3e-8, 4e-8};
  base.stats->reference_repeat_max_abs = 0.0;
  base.observed_reference = ObservedTensor{"cpu", "float32", "contiguous", {1, 1000}};
  base.observed_target = base.observed_reference;
  // Values that share a prefix with others ("0.5", "0.55", "5"...), so that a member
  // can agree with the memo's up to the byte after it, or all but that byte.
  static const double k_values[] = {0.5, 0.55, 5.0, 0.0, 1e-7, 1.5e-7, 2e-7, 1e-5, 3.0, 30.0, -0.5, 1e-99};
  static const char* const k_forms[] = {"1e-07", "1e-7", "1E-07", "0.0000001", "1.0e-7", "-0.0", "1e-007", "\"nan\""};
  // An optional member present, then absent, then present with another value.
  auto toggle = [&](std::optional<double>& member) {
    if (member) {
      member.reset();
    } else {
      member = k_values[below(std::size(k_values))];
    }
  };
  std::vector<std::string> lines;
  for (size_t i = 0; i < 3000; ++i) {
    CheckRecord check = base;
    check.input = "img" + std::to_string(i);  // a unique id, longer now and then
    check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
    Tier1Stats& stats = *check.stats;
    for (size_t edits = below(4); edits > 0; --edits) {
      switch (below(12)) {
        case 0:
          stats.max_abs = k_values[below(std::size(k_values))];
          break;
        case 1:
          stats.max_abs_index = {static_cast<int64_t>(below(12)), static_cast<int64_t>(below(1200))};
          break;
        case 2:
          stats.max_abs_target = k_values[below(std::size(k_values))];
          break;
        case 3:
          stats.numel = static_cast<int64_t>(below(2000));
          break;
        case 4:
          stats.max_ulp = k_values[below(std::size(k_values))];
          break;
        case 5:
          if (stats.oracle) {
            stats.oracle.reset();
          } else {
            stats.oracle = OracleErrors{k_values[below(std::size(k_values))], 2e-7, 3e-8, 4e-8};
          }
          break;
        case 6:
          toggle(stats.reference_repeat_max_abs);
          break;
        case 7:
          toggle(stats.target_repeat_max_abs);
          break;
        case 8:
          stats.rel_floor = k_values[below(std::size(k_values))];
          break;
        case 9:
          check.reference_ms = k_values[below(std::size(k_values))];
          break;
        case 10:
          base = check;  // the next lines start from this one
          break;
        default:
          stats.mean_abs = k_values[below(std::size(k_values))];
          break;
      }
    }
    if (below(40) == 0) {
      check.stats.reset();
    }
    std::string line = check_to_json_line(check);
    if (below(15) == 0) {  // another form of max_abs, or a broken byte
      size_t at = line.find("\"max_abs\":");
      if (at != std::string::npos && below(2) == 0) {
        size_t value = at + 10;
        size_t end = line.find(',', value);
        line.replace(value, end - value, k_forms[below(std::size(k_forms))]);
      } else {
        line[below(line.size())] = "x,.-\\0e\"}"[below(9)];
      }
    }
    lines.push_back(line);
  }
  std::string text;
  for (const auto& line : lines) {
    text += line + "\n";
  }
  CanonicalMemo memo;
  size_t at = 0;
  size_t accepted = 0;
  size_t remembered = 0;
  for (const auto& line : lines) {
    std::string_view rest = std::string_view(text).substr(at);
    CheckDigest with;
    CheckDigest without;
    size_t length = read_canonical_check_at(rest, with, &memo);
    ASSERT_EQ(length, read_canonical_check_at(rest, without)) << line;
    CheckDigest alone;
    ASSERT_EQ(length != 0, read_canonical_check(line, alone)) << line;
    if (length != 0) {
      ASSERT_EQ(describe(with, rest), describe(without, rest)) << line;
      accepted += expect_canonical_only_if_strict(line) ? 1 : 0;
    }
    remembered += memo.stats.empty() ? 0 : 1;
    at += line.size() + 1;
  }
  EXPECT_GT(accepted, 2500u);
  EXPECT_GT(remembered, 2500u);  // the memo is there to read the next line with
}

// A baseline read against its run reads the memory the run's read lent it, as often as
// it is read, from as many threads, and reads as it reads alone; so does a run read
// against a baseline with more or fewer checks than it lent room for.
TEST(RunDigest, ReadsAgainstALikeThatLendsItsRoomReadAsTheyReadAlone) {
  test::TempDir dir;
  std::vector<CheckRecord> checks;
  for (size_t i = 0; i < 3000; ++i) {
    checks.push_back(plain_check("in" + std::to_string(i),
                                 i % 7 == 0 ? CheckStatus::k_fail_numeric : CheckStatus::k_pass,
                                 1e-7 * static_cast<double>(i % 13), i % 3 == 0 ? "exp" : "other"));
  }
  RunFile run = run_of(checks);  // in the order written: "in10" before "in2"
  RunFile sorted = run;
  std::sort(sorted.checks.begin(), sorted.checks.end(),
            [](const CheckRecord& a, const CheckRecord& b) { return a.id < b.id; });
  RunFile fewer = run_of(std::vector<CheckRecord>(sorted.checks.begin(), sorted.checks.begin() + 500));
  std::vector<CheckRecord> more_checks = sorted.checks;
  for (size_t i = 0; i < 4000; ++i) {
    more_checks.push_back(plain_check("zz" + std::to_string(100000 + i), CheckStatus::k_pass, 0.0));
  }
  RunFile more = run_of(more_checks);
  std::string run_path = dir / "run.jsonl";
  std::string sorted_path = dir / "sorted.jsonl";
  std::string fewer_path = dir / "fewer.jsonl";
  std::string more_path = dir / "more.jsonl";
  write_text(run_path, text_of(run));
  write_text(sorted_path, text_of(sorted));
  write_text(fewer_path, text_of(fewer));
  write_text(more_path, text_of(more));

  RunDigest like = read_run_digest(run_path);
  expect_same_run(like, run, "run");
  for (int round = 0; round < 3; ++round) {
    RunDigest base = read_run_digest(sorted_path, &like);
    expect_same_run(base, sorted, "baseline, round " + std::to_string(round));
    size_t twins = 0;
    for (const auto& check : base.checks) {
      if (check.twin != CheckDigest::k_no_twin) {
        ASSERT_LT(check.twin, like.checks.size());
        EXPECT_EQ(like.checks[check.twin].id, check.id);
        ++twins;
      }
    }
    EXPECT_EQ(twins, base.checks.size());
    for (size_t i = 0; i < base.id_order.size(); ++i) {
      EXPECT_EQ(base.id_order[i], i);
    }
  }
  expect_same_run(read_run_digest(fewer_path, &like), fewer, "fewer");
  expect_same_run(read_run_digest(more_path, &like), more, "more");
  expect_same_run(read_run_digest(run_path, &like), run, "the run against itself");
  {
    std::vector<std::thread> threads;
    std::vector<std::optional<RunDigest>> read(4);
    for (size_t t = 0; t < read.size(); ++t) {
      threads.emplace_back([&, t] { read[t] = read_run_digest(t % 2 == 0 ? sorted_path : more_path, &like); });
    }
    for (auto& thread : threads) {
      thread.join();
    }
    for (size_t t = 0; t < read.size(); ++t) {
      expect_same_run(*read[t], t % 2 == 0 ? sorted : more, "thread " + std::to_string(t));
    }
  }
  // In memory too, and against a like read in memory.
  RunDigest in_memory = digest_run_text(text_of(run), "note:run");
  expect_same_run(digest_run_text(text_of(sorted), "note:base", &in_memory), sorted, "in memory");
  expect_same_run(read_run_digest(sorted_path, &in_memory), sorted, "against one in memory");
  // The like's own checks are untouched by what was read against it.
  expect_same_run(like, run, "run, after");
  // A digest read against a like outlives it.
  std::optional<RunDigest> gone = read_run_digest(sorted_path, &like);
  like = RunDigest{};
  expect_same_run(*gone, sorted, "after its like is gone");
}

// A file's summary is checked against its checks wherever they lie in it: experiments,
// outputs and statuses interleaved, a summary one count off in each way.
TEST(RunDigest, TheSummaryOfInterleavedChecksIsJudgedAsReadRunFileJudgesIt) {
  test::TempDir dir;
  std::string path = dir / "interleaved.jsonl";
  std::vector<CheckRecord> checks;
  for (size_t i = 0; i < 400; ++i) {
    CheckRecord check =
        plain_check("in" + std::to_string(i / 3), i % 5 == 0 ? CheckStatus::k_fail_numeric : CheckStatus::k_pass, 1e-6,
                    i % 2 == 0 ? "a" : "b");
    check.output = i % 3 == 0 ? "out" : i % 3 == 1 ? "logits" : "out";
    check.target = "t" + std::to_string(i % 3);
    check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
    checks.push_back(check);
  }
  RunFile run = run_of(checks);
  std::string text = text_of(run);
  write_text(path, text);
  ASSERT_NO_THROW(read_run_file(path));
  expect_same_outcome(path, text, "as written");
  std::string summary = summary_to_json_line(run.summary);
  size_t at = text.find(summary);
  ASSERT_NE(at, std::string::npos);
  for (const std::string key : {"\"pass\":", "\"fail_numeric\":", "\"outputs\":", "\"checks\":"}) {
    size_t value = summary.find(key);
    ASSERT_NE(value, std::string::npos) << key;
    value += key.size();
    size_t end = summary.find_first_not_of("0123456789", value);
    long count = std::stol(summary.substr(value, end - value));
    for (long delta : {-1L, 1L}) {
      std::string edited = summary;
      edited.replace(value, end - value, std::to_string(count + delta));
      expect_same_outcome(path, text.substr(0, at) + edited + "\n", key + std::to_string(delta));
    }
  }
}

// ids in the order a run writes them (nested loops over numbered experiments, inputs,
// targets and outputs: a few long ascending stretches), around every size where the
// sort changes its method, reversed, shuffled and with prefixes: id_order sorts as
// std::sort does.
TEST(IdOrder, IdsInTheOrderARunWritesThemSortAsStdSortDoes) {
  std::mt19937 random(31);
  auto below = [&random](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  for (int round = 0; round < 60; ++round) {
    std::vector<std::string> ids;
    size_t inputs = 1 + below(round % 3 == 0 ? 400 : 40);
    size_t targets = 1 + below(round % 4 == 0 ? 120 : 15);
    size_t outputs = 1 + below(3);
    for (size_t e = 0; e < 1 + below(2); ++e) {
      for (size_t i = 0; i < inputs; ++i) {
        for (size_t t = 0; t < targets; ++t) {
          for (size_t o = 0; o < outputs; ++o) {
            std::string id = "model" + std::to_string(e) + "/img_" + std::to_string(i) + "/cpu_fp32~t" +
                             std::to_string(t) + "/out" + (o == 0 ? "" : std::to_string(o));
            if (below(200) == 0) {
              id = id.substr(0, below(id.size() + 1));  // a prefix of others, maybe empty
            }
            if (below(300) == 0) {
              id += static_cast<char>(below(256));
            }
            ids.push_back(id);
          }
        }
      }
    }
    switch (round % 5) {
      case 1:
        std::reverse(ids.begin(), ids.end());
        break;
      case 2:
        std::shuffle(ids.begin(), ids.end(), random);
        break;
      case 3:  // sorted already, but for a few
        std::sort(ids.begin(), ids.end());
        for (size_t swaps = below(4); swaps > 0; --swaps) {
          std::swap(ids[below(ids.size())], ids[below(ids.size())]);
        }
        break;
      default:
        break;
    }
    std::vector<std::string_view> views(ids.begin(), ids.end());
    std::vector<size_t> order = id_order(views);
    ASSERT_EQ(order.size(), ids.size());
    std::vector<size_t> indices = order;
    std::sort(indices.begin(), indices.end());
    for (size_t i = 0; i < indices.size(); ++i) {
      ASSERT_EQ(indices[i], i) << "round " << round << ": not a permutation";
    }
    for (size_t i = 1; i < order.size(); ++i) {
      ASSERT_LE(ids[order[i - 1]], ids[order[i]]) << "round " << round << " at " << i << " of " << ids.size();
    }
  }
}

// ---- text_compare ----------------------------------------------------------------

TEST(TextCompare, AgreesWithStringViewOnRandomTexts) {
  std::mt19937 random(2026);
  auto below = [&random](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  static const unsigned char k_bytes[] = {0x00, 0x01, 'a', 'b', 'z', '/', '~', 0x7f, 0x80, 0x81, 0xc3, 0xfe, 0xff};
  auto random_text = [&](size_t length) {
    std::string text(length, '\0');
    for (auto& c : text) {
      c = static_cast<char>(below(4) == 0 ? below(256) : k_bytes[below(std::size(k_bytes))]);
    }
    return text;
  };
  size_t less = 0;
  size_t equal = 0;
  for (int round = 0; round < 200000; ++round) {
    std::string a = random_text(below(41));
    std::string b;
    switch (below(4)) {
      case 0:  // unrelated
        b = random_text(below(41));
        break;
      case 1:  // equal
        b = a;
        break;
      case 2: {  // a shared prefix, then anything
        size_t keep = a.empty() ? 0 : below(a.size() + 1);
        b = a.substr(0, keep) + random_text(below(41 - keep));
        break;
      }
      default: {  // one byte changed
        b = a;
        if (!b.empty()) {
          b[below(b.size())] = static_cast<char>(k_bytes[below(std::size(k_bytes))]);
        }
        break;
      }
    }
    std::string_view x(a);
    std::string_view y(b);
    ASSERT_EQ(same_text(x, y), x == y) << round;
    ASSERT_EQ(text_less(x, y), x < y) << round;
    ASSERT_EQ(text_less(y, x), y < x) << round;
    size_t n = std::min(a.size(), b.size());
    ASSERT_EQ(same_bytes(a.data(), b.data(), n), std::memcmp(a.data(), b.data(), n) == 0) << round;
    ASSERT_EQ(shared_prefix(a.data(), b.data(), n),
              static_cast<size_t>(
                  std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin()).first - a.begin()))
        << round;
    less += x < y ? 1 : 0;
    equal += x == y ? 1 : 0;
  }
  EXPECT_GT(less, 50000u);
  EXPECT_GT(equal, 40000u);
}

// Every length 0..40, one byte differing at every position, in both directions, with
// bytes on both sides of 0x80: the word-at-a-time loops and their tails.
TEST(TextCompare, EveryPositionOfEveryLengthDecides) {
  const unsigned char k_pairs[][2] = {{'a', 'b'}, {0x00, 0x01}, {0x7f, 0x80}, {0x01, 0xff}, {0x80, 0xfe}};
  for (size_t length = 0; length <= 40; ++length) {
    std::string base(length, 'q');
    for (size_t i = 0; i < length; ++i) {
      base[i] = static_cast<char>('a' + i % 26);
    }
    EXPECT_TRUE(same_text(base, base));
    EXPECT_FALSE(text_less(base, base));
    EXPECT_TRUE(same_bytes(base.data(), std::string(base).data(), length));
    EXPECT_EQ(shared_prefix(base.data(), std::string(base).data(), length), length);
    for (size_t at = 0; at < length; ++at) {
      for (const auto& pair : k_pairs) {
        std::string low = base;
        std::string high = base;
        low[at] = static_cast<char>(pair[0]);
        high[at] = static_cast<char>(pair[1]);
        ASSERT_FALSE(same_text(low, high)) << length << " at " << at;
        ASSERT_FALSE(same_bytes(low.data(), high.data(), length)) << length << " at " << at;
        ASSERT_TRUE(same_bytes(low.data(), high.data(), at)) << length << " at " << at;
        ASSERT_EQ(shared_prefix(low.data(), high.data(), length), at) << length << " at " << at;
        ASSERT_TRUE(text_less(low, high)) << length << " at " << at;
        ASSERT_FALSE(text_less(high, low)) << length << " at " << at;
      }
    }
    // A prefix sorts first.
    for (size_t cut = 0; cut < length; ++cut) {
      std::string_view whole(base);
      ASSERT_TRUE(text_less(whole.substr(0, cut), whole)) << length << " cut " << cut;
      ASSERT_FALSE(text_less(whole, whole.substr(0, cut))) << length << " cut " << cut;
      ASSERT_FALSE(same_text(whole.substr(0, cut), whole)) << length << " cut " << cut;
    }
  }
}

}  // namespace
}  // namespace driftgate

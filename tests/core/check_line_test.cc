#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/check_line_fast.h"
#include "core/error.h"
#include "core/record.h"

namespace driftgate {
namespace {

using Json = nlohmann::ordered_json;

CheckRecord full_check() {
  CheckRecord check;
  check.experiment = "resnet18";
  check.input = "cat";
  check.reference = "cpu_fp32";
  check.target = "cpu_bf16";
  check.output = "out['boxes']";
  check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
  check.status = CheckStatus::k_fail_numeric;
  check.message = "Mismatched elements: 7 / 288 (2.4%)";
  check.tolerance = Tolerance{1e-5, 1.3e-6, ToleranceRule::k_polygraphy};
  check.observed_reference = ObservedTensor{"cpu", "float32", "contiguous", {1, 1000}};
  check.observed_target = ObservedTensor{"cpu", "bfloat16", "channels_last", {}};
  Tier1Stats stats;
  stats.numel = 1000;
  stats.mismatches = 7;
  stats.mismatch_fraction = 0.007;
  stats.max_abs = 2.5e-3;
  stats.max_abs_index = {0, 17};
  stats.max_abs_reference = -0.0;
  stats.max_abs_target = 123456789.125;
  stats.max_rel = std::nan("");
  stats.max_rel_index = {0, -1};
  stats.rel_floor = 1e-300;
  stats.max_abs_reference_value = 5e-324;
  stats.nan_reference = std::numeric_limits<int64_t>::max();
  stats.nan_target = std::numeric_limits<int64_t>::min();
  stats.min_atol = INFINITY;
  stats.min_rtol = -INFINITY;
  stats.mean_abs = 1e21;
  stats.p99_abs = 1e15;
  stats.rmse = 0.1 + 0.2;
  stats.cosine_similarity = 0.999999;
  stats.max_ulp = 3.0;
  stats.oracle = OracleErrors{1e-7, 2e-7, 3e-8, 4e-8};
  stats.target_repeat_max_abs = 0.0;
  check.stats = stats;
  check.reference_ms = 1.5;
  check.target_ms = 17.0;
  check.reference_iqr_ms = 0.25;
  check.target_iqr_ms = 3.125;
  return check;
}

std::string run_text(const std::vector<CheckRecord>& checks) {
  RunFile run;
  run.header.tool_version = "0.1.0";
  run.header.commit = {"0123456789abcdef0123456789abcdef01234567", "main", false};
  run.header.environment.keyed = {{"libtorch", "1.13.1"}};
  ExperimentHeader experiment;
  experiment.name = "resnet18";
  experiment.inputs = {"cat"};
  experiment.reference = "cpu_fp32";
  experiment.targets = {"cpu_bf16"};
  run.header.experiments.push_back(experiment);
  run.checks = checks;
  run.summary = summarize(run.header, run.checks);
  std::ostringstream out;
  write_run(out, run);
  return out.str();
}

// What parse_run makes of `text`: the re-serialized run, or the error message.
std::string outcome(const std::string& text, bool dom_only) {
  std::istringstream in(text);
  try {
    RunFile run = dom_only ? parse_run_dom_only(in, "run.jsonl") : parse_run(in, "run.jsonl");
    std::ostringstream out;
    write_run(out, run);
    return out.str();
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

// The fast path and the DOM reader agree on `text`, value for value or error for error.
void expect_same_outcome(const std::string& text) {
  EXPECT_EQ(outcome(text, false), outcome(text, true)) << "input:\n" << text;
}

TEST(CheckLine, WritesWhatTheDomWouldWrite) {
  CheckRecord check = full_check();
  std::string line = check_to_json_line(check);
  // nlohmann re-dumps its own canonical output unchanged: same key order, numbers, escapes.
  EXPECT_EQ(Json::parse(line).dump(), line);
  EXPECT_NE(line.find("\"max_abs_reference\":-0.0,"), std::string::npos) << line;
  EXPECT_NE(line.find("\"max_rel\":\"nan\","), std::string::npos) << line;
  EXPECT_NE(line.find("\"min_rtol\":\"-inf\","), std::string::npos) << line;
  EXPECT_NE(line.find("\"shape\":[]}"), std::string::npos) << line;
  EXPECT_NE(line.find("\"mean_abs\":1e+21,"), std::string::npos) << line;
  EXPECT_NE(line.find("\"atol\":1e-05,"), std::string::npos) << line;
  EXPECT_EQ(line.find("reference_repeat_max_abs"), std::string::npos) << line;
}

// Records written before the timed runs have no interquartile ranges: both readers take
// them as nan (unknown), and the writer then writes "nan", never a made-up 0.
TEST(CheckLine, TimingsWithoutRangesReadAsUnknown) {
  std::string text = run_text({full_check()});
  const std::string ranges = ",\"reference_iqr\":0.25,\"target_iqr\":3.125}";
  ASSERT_NE(text.find(ranges), std::string::npos) << text;
  text.replace(text.find(ranges), ranges.size(), "}");
  expect_same_outcome(text);
  std::istringstream in(text);
  RunFile run = parse_run(in, "run.jsonl");
  ASSERT_EQ(run.checks.size(), 1U);
  EXPECT_DOUBLE_EQ(run.checks[0].target_ms, 17.0);
  EXPECT_TRUE(std::isnan(run.checks[0].reference_iqr_ms));
  EXPECT_TRUE(std::isnan(run.checks[0].target_iqr_ms));
  EXPECT_NE(check_to_json_line(run.checks[0]).find("\"reference_iqr\":\"nan\",\"target_iqr\":\"nan\"}"),
            std::string::npos);
  // One range without the other is refused by both readers alike.
  std::string half = run_text({full_check()});
  half.replace(half.find(",\"target_iqr\":3.125"), std::string(",\"target_iqr\":3.125").size(), "");
  expect_same_outcome(half);
  EXPECT_EQ(outcome(half, true).rfind("error: ", 0), 0U) << outcome(half, true);
}

TEST(CheckLine, EscapesAndUnicodeAreNlohmanns) {
  CheckRecord check = full_check();
  check.message = std::string("quote \" backslash \\ tab \t bell \x07 del \x7f caf\xc3\xa9 \xe2\x9c\x93");
  check.stats.reset();
  check.observed_target.reset();
  std::string line = check_to_json_line(check);
  EXPECT_EQ(Json::parse(line).dump(), line);
  EXPECT_NE(line.find("\\u0007"), std::string::npos) << line;
  check.message = "\xff not UTF-8";
  EXPECT_THROW(check_to_json_line(check), nlohmann::json::exception);  // as the DOM dump throws
}

TEST(CheckLine, RandomRecordsRoundTrip) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> exponent(-320, 300);
  std::vector<CheckRecord> checks;
  for (int i = 0; i < 300; ++i) {
    CheckRecord check = full_check();
    check.input = "in" + std::to_string(i);
    check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
    double sign = (random() % 2 == 0) ? 1.0 : -1.0;
    check.stats->max_abs = sign * std::pow(10.0, exponent(random)) * (1.0 + static_cast<double>(random() % 1000));
    check.stats->rmse = static_cast<double>(random() % 100000) / 7.0;
    check.stats->numel = static_cast<int64_t>(random() >> 1);
    check.tolerance.atol = std::pow(2.0, -static_cast<double>(random() % 60));
    check.tolerance.k = i % 4 == 0 ? static_cast<double>(random() % 50 + 1) / 2.0 : 0.0;
    if (i % 2 == 0) {  // plain, or escaped by nlohmann (non-ASCII, quotes)
      check.tolerance.origin =
          i % 4 == 2 ? "rule c/\xc3\xa9.yaml:3:5; atol/rtol \"x\".yaml:9:1" : "configs/a.yaml:4:12";
    }
    if (i % 3 == 0) {
      check.stats.reset();
    }
    checks.push_back(check);
  }
  std::string text = run_text(checks);
  std::istringstream line_stream(text);
  std::string line;
  while (std::getline(line_stream, line)) {
    EXPECT_EQ(Json::parse(line).dump(), line);
  }
  EXPECT_EQ(outcome(text, false), text);
  EXPECT_EQ(outcome(text, true), text);
  CheckRecord parsed;
  std::string first_check = text.substr(text.find('\n') + 1);
  first_check = first_check.substr(0, first_check.find('\n'));
  ASSERT_TRUE(read_canonical_record(first_check, parsed));  // the fast path does read ordinary lines
  EXPECT_EQ(parsed.id, checks[0].id);
}

// Every edit of a good check line that the DOM reader might judge differently from a
// naive fast reader: both readers give the same run or the same error, word for word.
TEST(CheckLine, FastPathAndDomReaderAgreeOnEveryEdit) {
  std::string good = run_text({full_check()});
  size_t start = good.find('\n') + 1;
  size_t end = good.find('\n', start);
  std::string header = good.substr(0, start);
  std::string line = good.substr(start, end - start);
  std::string summary = good.substr(end + 1);
  auto with_line = [&](const std::string& edited) { return header + edited + "\n" + summary; };

  std::vector<std::string> edited;
  for (size_t cut = 0; cut <= line.size(); cut += 7) {
    edited.push_back(line.substr(0, cut));  // truncations
  }
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = line.find(from); at != std::string::npos; at = line.find(from, at + 1)) {
      std::string copy = line;
      copy.replace(at, from.size(), to);
      edited.push_back(copy);
    }
  };
  // Every key removed, renamed, duplicated; every value retyped.
  for (size_t at = line.find("\":"); at != std::string::npos; at = line.find("\":", at + 1)) {
    size_t key_start = line.rfind('"', at - 1);
    std::string key = line.substr(key_start, at + 2 - key_start);
    std::string renamed = line;
    renamed.replace(key_start, key.size(), "\"x" + key.substr(1));
    edited.push_back(renamed);
    size_t value_end = at + 2;
    int depth = 0;
    bool in_string = false;
    for (; value_end < line.size(); ++value_end) {
      char c = line[value_end];
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
    std::string member = line.substr(key_start, value_end - key_start);
    for (const char* value : {"null", "true", "1", "-0", "-0.0", "1.5", "18446744073709551615", "1e999", "\"x\"",
                              "\"nan\"", "[]", "[1.5]", "{}", "\"\\u00e9\"", "\"\\ud800\""}) {
      std::string retyped = line;
      retyped.replace(at + 2, value_end - at - 2, value);
      edited.push_back(retyped);
    }
    std::string removed = line;
    removed.erase(key_start, member.size() + (line[value_end] == ',' ? 1 : 0));
    edited.push_back(removed);
    std::string duplicated = line;
    duplicated.insert(key_start, member + ",");
    edited.push_back(duplicated);
  }
  replace_all("resnet18", "resnet19");                // id no longer matches its parts
  replace_all("fail_numeric", "fail_numerik");        // unknown status
  replace_all("polygraphy", "polygraph");             // unknown rule
  replace_all("}}", "}} ");                           // trailing whitespace
  replace_all("}}", "}}x");                           // trailing garbage
  replace_all("}}", "}}{}");                          // two documents
  replace_all(":", " : ");                            // whitespace inside
  replace_all("{\"type\"", "\xef\xbb\xbf{\"type\"");  // byte order mark
  replace_all("cat", "c\\u0061t");                    // escapes (the id still matches once decoded)
  replace_all("cat", "c\xc3\xa1t");                   // UTF-8
  replace_all("cat", "c\xe1t");                       // invalid UTF-8
  replace_all("cat", std::string("c\0t", 3));         // a NUL byte
  replace_all("cat", "c\tt");                         // a raw control character
  replace_all("1000]", "1000.0]");                    // a float in an integer array
  replace_all("1000,", "1e3,");                       // a float where an integer belongs
  replace_all("\"message\":\"", "\"message\":\"\\\"");
  edited.push_back(line + line);
  edited.push_back("[" + line + "]");
  edited.push_back(line + "\r");
  ASSERT_GT(edited.size(), 500u);
  for (const auto& text : edited) {
    expect_same_outcome(with_line(text));
  }
  // The unedited file and a duplicated line are judged the same too.
  expect_same_outcome(good);
  expect_same_outcome(header + line + "\n" + line + "\n" + summary);
}

}  // namespace
}  // namespace driftgate

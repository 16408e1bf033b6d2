// The record's `mitigation` object (core/check_line.cc): the bytes written, the round
// trip, the flat shape of records written before choices, and the reader's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/record.h"

namespace driftgate {
namespace {

RunFile one_check_run(const std::optional<Mitigation>& mitigation) {
  RunFile run;
  run.header.tool_version = "0.1.0";
  run.header.commit = {"0123456789abcdef0123456789abcdef01234567", "main", false};
  ExperimentHeader experiment;
  experiment.name = "tie";
  experiment.inputs = {"img"};
  experiment.reference = "cpu_fp32";
  experiment.targets = {"cpu_bf16"};
  run.header.experiments.push_back(experiment);
  CheckRecord check;
  check.experiment = "tie";
  check.input = "img";
  check.reference = "cpu_fp32";
  check.target = "cpu_bf16";
  check.output = "task:detection[native]";
  check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
  check.status = CheckStatus::k_fail_task;
  check.message = "boxes differ";
  check.mitigation = mitigation;
  run.checks.push_back(check);
  run.summary = summarize(run.header, run.checks);
  return run;
}

std::string serialize(const RunFile& run) {
  std::ostringstream out;
  write_run(out, run);
  return out.str();
}

// The check line's mitigation member, as written.
std::string mitigation_member(const std::string& text) {
  const size_t begin = text.find("\"mitigation\":");
  const size_t end = text.find(",\"messages\"", begin) != std::string::npos ? text.find(",\"messages\"", begin)
                                                                            : text.find(",\"timings_ms\"", begin);
  return begin == std::string::npos ? "" : text.substr(begin, end - begin);
}

// The file with the check line's mitigation member replaced by `member`.
std::string with_member(const std::string& member) {
  std::string text = serialize(one_check_run(Mitigation{}));
  const std::string old = mitigation_member(text);
  return text.replace(text.find(old), old.size(), "\"mitigation\":" + member);
}

RunFile parse(const std::string& text) {
  std::istringstream in(text);
  return parse_run(in, "run.jsonl");
}

std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

Mitigation two_choices() {
  Mitigation mitigation;
  mitigation.choices.push_back(MitigationChoice{"tier3", {"stable_nms"}, {}, "cpu_bf16+stable_nms", 4.5, 0.25, false});
  mitigation.choices.push_back(MitigationChoice{"tier1", {"fp32"}, {}, "cpu_bf16+fp32", 6.0, std::nan(""), true});
  mitigation.choices.push_back(
      MitigationChoice{"tier3", {}, {"features.7", "classifier.3"}, "cpu_bf16+fp32_modules_3", 5.0, 0.5, false});
  mitigation.target_ms = 4.0;
  mitigation.reference_ms = 6.0;
  mitigation.tried = 12;
  mitigation.selective_note = "a note";
  mitigation.message = "m";
  return mitigation;
}

TEST(MitigationRecord, WritesEveryChoiceWithItsLatencyInTheDocumentedOrder) {
  const std::string text = serialize(one_check_run(two_choices()));
  EXPECT_EQ(mitigation_member(text),
            "\"mitigation\":{\"choices\":["
            "{\"restores\":\"tier3\",\"fallbacks\":[\"stable_nms\"],\"float32_modules\":[],"
            "\"backend\":\"cpu_bf16+stable_nms\",\"latency_ms\":4.5,\"latency_iqr_ms\":0.25,"
            "\"reference_equivalent\":false},"
            "{\"restores\":\"tier1\",\"fallbacks\":[\"fp32\"],\"float32_modules\":[],"
            "\"backend\":\"cpu_bf16+fp32\",\"latency_ms\":6.0,\"latency_iqr_ms\":\"nan\","
            "\"reference_equivalent\":true},"
            "{\"restores\":\"tier3\",\"fallbacks\":[],\"float32_modules\":[\"features.7\",\"classifier.3\"],"
            "\"backend\":\"cpu_bf16+fp32_modules_3\",\"latency_ms\":5.0,\"latency_iqr_ms\":0.5,"
            "\"reference_equivalent\":false}],"
            "\"target_ms\":4.0,\"reference_ms\":6.0,\"tried\":12,\"selective_note\":\"a note\",\"message\":\"m\"}");
}

TEST(MitigationRecord, RoundTripIsByteIdentical) {
  const std::string text = serialize(one_check_run(two_choices()));
  const RunFile read = parse(text);
  EXPECT_EQ(serialize(read), text);
  ASSERT_TRUE(read.checks[0].mitigation.has_value());
  const Mitigation& mitigation = *read.checks[0].mitigation;
  ASSERT_EQ(mitigation.choices.size(), 3U);
  EXPECT_TRUE(mitigation.choices[1].reference_equivalent);
  EXPECT_TRUE(std::isnan(mitigation.choices[1].latency_iqr_ms));
  EXPECT_EQ(mitigation.choices[2].float32_modules, (std::vector<std::string>{"features.7", "classifier.3"}));
  EXPECT_EQ(mitigation.reference_ms, 6.0);
  EXPECT_EQ(mitigation.selective_note, "a note");
}

TEST(MitigationRecord, TheFlatShapeOfOlderRecordsReadsAsOneChoice) {
  const RunFile read = parse(
      with_member("{\"fallbacks\":[\"fp32\"],\"restores\":\"tier1\",\"backend\":\"cpu_bf16+fp32\",\"latency_ms\":2.5,"
                  "\"target_ms\":1.25,\"tried\":3,\"message\":\"fp32 restores tier-1 agreement for cpu_bf16\"}"));
  const Mitigation& mitigation = *read.checks[0].mitigation;
  ASSERT_EQ(mitigation.choices.size(), 1U);
  EXPECT_EQ(mitigation.choices[0].restores, "tier1");
  EXPECT_EQ(mitigation.choices[0].fallbacks, std::vector<std::string>{"fp32"});
  EXPECT_TRUE(mitigation.choices[0].float32_modules.empty());
  EXPECT_EQ(mitigation.choices[0].backend, "cpu_bf16+fp32");
  EXPECT_EQ(mitigation.choices[0].latency_ms, 2.5);
  EXPECT_TRUE(std::isnan(mitigation.choices[0].latency_iqr_ms));
  EXPECT_FALSE(mitigation.choices[0].reference_equivalent);
  EXPECT_EQ(mitigation.target_ms, 1.25);
  EXPECT_TRUE(std::isnan(mitigation.reference_ms));
  EXPECT_EQ(mitigation.tried, 3);
  EXPECT_EQ(mitigation.message, "fp32 restores tier-1 agreement for cpu_bf16");
  // None restored: no choice.
  const RunFile none = parse(with_member(
      "{\"fallbacks\":[],\"restores\":\"\",\"backend\":\"\",\"latency_ms\":0,\"target_ms\":1.25,\"tried\":7,"
      "\"message\":\"no fallback set restores agreement for cpu_bf16; tried 7 fallback sets\"}"));
  EXPECT_TRUE(none.checks[0].mitigation->choices.empty());
  EXPECT_EQ(none.checks[0].mitigation->tried, 7);
}

TEST(MitigationRecord, TheReaderRefusesWhatItCannotVouchFor) {
  const std::string choice =
      "{\"restores\":\"tier1\",\"fallbacks\":[\"fp32\"],\"float32_modules\":[],\"backend\":\"b\",\"latency_ms\":1,"
      "\"latency_iqr_ms\":0,\"reference_equivalent\":true}";
  const std::string tail = ",\"target_ms\":1,\"reference_ms\":2,\"tried\":1,\"selective_note\":\"\",\"message\":\"m\"}";
  EXPECT_EQ(parse_error(with_member("{\"choices\":[" + choice + "]" + tail)), "(no error)");
  EXPECT_EQ(
      parse_error(with_member("{\"choices\":[" + choice + "]" + tail.substr(0, tail.size() - 1) + ",\"extra\":1}")),
      "run.jsonl:2: mitigation: unknown field 'extra'");
  EXPECT_EQ(parse_error(with_member("{\"choices\":{}" + tail)),
            "run.jsonl:2: mitigation: field 'choices' must be an array of objects");
  EXPECT_EQ(parse_error(with_member("{\"choices\":[1]" + tail)), "run.jsonl:2: mitigation choice 1 must be an object");
  std::string bad = choice;
  bad.replace(bad.find("\"tier1\""), 7, "\"tier2\"");
  EXPECT_EQ(parse_error(with_member("{\"choices\":[" + choice + "," + bad + "]" + tail)),
            "run.jsonl:2: mitigation choice 2: field 'restores' must be \"tier1\" or \"tier3\", got \"tier2\"");
  bad = choice;
  bad.replace(bad.find("true"), 4, "1");
  EXPECT_EQ(parse_error(with_member("{\"choices\":[" + bad + "]" + tail)),
            "run.jsonl:2: mitigation choice 1: field 'reference_equivalent' must be true or false");
  bad = choice;
  bad.erase(bad.find(",\"float32_modules\":[]"), 21);
  EXPECT_EQ(parse_error(with_member("{\"choices\":[" + bad + "]" + tail)),
            "run.jsonl:2: mitigation choice 1: missing field 'float32_modules'");
  EXPECT_EQ(parse_error(with_member("{\"choices\":[]" + tail.substr(0, tail.find(",\"tried\"")) +
                                    ",\"tried\":-1,\"selective_note\":\"\",\"message\":\"m\"}")),
            "run.jsonl:2: mitigation: field 'tried' must be an integer of at least 0");
  EXPECT_EQ(parse_error(with_member("{\"choices\":[],\"target_ms\":1,\"tried\":0,\"message\":\"m\"}")),
            "run.jsonl:2: mitigation: missing field 'reference_ms'");
  EXPECT_EQ(parse_error(with_member("{\"choices\":[],\"target_ms\":1,\"reference_ms\":2,\"tried\":0,"
                                    "\"message\":\"m\"}")),
            "run.jsonl:2: mitigation: missing field 'selective_note'");
  // The flat shape is as strict.
  EXPECT_EQ(parse_error(with_member("{\"fallbacks\":[\"fp32\"],\"restores\":\"tier1\",\"backend\":\"b\","
                                    "\"latency_ms\":1,\"target_ms\":1,\"tried\":1,\"message\":\"m\",\"x\":0}")),
            "run.jsonl:2: mitigation: unknown field 'x'");
  EXPECT_EQ(parse_error(with_member("{\"fallbacks\":[\"fp32\"],\"restores\":\"\",\"backend\":\"b\","
                                    "\"latency_ms\":1,\"target_ms\":1,\"tried\":1,\"message\":\"m\"}")),
            "run.jsonl:2: mitigation: field 'restores' must be \"tier1\" or \"tier3\", got \"\"");
  EXPECT_EQ(parse_error(with_member("[]")), "run.jsonl:2: mitigation must be an object");
}

}  // namespace
}  // namespace driftgate

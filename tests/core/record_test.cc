#include "core/record.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/file_util.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

RunFile sample_run() {
  RunFile run;
  run.header.tool_version = "0.1.0";
  run.header.commit = {"0123456789abcdef0123456789abcdef01234567", "main", false};
  run.header.environment.keyed = {{"libtorch", "1.13.1"}, {"threads", "1"}};
  run.header.environment.info = {{"cpu_model", "test"}};
  ExperimentHeader experiment;
  experiment.name = "tiny";
  experiment.config_path = "configs/tiny.yaml";
  experiment.config_hash = "c";
  experiment.model_path = "models/tiny.pt";
  experiment.model_hash = "m";
  experiment.inputs = {"a", "b"};
  experiment.reference = "cpu_fp32";
  experiment.targets = {"frozen"};
  experiment.tolerance_origin = "default";
  run.header.experiments.push_back(experiment);
  for (const char* input : {"a", "b"}) {
    CheckRecord check;
    check.experiment = "tiny";
    check.input = input;
    check.reference = "cpu_fp32";
    check.target = "frozen";
    check.output = "out";
    check.id = make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
    check.observed_reference = ObservedTensor{"cpu", "float32", "contiguous", {1, 10}};
    check.observed_target = check.observed_reference;
    Tier1Stats stats;
    stats.numel = 10;
    stats.max_abs = 1.5e-7;
    stats.max_abs_index = {0, 3};
    stats.max_rel = std::nan("");
    stats.min_atol = INFINITY;
    stats.reference_repeat_max_abs = 0.0;
    stats.min_rtol = INFINITY;
    stats.max_ulp = 3.0;
    stats.cosine_similarity = 0.999999;
    stats.oracle = OracleErrors{1e-7, 2e-7, 3e-8, 4e-8};
    check.stats = stats;
    check.tolerance.rule = ToleranceRule::k_oracle;
    check.tolerance.k = 3.0;
    check.tolerance.origin = "rule configs/x.yaml:5:12; atol/rtol assert_close defaults for float32/float32; k default";
    run.checks.push_back(check);
  }
  run.checks[1].status = CheckStatus::k_fail_numeric;
  run.summary = summarize(run.header, run.checks);
  return run;
}

std::string serialize(const RunFile& run) {
  std::ostringstream out;
  write_run(out, run);
  return out.str();
}

TEST(Record, CheckIdIsReadable) {
  EXPECT_EQ(make_check_id("resnet18", "cat", "cpu_fp32", "frozen", "out[0]"), "resnet18/cat/cpu_fp32~frozen/out[0]");
}

TEST(Record, SummaryCountsAreDerivable) {
  RunFile run = sample_run();
  EXPECT_EQ(run.summary.expected_checks, 2);  // 2 inputs x 1 target x 1 output
  EXPECT_EQ(run.summary.checks, 2);
  EXPECT_EQ(run.summary.by_status.at("pass"), 1);
  EXPECT_EQ(run.summary.by_status.at("fail_numeric"), 1);
  EXPECT_EQ(run.summary.by_status.at("crash_target"), 0);
  EXPECT_EQ(run.summary.by_status.size(), all_check_statuses().size());
}

TEST(Record, RoundTripIsByteIdentical) {
  std::string text = serialize(sample_run());
  std::istringstream in(text);
  RunFile parsed = parse_run(in, "run.jsonl");
  EXPECT_EQ(serialize(parsed), text);
  EXPECT_TRUE(std::isnan(parsed.checks[0].stats->max_rel));
  EXPECT_TRUE(std::isinf(parsed.checks[0].stats->min_rtol));
  EXPECT_EQ(parsed.checks[0].tolerance.rule, ToleranceRule::k_oracle);
  ASSERT_TRUE(parsed.checks[0].stats->oracle);
  EXPECT_DOUBLE_EQ(parsed.checks[0].stats->oracle->target_rmse, 4e-8);
  EXPECT_TRUE(std::isinf(parsed.checks[0].stats->min_atol));
  EXPECT_EQ(parsed.checks[0].stats->reference_repeat_max_abs.value_or(-1), 0.0);
  EXPECT_FALSE(parsed.checks[0].stats->target_repeat_max_abs);
}

TEST(Record, KeyOrderIsStable) {
  std::string text = serialize(sample_run());
  EXPECT_EQ(text.rfind("{\"type\":\"header\",\"schema\":1,\"tool_version\":\"0.1.0\",\"commit\":{\"sha\":", 0), 0U);
  EXPECT_NE(text.find("{\"type\":\"check\",\"id\":\"tiny/a/cpu_fp32~frozen/out\",\"experiment\":\"tiny\""),
            std::string::npos);
}

std::string parse_error(const std::string& text) {
  std::istringstream in(text);
  try {
    parse_run(in, "run.jsonl");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Record, RejectsBrokenFilesWithLineNumbers) {
  std::string good = serialize(sample_run());
  std::string header = good.substr(0, good.find('\n') + 1);
  std::string first_check = good.substr(header.size(), good.find('\n', header.size()) + 1 - header.size());

  EXPECT_EQ(parse_error(""), "run.jsonl: empty or no header line; is this a driftgate run file?");
  EXPECT_EQ(parse_error(header + first_check),
            "run.jsonl: no summary line; the run was interrupted or the file is truncated");
  EXPECT_EQ(parse_error(header + first_check.substr(0, 20) + "\n").rfind("run.jsonl:2: not valid JSON", 0), 0U);
  EXPECT_EQ(parse_error(header + first_check + first_check),
            "run.jsonl:3: duplicate check id 'tiny/a/cpu_fp32~frozen/out'");
  EXPECT_EQ(parse_error(first_check),
            "run.jsonl:1: the first line must be the run header (\"type\":\"header\"), got type 'check'");
  std::string wrong_schema = header;
  wrong_schema.replace(wrong_schema.find("\"schema\":1"), 10, "\"schema\":9");
  EXPECT_EQ(parse_error(wrong_schema),
            "run.jsonl:1: record schema 9 is not supported (this driftgate reads 1); re-run with this driftgate "
            "version");
  // The statistics and the rule are required, not defaulted.
  std::string no_ulp = header + first_check;
  no_ulp.erase(no_ulp.find(",\"max_ulp\":3.0"), 14);
  EXPECT_EQ(parse_error(no_ulp), "run.jsonl:2: missing field 'max_ulp'");
  std::string bad_rule = header + first_check;
  bad_rule.replace(bad_rule.find("\"rule\":\"oracle\""), 15, "\"rule\":\"oracl\"");
  EXPECT_EQ(parse_error(bad_rule), "run.jsonl:2: unknown tolerance rule 'oracl'");
  // An index beyond int64 (a float to nlohmann, or an unsigned one past 2^63) or with a
  // fraction is refused, not cast (the cast overflowed: undefined behaviour found by
  // fuzz_record; 2^63 wrapped to -2^63).
  for (const char* index : {"[0,9e+35]", "[0,1.5]", "[0,9223372036854775808]"}) {
    std::string bad_index = header + first_check;
    std::size_t at = bad_index.find("\"max_rel_index\":") + 16;
    bad_index.replace(at, bad_index.find(']', at) + 1 - at, index);
    EXPECT_EQ(parse_error(bad_index),
              std::string("run.jsonl:2: field 'max_rel_index' must be an array of integers, got ") + index)
        << index;
  }
  // Drop one check but keep the summary: the counts no longer derive.
  std::string missing = good;
  missing.erase(header.size(), first_check.size());
  EXPECT_EQ(parse_error(missing),
            "run.jsonl: the summary does not match the checks (2 claimed, 1 present); the file was edited or is "
            "corrupt");
}

}  // namespace
}  // namespace driftgate

namespace driftgate {
namespace {

std::string header_error(const std::string& path) {
  try {
    read_run_header(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// read_run_file sizes its vector of checks from the file size and the first check
// line; read_run_header reads the first line only, with read_run_file's messages.
TEST(Record, ReadingFromAFileGivesWhatParsingTheTextGives) {
  test::TempDir dir;
  RunFile run = sample_run();
  std::string text = serialize(run);
  write_file_atomic(dir / "run.jsonl", "\n" + text);  // a leading empty line is skipped by both
  RunFile read = read_run_file(dir / "run.jsonl");
  EXPECT_EQ(serialize(read), text);
  EXPECT_EQ(header_to_json_line(read_run_header(dir / "run.jsonl")), header_to_json_line(run.header));

  std::string header = text.substr(0, text.find('\n') + 1);
  std::string first_check = text.substr(header.size(), text.find('\n', header.size()) + 1 - header.size());
  write_file_atomic(dir / "check_first.jsonl", first_check + header);
  EXPECT_EQ(
      header_error(dir / "check_first.jsonl"),
      dir / "check_first.jsonl" + ":1: the first line must be the run header (\"type\":\"header\"), got type 'check'");
  write_file_atomic(dir / "empty.jsonl", "");
  EXPECT_EQ(header_error(dir / "empty.jsonl"),
            dir / "empty.jsonl" + ": empty or no header line; is this a driftgate run file?");
  write_file_atomic(dir / "cut.jsonl", header.substr(0, 30));
  EXPECT_EQ(header_error(dir / "cut.jsonl").rfind(dir / "cut.jsonl" + ":1: not valid JSON", 0), 0U);
  EXPECT_EQ(header_error(dir / "none.jsonl").rfind(dir / "none.jsonl" + ": cannot open run file", 0), 0U);
}

}  // namespace
}  // namespace driftgate

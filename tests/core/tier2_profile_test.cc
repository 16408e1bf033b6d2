// Tier 2's record object: a strict compact JSON round trip, the sparkline, the summary line.
#include "core/tier2_profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/record.h"

namespace driftgate {
namespace {

Localization sample() {
  Localization localization;
  localization.alignment = "boundary";
  localization.status = LocalizationStatus::k_localized;
  localization.layers = 4;
  localization.observed = 3;
  localization.not_observable = 1;
  localization.coverage = 0.75;
  localization.first_divergent = "block2.conv/aten::conv2d#1 (conv.py:459)";
  localization.highest_rank = localization.first_divergent;
  localization.reinjection = "confirmed";
  localization.reinjection_delta = 0.02;
  localization.peak_rss_kib = 123456;
  localization.profile = {
      {"stem.conv/aten::conv2d#1", LayerStatus::k_ok, 1e-7, 2e-8, 1e-4, INFINITY},
      {"block1.bn/aten::batch_norm#1", LayerStatus::k_not_observable, 0.0, 0.0, 0.0, 0.0},
      {"block2.conv/aten::conv2d#1 (conv.py:459)", LayerStatus::k_divergent, 0.03, 3e-8, 1e-4, 2.5e4},
      {"head/aten::linear#1", LayerStatus::k_divergent, 0.02, 1e-8, 1e-4, -0.3},
  };
  return localization;
}

TEST(Tier2ProfileTest, RoundTripsThroughCompactJson) {
  Localization original = sample();
  original.fused_before = {"block1.bn/aten::batch_norm#1"};
  const std::string json = localization_to_json(original);
  EXPECT_EQ(json.find('\n'), std::string::npos);
  EXPECT_NE(json.find(R"(["block1.bn/aten::batch_norm#1","not_observable",0.0,0.0,0.0,0.0])"), std::string::npos)
      << json;
  const Localization parsed = parse_localization_json(json);
  EXPECT_EQ(parsed.alignment, original.alignment);
  EXPECT_EQ(parsed.coverage, original.coverage);
  EXPECT_EQ(parsed.first_divergent, original.first_divergent);
  EXPECT_EQ(parsed.fused_before, original.fused_before);
  EXPECT_EQ(parsed.reinjection, "confirmed");
  EXPECT_EQ(parsed.peak_rss_kib, 123456);
  ASSERT_EQ(parsed.profile.size(), 4u);
  EXPECT_TRUE(std::isinf(parsed.profile[0].rank));  // written as "inf", read back
  EXPECT_EQ(parsed.profile[2].status, LayerStatus::k_divergent);
  EXPECT_EQ(parsed.profile[3].rank, -0.3);
}

TEST(Tier2ProfileTest, ParsingIsStrict) {
  const std::string good = localization_to_json(sample());
  auto error_of = [](const std::string& text) {
    try {
      parse_localization_json(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  std::string unknown = good;
  unknown.insert(1, R"("extra":1,)");
  EXPECT_EQ(error_of(unknown), "localization: unknown field 'extra'");
  std::string status = good;
  status.replace(status.find("\"not_observable\",0.0"), 16, "\"fused\"");
  EXPECT_EQ(error_of(status), "localization: unknown layer status 'fused' (expected ok, divergent or not_observable)");
  std::string count = good;
  count.replace(count.find("\"layers\":4"), 10, "\"layers\":5");
  EXPECT_EQ(error_of(count), "localization: 'layers' is 5 but the profile has 4 rows");
  EXPECT_EQ(error_of("[]"), "localization: expected an object");
  EXPECT_EQ(error_of(R"({"alignment":"position"})"), "localization: missing field 'layers'");
}

TEST(Tier2ProfileTest, CheckRecordsCarryTheLocalizationOptionally) {
  CheckRecord check;
  check.id = "e/i/cpu_fp32~frozen/out";
  check.experiment = "e";
  check.input = "i";
  check.reference = "cpu_fp32";
  check.target = "frozen";
  check.output = "out";
  check.status = CheckStatus::k_fail_numeric;
  const std::string without = check_to_json_line(check);
  EXPECT_EQ(without.find("localization"), std::string::npos);
  check.localization = sample();
  const std::string with = check_to_json_line(check);
  EXPECT_NE(with.find(R"("localization":{"alignment":"boundary")"), std::string::npos) << with;
}

TEST(Tier2ProfileTest, SparklineHasOneCharacterPerLayerAndAFullBlockOverTheThreshold) {
  const std::string line = layer_sparkline(sample());
  // stem: 1e-7 / 1e-4 = 1e-3 of the threshold -> the fourth bar; bn: a space; two full blocks.
  EXPECT_EQ(line, "\u2584 \u2588\u2588");
  Localization many = sample();
  for (int i = 0; i < 200; ++i) {
    many.profile.push_back(many.profile[0]);
  }
  const std::string grouped = layer_sparkline(many, 10);
  EXPECT_EQ(grouped.rfind("\u2588", 0), 0u);  // the first group holds the divergent layers
  EXPECT_EQ(layer_sparkline(Localization{}), "");
}

TEST(Tier2ProfileTest, DescribeNamesTheFirstDivergentLayerAndCoverage) {
  EXPECT_EQ(describe_localization(sample()),
            "first divergent: block2.conv/aten::conv2d#1 (conv.py:459) (rank 2.5e+04; re-injection confirmed); "
            "coverage 75% (3 of 4 layers; 1 fused / not observable)");
  Localization fused = sample();
  fused.fused_before = {"block1.bn/aten::batch_norm#1 (functional.py:2450)"};
  EXPECT_EQ(describe_localization(fused),
            "first divergent: block2.conv/aten::conv2d#1 (conv.py:459) after not observable "
            "block1.bn/aten::batch_norm#1 (rank 2.5e+04; re-injection confirmed); coverage 75% (3 of 4 layers; 1 "
            "fused / not observable)");
  Localization clean = sample();
  clean.first_divergent.clear();
  EXPECT_EQ(describe_localization(clean), "no divergent layer; coverage 75% (3 of 4 layers; 1 fused / not observable)");
}

// Records written since tier 2 captures through control flow: a status, module calls, a
// reason per layer not compared, the re-run group; records written before read as before.
TEST(Tier2ProfileTest, PartialProfilesRoundTripAndOldRecordsReadAsBefore) {
  Localization partial = sample();
  partial.first_divergent.clear();
  partial.highest_rank.clear();
  partial.status = LocalizationStatus::k_partial;
  partial.not_captured = "1 of 4 layers not compared, from block1.bn/aten::batch_norm#1 on: not run on the target";
  partial.profile[1].reason = "not run on the target";
  partial.calls = 5;
  partial.calls_compared = 3;
  partial.coverage = 0.6;
  partial.reinjection_group = {"block2.conv/aten::conv2d#1", "block2.relu/aten::relu_#1"};
  const std::string json = localization_to_json(partial);
  EXPECT_NE(json.find(R"(["block1.bn/aten::batch_norm#1","not_observable",0.0,0.0,0.0,0.0,"not run on the target"])"),
            std::string::npos)
      << json;
  const Localization parsed = parse_localization_json(json);
  EXPECT_EQ(parsed.status, LocalizationStatus::k_partial);
  EXPECT_EQ(parsed.not_captured, partial.not_captured);
  EXPECT_EQ(parsed.calls, 5);
  EXPECT_EQ(parsed.calls_compared, 3);
  EXPECT_EQ(parsed.profile[1].reason, "not run on the target");
  EXPECT_EQ(parsed.profile[0].reason, "");
  EXPECT_EQ(parsed.reinjection_group, partial.reinjection_group);
  EXPECT_EQ(localization_to_json(parsed), json);
  // A record of the last release: no status, no calls, six elements per row.
  const std::string old = R"({"alignment":"boundary","layers":1,"observed":1,"not_observable":0,"coverage":1.0,)"
                          R"("first_divergent":"a/aten::relu#1","fused_before":[],"highest_rank":"a/aten::relu#1",)"
                          R"("reinjection":"confirmed","reinjection_delta":0.5,"note":"","peak_rss_kib":1,)"
                          R"("profile":[["a/aten::relu#1","divergent",0.5,0.0,0.1,3.0]]})";
  const Localization before = parse_localization_json(old);
  EXPECT_EQ(before.status, LocalizationStatus::k_localized);
  EXPECT_EQ(before.calls, 0);
  EXPECT_EQ(describe_localization(before),
            "first divergent: a/aten::relu#1 (rank 3; re-injection confirmed); coverage 100% (1 of 1 layers; 0 fused "
            "/ not observable)");
}

TEST(Tier2ProfileTest, ReasonsAndCallsAreCheckedToo) {
  auto error_of = [](const std::string& text) {
    try {
      parse_localization_json(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  Localization partial = sample();
  partial.calls = 4;
  partial.calls_compared = 3;
  const std::string good = localization_to_json(partial);
  std::string reason_on_ok = good;
  reason_on_ok.replace(reason_on_ok.find(",\"inf\"]"), 7, ",\"inf\",\"why\"]");
  EXPECT_NE(error_of(reason_on_ok).find("only a not_observable layer has a reason"), std::string::npos)
      << error_of(reason_on_ok);
  std::string lone = good;
  lone.replace(lone.find(",\"calls_compared\":3"), 19, "");
  EXPECT_EQ(error_of(lone), "localization: 'calls' and 'calls_compared' come together");
  std::string more = good;
  more.replace(more.find("\"calls_compared\":3"), 18, "\"calls_compared\":9");
  EXPECT_EQ(error_of(more), "localization: 'calls_compared' must be between 0 and 'calls'");
  std::string status = good;
  status.replace(status.find("\"localized\""), 11, "\"done\"");
  EXPECT_EQ(error_of(status), "localization: status must be localized, partial or within_thresholds, got 'done'");
}

// A profile that left layers uncompared for a reason other than fusion never says only
// "no divergent layer": it says what was not compared, from where, and why.
TEST(Tier2ProfileTest, DescribeNeverCallsAPartialProfileClean) {
  Localization partial = sample();
  partial.first_divergent.clear();
  partial.status = LocalizationStatus::k_partial;
  partial.not_captured = "2 of 4 layers not compared, from block2.conv/aten::conv2d#1 on: not run on the target";
  partial.calls = 6;
  partial.calls_compared = 3;
  partial.coverage = 0.5;
  EXPECT_EQ(describe_localization(partial),
            "no divergent layer among the compared ones, but the partial profile: 2 of 4 layers not compared, from "
            "block2.conv/aten::conv2d#1 on: not run on the target; coverage 50% (3 of 6 module calls compared; 3 of "
            "4 layers, 1 not observable)");
  Localization found = sample();
  found.calls = 6;
  found.calls_compared = 5;
  found.coverage = 5.0 / 6.0;
  found.not_captured =
      "1 of 4 layers not compared, from head/aten::linear#1 on: runs 3 times on the reference, 2 on "
      "the target";
  EXPECT_NE(describe_localization(found).find("re-injection confirmed); partial profile: 1 of 4 layers not compared"),
            std::string::npos)
      << describe_localization(found);
}

}  // namespace
}  // namespace driftgate

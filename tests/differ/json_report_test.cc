// report.json is written check by check (a diff may list a million checks) rather
// than as one DOM: these tests hold it to the bytes the one-DOM dump would give.
#include "differ/json_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/tier2_profile.h"
#include "differ/gate_policy.h"
#include "differ/report.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::found;
using test::make_check;
using test::make_environment;
using test::make_run;
using Json = nlohmann::ordered_json;

const std::string k_base_sha = "0123456789abcdef0123456789abcdef01234567";
const std::string k_run_sha = "fedcba9876543210fedcba9876543210fedcba98";

// The one-DOM rendering of the same text: parse it and dump it again.
std::string redumped(const std::string& text) {
  return Json::parse(text).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

TEST(JsonReport, CheckByCheckIsTheDomDump) {
  RunFile baseline = make_run(
      k_base_sha, make_environment(),
      {make_check("a", CheckStatus::k_pass, 1e-6), make_check("b", CheckStatus::k_pass, 1e-6),
       make_check("c", CheckStatus::k_fail_numeric, std::nan("")), make_check("gone", CheckStatus::k_pass, 0.0)});
  RunFile run = make_run(k_run_sha, make_environment(),
                         {make_check("a", CheckStatus::k_fail_numeric, 0.1, "a & <b>"),
                          make_check("b", CheckStatus::k_fail_numeric, 1e300, "quote \" and \x1b[31mred caf\xc3\xa9"),
                          make_check("c", CheckStatus::k_pass, INFINITY, "bad \xff UTF-8"),
                          make_check("d", CheckStatus::k_skipped, -0.0, "tab\there")});
  run.header.experiments[0].model_hash = "changed";  // every check gets a note
  GatePolicy policy = parse_gate_policy(
      "allow:\n"
      "  - {check: 'exp/a/*', owner: alice, reason: 'known \"bug\" caf\u00e9', expires: 2026-12-31}\n",
      "gate.yaml", "2026-06-15");
  Report report = make_report(run, found(baseline), diff_runs(run, baseline), policy);
  report.refresh_command = "driftgate baseline accept 'exp/b/*'";
  // A failing check with a partial tier-2 profile says so in report.json too.
  auto partial = std::make_shared<Localization>();
  partial->status = LocalizationStatus::k_partial;
  partial->not_captured = "3 of 9 layers not compared, from f/aten::add_#1 (m.py:3) [then@m.py:2] on: \"why\"";
  partial->layers = 9;
  partial->observed = 6;
  partial->calls = 5;
  partial->calls_compared = 3;
  partial->coverage = 0.6;
  report.diff->checks.front().localization = partial;
  std::string text = render_json(report);
  EXPECT_EQ(text, redumped(text));
  Json json = Json::parse(text);
  ASSERT_EQ(json["checks"].size(), 5u);
  EXPECT_EQ(json["checks"][0]["tier2"]["status"], "partial");
  EXPECT_EQ(json["checks"][0]["tier2"]["calls_compared"], 3);
  EXPECT_NE(json["checks"][0]["tier2"]["summary"].get<std::string>().find("partial profile: 3 of 9 layers"),
            std::string::npos);
  EXPECT_FALSE(json["checks"][1].contains("tier2"));
  EXPECT_EQ(json["checks"][0]["allowed_by"]["owner"], "alice");  // an object inside a check, by hand too
  EXPECT_FALSE(json["checks"][0]["notes"].empty());
  EXPECT_NE(text.find("\"message\": \"bad \xef\xbf\xbd UTF-8\""), std::string::npos);  // replaced, not thrown
  EXPECT_EQ(json["refresh"]["command"], "driftgate baseline accept 'exp/b/*'");
}

TEST(JsonReport, NoBaselineHasNoChecks) {
  RunFile run = make_run(k_run_sha, make_environment(), {make_check("a", CheckStatus::k_pass, 1e-6)});
  BaselineSelection none;
  none.reason = "no baseline";
  Report report = make_report(run, none, std::nullopt, GatePolicy{});
  std::string text = render_json(report);
  EXPECT_EQ(text, redumped(text));
  EXPECT_NE(text.find("\n  \"checks\": [],\n"), std::string::npos);
}

}  // namespace
}  // namespace driftgate

// The renderers beside markdown and the pieces the gate policy adds to all of them:
// text for terminals, JUnit XML, the markdown budget and folding, the allowlist
// and expired entries in every output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "differ/gate_policy.h"
#include "differ/json_report.h"
#include "differ/junit_report.h"
#include "differ/markdown_report.h"
#include "differ/report.h"
#include "differ/text_report.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::found;
using test::make_check;
using test::make_environment;
using test::make_run;

const std::string k_base_sha = "0123456789abcdef0123456789abcdef01234567";
const std::string k_run_sha = "fedcba9876543210fedcba9876543210fedcba98";

// a regressed (allowlisted), b regressed (entry expired), c fixed, d new.
struct Fixture {
  RunFile baseline = make_run(k_base_sha, make_environment(),
                              {make_check("a", CheckStatus::k_pass, 1e-6), make_check("b", CheckStatus::k_pass, 1e-6),
                               make_check("c", CheckStatus::k_fail_numeric, 0.5)});
  RunFile run = make_run(k_run_sha, make_environment(),
                         {make_check("a", CheckStatus::k_fail_numeric, 0.1, "a & <b>"),
                          make_check("b", CheckStatus::k_fail_numeric, 0.2, "quote \" and \x1b[31mred"),
                          make_check("c", CheckStatus::k_pass, 1e-7), make_check("d", CheckStatus::k_pass, 1e-7)});
  GatePolicy policy = parse_gate_policy(
      "allow:\n"
      "  - {check: 'exp/a/*', owner: alice, reason: known, expires: 2026-12-31}\n"
      "  - {check: 'exp/b/*', owner: bob, reason: stale, expires: 2026-01-01}\n",
      "gate.yaml", "2026-06-15");
  Report report() const { return make_report(run, found(baseline), diff_runs(run, baseline), policy); }
};

const std::string k_expired_note =
    "allowlist entry 'exp/b/*' (gate.yaml:3, owner bob) expired on 2026-01-01 and no longer applies; renew or remove "
    "it";

TEST(PolicyInReports, AllowedChecksPassExpiredEntriesAreNotedEverywhere) {
  Fixture f;
  Report report = f.report();
  EXPECT_EQ(report.verdict, Verdict::k_fail);
  EXPECT_EQ(report.gated_present, std::vector<DiffClass>{DiffClass::k_regressed});
  EXPECT_EQ(report.notes, std::vector<std::string>{k_expired_note});

  nlohmann::json json = nlohmann::json::parse(render_json(report));
  EXPECT_EQ(json["notes"], nlohmann::json({k_expired_note}));
  EXPECT_EQ(json["checks"][0]["id"], "exp/a/cpu_fp32~onednn_off/out");
  EXPECT_EQ(json["checks"][0]["gated"], false);
  EXPECT_EQ(json["checks"][0]["allowed_by"]["owner"], "alice");
  EXPECT_EQ(json["checks"][0]["allowed_by"]["origin"], "gate.yaml:2");
  EXPECT_EQ(json["checks"][1]["gated"], true);
  EXPECT_TRUE(json["checks"][1]["allowed_by"].is_null());
  EXPECT_EQ(json["checks"][1]["gate_origin"], "default");
  EXPECT_EQ(json["policy"]["source"], "gate.yaml");
  EXPECT_EQ(json["policy"]["allow"][1]["expired"], true);
  EXPECT_EQ(json["policy"]["describe"][0], "(default) gate: [regressed, crashed, missing, failure_grew, new_failure]");
  EXPECT_TRUE(json["refresh"].is_null());

  std::string markdown = render_markdown(report);
  EXPECT_NE(markdown.find("> allowlist entry 'exp/b/\\*' (gate.yaml:3, owner bob) expired on 2026-01-01"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("; allowed by `exp/a/*` (gate.yaml:2, owner `alice`, until 2026-12-31: `known`)"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("\n### Regressed (1) - gated\n- `exp/b/"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("<details><summary>Not gated: 1 regressed, 1 new, 1 fixed</summary>\n"), std::string::npos)
      << markdown;

  std::string text = render_text(report);
  EXPECT_NE(text.find("note: " + k_expired_note + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  (gate.yaml:3) allow: 'exp/b/*' owner bob until 2026-01-01 EXPIRED: stale\n"),
            std::string::npos)
      << text;

  std::string junit = render_junit(report);
  EXPECT_NE(junit.find("allowed by &apos;exp/a/*&apos; (gate.yaml:2, owner alice, until 2026-12-31): known"),
            std::string::npos)
      << junit;
}

TEST(TextReport, PlainByDefaultColouredOnRequestAndTerminalSafe) {
  Fixture f;
  Report report = f.report();
  std::string plain = render_text(report);
  EXPECT_EQ(plain.substr(0, plain.find('\n')), "driftgate: FAIL - 2 regressed, 1 new, 1 fixed");
  EXPECT_EQ(plain.find('\x1b'), std::string::npos) << plain;
  EXPECT_NE(plain.find("quote \" and ?[31mred"), std::string::npos) << plain;
  EXPECT_NE(plain.find("\nregressed (2), 1 gated:\n  exp/a/cpu_fp32~onednn_off/out  pass -> fail_numeric  max_abs "
                       "1e-06 -> 0.1; a & <b>; allowed by 'exp/a/*' (gate.yaml:2, owner alice, until 2026-12-31)\n"),
            std::string::npos)
      << plain;
  std::string colored = render_text(report, TextOptions{true});
  EXPECT_EQ(colored.substr(0, colored.find('\n')), "driftgate: \x1b[1;31mFAIL\x1b[0m - 2 regressed, 1 new, 1 fixed");
  EXPECT_EQ(terminal_safe("a\x1b\x07\nb\x7f"), "a?? b?");
  // Bidi overrides, C1 controls and bytes that are not UTF-8 show as escapes, never as themselves.
  EXPECT_EQ(terminal_safe("exp/\xE2\x80\xAEtxt.exe\xC2\x9B/caf\xE9"), "exp/\\u202etxt.exe\\u009b/caf\\xe9");
}

TEST(JunitReport, OneTestcasePerCheckFailuresForGatedEscaped) {
  Fixture f;
  std::string junit = render_junit(f.report());
  EXPECT_EQ(junit.substr(0, 38), "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
  EXPECT_NE(junit.find("<testsuites name=\"driftgate\" tests=\"4\" failures=\"1\">"), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testsuite name=\"exp\" tests=\"4\" failures=\"1\" skipped=\"0\">"), std::string::npos);
  EXPECT_NE(junit.find("<testcase classname=\"exp\" name=\"exp/b/cpu_fp32~onednn_off/out\" time=\"0\">\n"
                       "      <failure type=\"regressed\" message=\"regressed: pass -&gt; fail_numeric, max_abs 1e-06 "
                       "-&gt; 0.2\">quote &quot; and \xEF\xBF\xBD[31mred</failure>"),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<testcase classname=\"exp\" name=\"exp/d/cpu_fp32~onednn_off/out\" time=\"0\"/>"),
            std::string::npos);
  size_t cases = 0;
  for (size_t at = junit.find("<testcase "); at != std::string::npos; at = junit.find("<testcase ", at + 1)) {
    ++cases;
  }
  EXPECT_EQ(cases, 4u);
  EXPECT_EQ(xml_escape("<a href='x'>&\"\t\x01"), "&lt;a href=&apos;x&apos;&gt;&amp;&quot;&#9;\xEF\xBF\xBD");

  BaselineSelection none;
  none.reason = "no baseline within 3 first-parent commits of <abc>";
  std::string neutral = render_junit(make_report(f.run, none, std::nullopt, f.policy));
  EXPECT_NE(
      neutral.find("<property name=\"reason\" value=\"no baseline within 3 first-parent commits of &lt;abc&gt;\"/>"),
      std::string::npos)
      << neutral;
  EXPECT_EQ(neutral.find("<testcase"), std::string::npos);
}

TEST(MarkdownReport, TheBudgetCutsChecksWithANoticeAndClosesDetails) {
  std::vector<CheckRecord> before;
  std::vector<CheckRecord> after;
  for (int i = 0; i < 40; ++i) {
    std::string input = "in" + std::to_string(100 + i);
    before.push_back(make_check(input, CheckStatus::k_pass, 1e-6));
    after.push_back(make_check(input, CheckStatus::k_fail_numeric, 1.0, std::string(100, 'm')));
    before.push_back(make_check("new" + std::to_string(i), CheckStatus::k_fail_numeric, 1.0));
    after.push_back(make_check("new" + std::to_string(i), CheckStatus::k_pass, 1e-7));
  }
  RunFile baseline = make_run(k_base_sha, make_environment(), before);
  RunFile run = make_run(k_run_sha, make_environment(), after);
  Report report = make_report(run, found(baseline), diff_runs(run, baseline), GatePolicy{});
  std::string whole = render_markdown(report);
  EXPECT_EQ(whole.find("more checks not shown"), std::string::npos);
  ASSERT_GT(whole.size(), 6000u);
  for (size_t budget : {size_t{3000}, size_t{6000}, whole.size() - 100}) {
    std::string cut = render_markdown(report, budget);
    EXPECT_LE(cut.size(), budget);
    EXPECT_NE(cut.find("more checks not shown: this summary is limited to " + std::to_string(budget) +
                       " bytes (--markdown-budget); report.json lists every check.*\n"),
              std::string::npos)
        << cut;
    EXPECT_EQ(cut.find("<details>") == std::string::npos, cut.find("</details>") == std::string::npos) << cut;
    // Worst first: the gated regressions come before anything folded.
    EXPECT_NE(cut.find("### Regressed (40) - gated\n- `exp/in100/"), std::string::npos);
  }
  std::string small = render_markdown(report, 3000);
  EXPECT_EQ(small.find("<details>"), std::string::npos);
  EXPECT_NE(small.find("*"), std::string::npos);
}

}  // namespace
}  // namespace driftgate

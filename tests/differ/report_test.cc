#include "differ/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "differ/json_report.h"
#include "differ/markdown_report.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::make_check;
using test::make_environment;
using test::make_run;

const std::string k_run_sha = "fedcba9876543210fedcba9876543210fedcba98";
const std::string k_base_sha = "0123456789abcdef0123456789abcdef01234567";
const std::string k_start_sha = "89abcdef0123456789abcdef0123456789abcdef";

BaselineSelection found_at(const RunFile& baseline, int steps) {
  BaselineSelection selection;
  selection.found = true;
  selection.sha = baseline.header.commit.sha;
  selection.env_key = baseline.header.environment.key();
  selection.steps = steps;
  selection.start_sha = k_start_sha;
  selection.baseline = baseline;
  return selection;
}

Report report_for(const RunFile& run, const RunFile& baseline, const BaselineSelection& selection) {
  return make_report(run, selection, diff_runs(run, baseline), GatePolicy{});
}

// A regression, a fix, an unchanged check, and a model that changed.
struct Fixture {
  RunFile baseline =
      make_run(k_base_sha, make_environment(),
               {make_check("a", CheckStatus::k_pass, 1e-6), make_check("b", CheckStatus::k_fail_numeric, 0.5),
                make_check("c", CheckStatus::k_pass, 1e-6)},
               "abc1234000000000000000000000000000000000");
  RunFile run = make_run(k_run_sha, make_environment(),
                         {make_check("a", CheckStatus::k_fail_numeric, 0.0123, "3 of 10 elements outside atol"),
                          make_check("b", CheckStatus::k_pass, 2e-7), make_check("c", CheckStatus::k_pass, 1e-6)},
                         "def5678000000000000000000000000000000000");
};

TEST(MarkdownReport, FailSummaryIsPinned) {
  Fixture f;
  Report report = report_for(f.run, f.baseline, found_at(f.baseline, 2));
  EXPECT_EQ(report.verdict, Verdict::k_fail);
  EXPECT_EQ(report_exit_code(report), ExitCode::k_gated);
  std::string key = make_environment().key();
  std::string expected =
      "**driftgate: FAIL** \xE2\x80\x94 1 regressed, 1 fixed\n"
      "\n"
      "Baseline `0123456` (environment `" +
      key +
      "`), 2 first-parent steps back from `89abcde`; run `fedcba9`.\n"
      "\n"
      "| class | checks | gates |\n"
      "|:--|--:|:--|\n"
      "| regressed | 1 | yes |\n"
      "| crashed | 0 | yes |\n"
      "| missing | 0 | yes |\n"
      "| failure grew | 0 | yes |\n"
      "| new failure | 0 | yes |\n"
      "| drift grew | 0 | no |\n"
      "| new | 0 | no |\n"
      "| fixed | 1 | no |\n"
      "| unchanged | 1 | no |\n"
      "\n"
      "Gate policy:\n"
      "- `(default) gate: [regressed, crashed, missing, failure_grew, new_failure]`\n"
      "\n"
      "Changed since the baseline (differences in these experiments may come from this):\n"
      "- `exp`: `model changed (abc1234 -> def5678)`\n"
      "\n"
      "### Regressed (1) - gated\n"
      "- `exp/a/cpu_fp32~onednn_off/out`: pass \xE2\x86\x92 fail_numeric; max_abs 1e-06 \xE2\x86\x92 0.0123; "
      "model changed (abc1234 -> def5678); `3 of 10 elements outside atol`\n"
      "\n"
      "<details><summary>Not gated: 1 fixed</summary>\n"
      "\n"
      "### Fixed (1)\n"
      "- `exp/b/cpu_fp32~onednn_off/out`: fail_numeric \xE2\x86\x92 pass; max_abs 0.5 \xE2\x86\x92 2e-07; "
      "model changed (abc1234 -> def5678)\n"
      "\n"
      "</details>\n";
  EXPECT_EQ(render_markdown(report), expected);
  EXPECT_EQ(render_verdict_line(report), "**driftgate: FAIL** \xE2\x80\x94 1 regressed, 1 fixed");
}

TEST(MarkdownReport, PassAndNoBaselineVerdicts) {
  Fixture f;
  Report pass = report_for(f.baseline, f.baseline, found_at(f.baseline, 0));
  EXPECT_EQ(pass.verdict, Verdict::k_pass);
  EXPECT_EQ(report_exit_code(pass), ExitCode::k_ok);
  EXPECT_EQ(render_verdict_line(pass), "**driftgate: PASS** \xE2\x80\x94 3 unchanged");

  BaselineSelection none;
  none.reason =
      "no comparable baseline: baselines exist only for other environments: 0123456789abcdef (threads 1 -> 2)";
  Report neutral = make_report(f.run, none, std::nullopt, GatePolicy{});
  EXPECT_EQ(neutral.verdict, Verdict::k_no_baseline);
  EXPECT_EQ(report_exit_code(neutral), ExitCode::k_ok);
  EXPECT_EQ(render_markdown(neutral),
            "**driftgate: no comparable baseline** \xE2\x80\x94 baselines exist only for other environments: "
            "0123456789abcdef (threads 1 -> 2)\n"
            "\n"
            "Nothing was compared, so the gate is neutral (exit 0). Store a baseline on the target branch with "
            "`driftgate baseline update run.jsonl`.\n");
}

TEST(MarkdownReport, NotesAndEnvironmentMismatchAreShown) {
  Fixture f;
  RunFile other_env = f.baseline;
  other_env.header.environment = make_environment("2");
  BaselineSelection selection = found_at(other_env, 1);
  selection.env_mismatch = true;
  selection.env_changes = "threads 2 -> 1";
  selection.notes.push_back(k_shallow_clone_note);
  f.run.header.commit.dirty = true;
  Report report = report_for(f.run, other_env, selection);
  std::string markdown = render_markdown(report);
  EXPECT_EQ(markdown.substr(0, markdown.find('\n')),
            "**driftgate: FAIL** \xE2\x80\x94 1 regressed, 1 fixed (compared across environments)");
  EXPECT_NE(markdown.find("\n> shallow clone: the merge base of HEAD and BASE is not in this clone; fetch full history "
                          "(actions/checkout fetch-depth: 0, GIT\\_DEPTH: 0) \xE2\x80\x94 falling back to HEAD's own "
                          "ancestors\n"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("\n> the run was made with uncommitted changes to tracked files on top of fedcba9, so it "
                          "may not match that commit\n"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("> **Compared across environments** (`--allow-env-mismatch`): the baseline's environment `" +
                          make_environment("2").key() + "` is not the run's `" + make_environment().key() +
                          "` (`threads 2 -> 1`); differences may come from the environment.\n"),
            std::string::npos)
      << markdown;
}

TEST(MarkdownReport, HostileCheckNamesStayInertCode) {
  std::string hostile = "exp/x|y<script>alert(1)</script>``z`@octocat/**b**";
  CheckRecord before = make_check("in", CheckStatus::k_pass, 1e-6);
  before.id = hostile;
  CheckRecord after = before;
  after.status = CheckStatus::k_fail_numeric;
  after.message = "line one\n<img src=x onerror=alert(1)> | @team";
  RunFile baseline = make_run(k_base_sha, make_environment(), {before});
  RunFile run = make_run(k_run_sha, make_environment(), {after});
  std::string markdown = render_markdown(report_for(run, baseline, found_at(baseline, 0)));
  std::string line =
      "- ```exp/x|y<script>alert(1)</script>``z`@octocat/**b**```: pass \xE2\x86\x92 fail_numeric; max_abs 1e-06 "
      "\xE2\x86\x92 1e-06; `line one <img src=x onerror=alert(1)> | @team`\n";
  EXPECT_NE(markdown.find(line), std::string::npos) << markdown;
  // Nothing hostile appears outside that one line.
  std::string rest = markdown;
  rest.erase(rest.find(line), line.size());
  EXPECT_EQ(rest.find("<"), std::string::npos) << rest;
  EXPECT_EQ(rest.find("@"), std::string::npos) << rest;
  // The counts table keeps its 11 rows (header, rule, 9 classes): no stray pipes broke it.
  size_t rows = 0;
  for (size_t at = markdown.find("\n|"); at != std::string::npos; at = markdown.find("\n|", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 11u);
}

TEST(MarkdownReport, CodeSpansAndTextEscaping) {
  EXPECT_EQ(markdown_code("plain"), "`plain`");
  EXPECT_EQ(markdown_code("a`b"), "``a`b``");
  EXPECT_EQ(markdown_code("`x`"), "`` `x` ``");
  EXPECT_EQ(markdown_code("a```b``c"), "````a```b``c````");
  EXPECT_EQ(markdown_code("two\nlines"), "`two lines`");
  EXPECT_EQ(markdown_text("@octocat <b>x</b> *y* [l](u) a|b"),
            "@\xE2\x81\xA0octocat \\<b>x\\</b> \\*y\\* \\[l\\](u) a\\|b");
  EXPECT_EQ(markdown_text("# not a heading"), "\\# not a heading");
  EXPECT_EQ(markdown_text("model changed (abc1234 -> def5678)"), "model changed (abc1234 -> def5678)");
}

TEST(MarkdownReport, LongClassListsAreCut) {
  std::vector<CheckRecord> before;
  std::vector<CheckRecord> after;
  for (int i = 0; i < k_markdown_checks_per_class + 10; ++i) {
    std::string input = "in" + std::to_string(100 + i);
    before.push_back(make_check(input, CheckStatus::k_pass, 1e-6));
    after.push_back(make_check(input, CheckStatus::k_fail_numeric, 1.0));
  }
  RunFile baseline = make_run(k_base_sha, make_environment(), before);
  RunFile run = make_run(k_run_sha, make_environment(), after);
  std::string markdown = render_markdown(report_for(run, baseline, found_at(baseline, 0)));
  EXPECT_NE(markdown.find("`exp/in149/cpu_fp32~onednn_off/out`"), std::string::npos);
  EXPECT_EQ(markdown.find("`exp/in150/cpu_fp32~onednn_off/out`"), std::string::npos);
  EXPECT_NE(markdown.find("\n- ... and 10 more (see report.json)\n"), std::string::npos);
}

TEST(JsonReport, FieldsAndOrderArePinned) {
  Fixture f;
  Report report = report_for(f.run, f.baseline, found_at(f.baseline, 2));
  std::string text = render_json(report);
  EXPECT_EQ(text, render_json(report));
  nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["schema"], 1);
  EXPECT_EQ(json["verdict"], "fail");
  EXPECT_EQ(json["reason"], "");
  EXPECT_EQ(json["exit_code"], 1);
  EXPECT_EQ(json["run"]["sha"], k_run_sha);
  EXPECT_EQ(json["run"]["env_key"], make_environment().key());
  EXPECT_EQ(json["baseline"]["sha"], k_base_sha);
  EXPECT_EQ(json["baseline"]["env_key"], make_environment().key());
  EXPECT_EQ(json["baseline"]["steps"], 2);
  EXPECT_EQ(json["baseline"]["start_sha"], k_start_sha);
  EXPECT_EQ(json["env_mismatch"], false);
  EXPECT_EQ(json["env_changes"], "");
  EXPECT_EQ(json["gated_classes"], nlohmann::json({"regressed", "crashed", "missing", "failure_grew", "new_failure"}));
  EXPECT_EQ(json["gated_present"], nlohmann::json({"regressed"}));
  EXPECT_EQ(json["counts"], nlohmann::json({{"regressed", 1},
                                            {"crashed", 0},
                                            {"missing", 0},
                                            {"failure_grew", 0},
                                            {"new_failure", 0},
                                            {"drift_grew", 0},
                                            {"task_changed", 0},
                                            {"new", 0},
                                            {"fixed", 1},
                                            {"unchanged", 1}}));
  EXPECT_EQ(json["experiment_changes"][0]["note"], "model changed (abc1234 -> def5678)");
  ASSERT_EQ(json["checks"].size(), 3u);
  const auto& first = json["checks"][0];
  EXPECT_EQ(first["id"], "exp/a/cpu_fp32~onednn_off/out");
  EXPECT_EQ(first["class"], "regressed");
  EXPECT_EQ(first["gated"], true);
  EXPECT_EQ(first["status_before"], "pass");
  EXPECT_EQ(first["status_after"], "fail_numeric");
  EXPECT_EQ(first["max_abs_before"], 1e-6);
  EXPECT_EQ(first["max_abs_after"], 0.0123);
  EXPECT_EQ(first["message"], "3 of 10 elements outside atol");
  EXPECT_EQ(first["notes"], nlohmann::json({"model changed (abc1234 -> def5678)"}));
  EXPECT_EQ(json["checks"][1]["class"], "fixed");
  EXPECT_EQ(json["checks"][2]["class"], "unchanged");
  // Keys in a fixed order: the file diffs well.
  EXPECT_EQ(text.find("\"schema\""), 4u);
  EXPECT_LT(text.find("\"verdict\""), text.find("\"counts\""));
  EXPECT_LT(text.find("\"counts\""), text.find("\"checks\""));
}

TEST(JsonReport, NoBaselineAndMismatchAreExplicit) {
  Fixture f;
  BaselineSelection none;
  none.reason = "no baseline within 200 first-parent commits of 89abcde";
  nlohmann::json neutral = nlohmann::json::parse(render_json(make_report(f.run, none, std::nullopt, GatePolicy{})));
  EXPECT_EQ(neutral["verdict"], "no_baseline");
  EXPECT_EQ(neutral["reason"], "no baseline within 200 first-parent commits of 89abcde");
  EXPECT_EQ(neutral["exit_code"], 0);
  EXPECT_TRUE(neutral["baseline"].is_null());
  EXPECT_EQ(neutral["counts"]["regressed"], 0);
  EXPECT_TRUE(neutral["checks"].empty());

  RunFile other_env = f.baseline;
  other_env.header.environment = make_environment("2");
  BaselineSelection selection = found_at(other_env, 1);
  selection.env_mismatch = true;
  selection.env_changes = "threads 2 -> 1";
  nlohmann::json mismatch = nlohmann::json::parse(render_json(report_for(f.run, other_env, selection)));
  EXPECT_EQ(mismatch["env_mismatch"], true);
  EXPECT_EQ(mismatch["env_changes"], "threads 2 -> 1");
  EXPECT_EQ(mismatch["baseline"]["env_key"], make_environment("2").key());
}

TEST(JsonReport, InvalidUtf8AndNonFiniteValuesDoNotBreakIt) {
  CheckRecord before = make_check("in", CheckStatus::k_pass, 1e-6);
  before.id = "exp/\xFF\xFE/out";
  CheckRecord after = before;
  after.stats->max_abs = INFINITY;
  RunFile baseline = make_run(k_base_sha, make_environment(), {before});
  RunFile run = make_run(k_run_sha, make_environment(), {after});
  nlohmann::json json = nlohmann::json::parse(render_json(report_for(run, baseline, found_at(baseline, 0))));
  EXPECT_EQ(json["checks"][0]["class"], "drift_grew");
  EXPECT_EQ(json["checks"][0]["max_abs_after"], "inf");
  EXPECT_EQ(json["checks"][0]["id"], "exp/\xEF\xBF\xBD\xEF\xBF\xBD/out");
}

}  // namespace
}  // namespace driftgate

#include "ci/comment_body.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ci/markdown_escape.h"
#include "core/error.h"
#include "tests/ci/post_test_support.h"

namespace driftgate {
namespace {

using test::make_report;
using test::report_check;

size_t count_of(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

TEST(CommentBody, SummaryFirstThenWorstThenDetails) {
  auto report = make_report("fail", {report_check("m/in/cpu_fp32~frozen/out", "regressed", true, "max_abs 0.25"),
                                     report_check("m/in/cpu_fp32~bf16/out", "drift_grew", false)});
  std::string body = render_comment_body(report, BodyOptions{"<!-- m -->", "", "https://x.example/run/1"});
  EXPECT_EQ(body.rfind("<!-- m -->\n### driftgate: FAIL \\- 1 regressed, 1 drift grew\n", 0), 0U) << body;
  size_t worst = body.find("#### Worst regressions");
  size_t details = body.find("<details>");
  ASSERT_NE(worst, std::string::npos);
  ASSERT_NE(details, std::string::npos);
  EXPECT_LT(worst, body.find("`m/in/cpu_fp32~frozen/out`"));
  EXPECT_LT(details, body.find("`m/in/cpu_fp32~bf16/out`"));
  EXPECT_NE(body.find("Full report: [report.json](https://x.example/run/1)"), std::string::npos) << body;
  EXPECT_EQ(body.find("Truncated"), std::string::npos);
}

TEST(CommentBody, WorstRegressionsAreTheLargestNotTheFirstById) {
  std::vector<nlohmann::json> checks;
  for (int i = 0; i < 15; ++i) {
    auto check = report_check("m/in" + std::to_string(10 + i) + "/a~b/o", "regressed", true);
    check["max_abs_after"] = 0.01 * (i + 1);  // in id order, the largest last
    checks.push_back(check);
  }
  auto crashed = report_check("z/in/a~b/o", "crashed", true);
  crashed["max_abs_after"] = nullptr;
  checks.push_back(crashed);
  std::string body = render_comment_body(make_report("fail", checks), BodyOptions{"", "", ""});
  size_t details = body.find("<details>");
  ASSERT_NE(details, std::string::npos) << body;
  std::string worst = body.substr(0, details);
  EXPECT_LT(worst.find("`m/in24/a~b/o`"), worst.find("`m/in23/a~b/o`")) << "largest first: " << worst;
  for (int i = 15; i < 25; ++i) {
    EXPECT_NE(worst.find("`m/in" + std::to_string(i) + "/a~b/o`"), std::string::npos) << i << ": " << worst;
  }
  EXPECT_EQ(worst.find("`m/in10/a~b/o`"), std::string::npos) << "the smallest go to <details>";
  EXPECT_NE(body.find("`m/in10/a~b/o`", details), std::string::npos);
  EXPECT_EQ(worst.find("`z/in/a~b/o`"), std::string::npos) << "crashed ranks after regressed";
  EXPECT_EQ(count_of(body, "\n- "), 16U) << "every changed check once";
}

TEST(CommentBody, TaskChangedIsCountedAndListedOnlyWhenPresent) {
  auto report = make_report("pass", {report_check("m/in/cpu_fp32~cpu_bf16/task:classification", "task_changed", false),
                                     report_check("m/in/cpu_fp32~frozen/out", "unchanged", false)});
  std::string body = render_comment_body(report, BodyOptions{"<!-- m -->", "", ""});
  EXPECT_EQ(body.rfind("<!-- m -->\n### driftgate: PASS \\- 1 task changed\n", 0), 0U) << body;
  EXPECT_NE(body.find("| task changed | 1 |"), std::string::npos) << body;
  EXPECT_NE(body.find("`m/in/cpu_fp32~cpu_bf16/task:classification` task changed"), std::string::npos) << body;

  std::string plain = render_comment_body(make_report("pass", {report_check("m/in/a~b/out", "unchanged", false)}),
                                          BodyOptions{"<!-- m -->", "", ""});
  EXPECT_EQ(plain.find("task changed"), std::string::npos) << plain;
}

TEST(CommentBody, NamesFromResultsCannotMentionInjectHtmlOrLinks) {
  std::string evil_id = "x/@admin <img src=x onerror=alert(1)>/[y](https://evil.example)`~`/o";
  auto check = report_check(evil_id, "regressed", true, "</details> @team ``` boom");
  check["notes"] = {"model changed by @mallory <b>x</b> [l](https://evil.example)"};
  auto report = make_report("fail", {check});
  report["notes"] = {"<script>alert(1)</script>"};
  report["experiment_changes"] = {{{"experiment", "@x"}, {"note", "<i>"}}};
  std::string body = render_comment_body(report, BodyOptions{"", "", ""});
  EXPECT_NE(body.find(code_span(evil_id)), std::string::npos) << body;
  EXPECT_NE(body.find(code_span("</details> @team ``` boom")), std::string::npos) << body;
  // Outside code spans: no raw HTML, no mention, no link.
  EXPECT_EQ(body.find("<script>"), std::string::npos) << body;
  EXPECT_EQ(body.find("<b>"), std::string::npos) << body;
  EXPECT_EQ(body.find("@mallory"), std::string::npos) << body;
  EXPECT_EQ(count_of(body, "](https://evil"), 1U) << "only inside the id's code span: " << body;
  EXPECT_EQ(count_of(body, "</details>"), count_of(body, "<details>") + 1) << "one inside a code span";
}

TEST(CommentBody, LongReportIsTruncatedWithNoticeAndLinkWithinBudget) {
  std::vector<nlohmann::json> checks;
  for (int i = 0; i < 3000; ++i) {
    checks.push_back(report_check("exp/input" + std::to_string(i) + "/cpu_fp32~frozen/out",
                                  i < 40 ? "regressed" : "new", i < 40, std::string(120, 'm')));
  }
  auto report = make_report("fail", checks);
  BodyOptions options{"<!-- m -->", "linux", "https://ci.example/artifacts/7", k_github_comment_budget};
  std::string body = render_comment_body(report, options);
  EXPECT_LE(utf16_length(body), 65536U);
  EXPECT_GT(utf16_length(body), 60000U) << "the budget is used, not wasted";
  EXPECT_NE(body.find("**Truncated:**"), std::string::npos);
  EXPECT_NE(body.find("see [report.json](https://ci.example/artifacts/7)"), std::string::npos);
  EXPECT_EQ(count_of(body, "<details>"), count_of(body, "</details>"));
  EXPECT_EQ(count_of(body, "\n- "), 3000U - std::stoul(body.substr(body.find("**Truncated:** ") + 15)));
}

TEST(CommentBody, ByteBudgetCountsBytes) {
  std::vector<nlohmann::json> checks;
  for (int i = 0; i < 400; ++i) {
    checks.push_back(report_check("\xE2\x86\x92\xE2\x86\x92/" + std::to_string(i), "new", false));
  }
  BodyOptions options{"", "", "", BodyBudget{8000, true}};
  std::string body = render_comment_body(make_report("pass", checks), options);
  EXPECT_LE(body.size(), 8000U);
  EXPECT_GT(body.size(), 7000U);
  EXPECT_NE(body.find("allows 8000 bytes"), std::string::npos);
}

CommentAppendix trend_appendix(std::string markdown) {
  CommentAppendix appendix;
  appendix.title = "Trend on main";
  appendix.markdown = std::move(markdown);
  return appendix;
}

const std::string k_trend = "| commit | pass rate |\n|:--|--:|\n| `abc1234` | 100% |\n";

TEST(CommentBody, TrendFollowsTheSummaryFoldedWhenItFits) {
  auto report = make_report("fail", {report_check("m/in/a~b/out", "regressed", true)});
  BodyOptions options{"<!-- m -->", "", "https://x.example/run/1"};
  const std::string summary = render_comment_body(report, options);
  options.appendix = trend_appendix(k_trend);
  const std::string body = render_comment_body(report, options);
  ASSERT_EQ(body.rfind(summary, 0), 0U) << "the regression summary is unchanged:\n" << body;
  EXPECT_EQ(body.substr(summary.size()),
            "\n<details><summary>Trend on main</summary>\n\n" + k_trend + "\n</details>\n");
  EXPECT_LT(body.find("Full report:"), body.find("Trend on main"));
  EXPECT_EQ(body.find("left out"), std::string::npos);
}

TEST(CommentBody, TrendThatDoesNotFitIsANoticeAndTheSummaryStaysWhole) {
  auto report = make_report("fail", {report_check("m/in/a~b/out", "regressed", true)});
  BodyOptions options{"<!-- m -->", "", ""};
  const std::string summary = render_comment_body(report, options);
  // 70,000 characters: over GitHub's 65,536 alone.
  options.appendix = trend_appendix(std::string(70000, 'x'));
  const std::string body = render_comment_body(report, options);
  ASSERT_EQ(body.rfind(summary, 0), 0U) << body.substr(0, 2000);
  const std::string notice = body.substr(summary.size());
  EXPECT_EQ(notice.rfind("\n**Trend on main left out:** it is 70057 characters and the regression summary left " +
                             std::to_string(65536 - utf16_length(summary)) + " of this surface's 65536",
                         0),
            0U)
      << notice;
  EXPECT_EQ(std::count(notice.begin(), notice.end(), '\n'), 2) << "one line";
  EXPECT_EQ(body.find("<details><summary>Trend"), std::string::npos);
  EXPECT_LE(utf16_length(body), 65536U);
}

TEST(CommentBody, TruncatedRegressionsKeepPrecedenceOverTheTrend) {
  std::vector<nlohmann::json> checks;
  for (int i = 0; i < 3000; ++i) {
    checks.push_back(report_check("exp/input" + std::to_string(i) + "/cpu_fp32~frozen/out", "regressed", true,
                                  std::string(120, 'm')));
  }
  auto report = make_report("fail", checks);
  BodyOptions options{"<!-- m -->", "", "", k_github_comment_budget};
  const std::string summary = render_comment_body(report, options);
  options.appendix = trend_appendix(k_trend);
  const std::string body = render_comment_body(report, options);
  ASSERT_NE(summary.find("**Truncated:**"), std::string::npos);
  EXPECT_EQ(body.rfind(summary, 0), 0U) << "the same checks are shown with or without a trend";
  EXPECT_EQ(body.find("<summary>Trend on main</summary>"), std::string::npos);
  EXPECT_NE(body.find("\n**Trend on main left out:** the changed checks alone did not fit this surface's 65536 "
                      "characters; they come first.\n"),
            std::string::npos)
      << body.substr(summary.size());
  EXPECT_LE(utf16_length(body), 65536U);
}

TEST(CommentBody, OversizedTrendFileIsLeftOutAndTitleIsEscaped) {
  auto report = make_report("pass", {});
  CommentAppendix appendix = trend_appendix("| a |\n");
  appendix.oversized = true;
  BodyOptions options{"", "", "", k_gitlab_note_budget, appendix};
  const std::string body = render_comment_body(report, options);
  EXPECT_NE(body.find("**Trend on main left out:** it is over "), std::string::npos) << body;
  EXPECT_EQ(body.find("<details><summary>Trend"), std::string::npos);

  options.appendix = trend_appendix(k_trend);
  options.appendix.title = "Trend on <b>x</b>";
  EXPECT_EQ(render_comment_body(report, options).find("<b>"), std::string::npos);
  EXPECT_NE(render_comment_body(report, options).find("<summary>Trend on "), std::string::npos);
}

TEST(CommentBody, NoBaselineSaysWhy) {
  auto report = make_report("no_baseline", {});
  report["baseline"] = nullptr;
  report["reason"] = "no baseline for environment e1";
  std::string body = render_comment_body(report, BodyOptions{});
  EXPECT_NE(body.find("### driftgate: NO BASELINE \\- nothing gated"), std::string::npos) << body;
  EXPECT_NE(body.find("no baseline for environment e1"), std::string::npos) << body;
}

TEST(CommentBody, RejectsWhatIsNotAReport) {
  EXPECT_THROW(parse_report("[]", "r.json"), Error);
  EXPECT_THROW(parse_report(R"({"schema":2})", "r.json"), Error);
  try {
    parse_report(R"({"schema":1,"verdict":"maybe"})", "out/report.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "out/report.json: \"verdict\" is not pass, fail or no_baseline; expected the report.json that "
              "driftgate diff --report FILE writes");
  }
  EXPECT_NO_THROW(parse_report(test::make_report("pass", {}).dump(), "r.json"));
}

// Found by fuzz_report: a report typing a field the renderers read otherwise ("gated": "yes")
// threw nlohmann's type_error half-way through the comment. Each is refused up front, by name.
TEST(CommentBody, RejectsFieldsOfTheWrongType) {
  nlohmann::json good = test::make_report("fail", {});
  ASSERT_NO_THROW(parse_report(good.dump(), "r.json"));
  auto refused = [&](nlohmann::json report, const std::string& why) {
    try {
      parse_report(report.dump(), "r.json");
      ADD_FAILURE() << report.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  nlohmann::json report = good;
  report["checks"] = nlohmann::json::array({{{"id", "a/b"}, {"class", "regressed"}, {"gated", "yes"}}});
  refused(report, "\"gated\" is not true or false");
  report = good;
  report["env_mismatch"] = 1;
  refused(report, "\"env_mismatch\" is not true or false");
  report = good;
  report["counts"]["regressed"] = "3";
  refused(report, "\"counts\".regressed is not a count");
  report["counts"]["regressed"] = 4294967298LL;
  refused(report, "\"counts\".regressed is not a count");
  report = good;
  report["notes"] = "a note";
  refused(report, "\"notes\" is not a list");
}

// A value nested `depth` levels deep (arrays and objects alternating), with strings
// full of brackets and escaped quotes that must not count.
nlohmann::json nested(int depth) {
  nlohmann::json value = "[{\"]}\\";
  for (int level = 0; level < depth; ++level) {
    value = level % 2 == 0 ? nlohmann::json::array({value, "}]["}) : nlohmann::json{{"k{", value}, {"s", "\"["}};
  }
  return value;
}

TEST(CommentBody, NestingDepthIsCountedOutsideStrings) {
  for (int depth : {0, 1, 2, 5, 31, 32, 33, 200}) {
    std::string text = nested(depth).dump();
    EXPECT_EQ(json_nesting_depth(text, 1000), depth) << text.substr(0, 200);
    EXPECT_EQ(json_nesting_depth(text, 10), std::min(depth, 11)) << "stops one past the limit";
  }
  nlohmann::json report = test::make_report("pass", {});
  report["notes"] = nlohmann::json::array({nested(31 - 1)});  // the report object and "notes" add 2
  EXPECT_NO_THROW(parse_report(report.dump(), "r.json")) << json_nesting_depth(report.dump(), 100);
  report["notes"] = nlohmann::json::array({nested(32 - 1)});
  try {
    parse_report(report.dump(), "r.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "r.json: nested deeper than 32 levels; expected the report.json that driftgate diff --report FILE "
              "writes");
  }
  EXPECT_THROW(parse_report(std::string(300000, '{') + std::string(300000, '}'), "r.json"), Error);
}

TEST(CommentBody, ArtifactUrlMustBePlainHttp) {
  EXPECT_THROW(render_comment_body(make_report("pass", {}), BodyOptions{"", "", "javascript:alert(1)"}), Error);
  EXPECT_THROW(render_comment_body(make_report("pass", {}), BodyOptions{"", "", "https://x/a) [y](z"}), Error);
}

}  // namespace
}  // namespace driftgate

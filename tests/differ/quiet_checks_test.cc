// Unchanged checks with nothing to note are named, not listed (DiffResult::quiet):
// JUnit still has one passed testcase for each, report.json counts them as
// "unlisted_unchanged" instead of listing them, and 'unchanged' cannot be gated.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "differ/diff.h"
#include "differ/gate_policy.h"
#include "differ/json_report.h"
#include "differ/junit_report.h"
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

// exp: five quiet passes, a quiet pass with XML in its id, a pass that became skipped
// (unchanged, noted), a regression, a new check and a missing one; other: a quiet pass
// and a quiet failure (failing before and after); changed: its model changed, so its
// unchanged checks carry a note.
struct Fixture {
  std::vector<CheckRecord> base_checks;
  std::vector<CheckRecord> run_checks;
  RunFile baseline;
  RunFile run;
  Fixture() {
    for (const char* input : {"q1", "q2", "q3", "q4", "q5", "x&<y>'\""}) {
      base_checks.push_back(make_check(input, CheckStatus::k_pass, 1e-6));
      run_checks.push_back(make_check(input, CheckStatus::k_pass, 2e-6));
    }
    base_checks.push_back(make_check("skipped_now", CheckStatus::k_pass, 1e-6));
    run_checks.push_back(make_check("skipped_now", CheckStatus::k_skipped, std::nullopt, "no oneDNN"));
    base_checks.push_back(make_check("bad", CheckStatus::k_pass, 1e-6));
    run_checks.push_back(make_check("bad", CheckStatus::k_fail_numeric, 0.5, "elements outside"));
    run_checks.push_back(make_check("fresh", CheckStatus::k_pass, 1e-7));
    base_checks.push_back(make_check("gone", CheckStatus::k_pass, 1e-7));
    base_checks.push_back(make_check("o1", CheckStatus::k_pass, 1e-6, "", "other"));
    run_checks.push_back(make_check("o1", CheckStatus::k_pass, 1e-6, "", "other"));
    base_checks.push_back(make_check("o2", CheckStatus::k_fail_numeric, 0.5, "outside", "other"));
    run_checks.push_back(make_check("o2", CheckStatus::k_fail_numeric, 0.6, "still outside", "other"));
    for (const char* input : {"c1", "c2"}) {
      base_checks.push_back(make_check(input, CheckStatus::k_pass, 1e-6, "", "changed"));
      run_checks.push_back(make_check(input, CheckStatus::k_pass, 1e-6, "", "changed"));
    }
    baseline = make_run(k_base_sha, make_environment(), base_checks);
    run = make_run(k_run_sha, make_environment(), run_checks);
    for (auto& experiment : run.header.experiments) {
      if (experiment.name == "changed") {
        experiment.model_hash = "3333333ccccccccccccccccccccccccccccccccc";
      }
    }
  }
  Report report() const { return make_report(run, found(baseline), diff_runs(run, baseline), GatePolicy{}); }
  // Every check id in either file, with its experiment.
  std::map<std::string, std::string> all_ids() const {
    std::map<std::string, std::string> ids;
    for (const auto* checks : {&base_checks, &run_checks}) {
      for (const auto& check : *checks) {
        ids[check.id] = check.experiment;
      }
    }
    return ids;
  }
};

std::set<std::string> quiet_ids(const DiffResult& result) {
  std::set<std::string> ids;
  for (size_t i = 0; i < result.quiet.size(); ++i) {
    ids.insert(std::string(result.quiet.id(i)));
  }
  return ids;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

TEST(QuietChecks, AreTheUnchangedChecksWithoutANoteNamedInIdOrderWithTheirExperiment) {
  Fixture f;
  DiffResult result = diff_runs(f.run, f.baseline);
  std::set<std::string> expected;
  for (const char* input : {"q1", "q2", "q3", "q4", "q5", "x&<y>'\""}) {
    expected.insert(make_check_id("exp", input, "cpu_fp32", "onednn_off", "out"));
  }
  expected.insert(make_check_id("other", "o1", "cpu_fp32", "onednn_off", "out"));
  expected.insert(make_check_id("other", "o2", "cpu_fp32", "onednn_off", "out"));
  EXPECT_EQ(quiet_ids(result), expected);
  ASSERT_EQ(result.quiet.size(), expected.size());
  for (size_t i = 0; i < result.quiet.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(result.quiet.id(i - 1), result.quiet.id(i)) << "quiet ids in id order";
    }
    std::string id(result.quiet.id(i));
    EXPECT_EQ(result.quiet.experiment(i), f.all_ids().at(id)) << id;
  }
  // Not listed, but counted; the unchanged checks with a note are listed.
  for (const auto& check : result.checks) {
    EXPECT_EQ(expected.count(check.id), 0u) << check.id;
  }
  EXPECT_EQ(result.count(DiffClass::k_unchanged), 8 + 3);  // + skipped_now, c1, c2
  int64_t total = 0;
  for (DiffClass diff_class : all_diff_classes()) {
    total += result.count(diff_class);
  }
  EXPECT_EQ(total, static_cast<int64_t>(f.all_ids().size()));
  EXPECT_EQ(result.checks.size() + result.quiet.size(), f.all_ids().size());
}

// Without JUnit nothing names the quiet checks: `diff` only counts them, and the rest of
// the result is the same.
TEST(QuietChecks, CountedOnlyWhenNotNamedWithTheSameResultOtherwise) {
  Fixture f;
  DiffResult named = diff_runs(f.run, f.baseline);
  DiffOptions options;
  options.name_quiet_checks = false;
  DiffResult counted = diff_runs(f.run, f.baseline, options);
  EXPECT_TRUE(named.quiet.named());
  EXPECT_FALSE(counted.quiet.named());
  EXPECT_EQ(counted.quiet.size(), named.quiet.size());
  EXPECT_EQ(counted.counts, named.counts);
  ASSERT_EQ(counted.checks.size(), named.checks.size());
  for (size_t i = 0; i < named.checks.size(); ++i) {
    EXPECT_EQ(counted.checks[i].id, named.checks[i].id);
    EXPECT_EQ(counted.checks[i].diff_class, named.checks[i].diff_class);
  }
  Report report = make_report(f.run, found(f.baseline), std::move(counted), GatePolicy{});
  EXPECT_NE(render_json(report).find("\"unlisted_unchanged\": 8,"), std::string::npos) << render_json(report);
  EXPECT_THROW(render_junit(report), std::logic_error);  // it could not list every check
}

TEST(QuietChecks, JunitHasOnePassedTestcasePerCheckQuietOnesIncluded) {
  Fixture f;
  Report report = f.report();
  ASSERT_TRUE(report.diff);
  ASSERT_EQ(report.diff->quiet.size(), 8u);
  std::string junit = render_junit(report);
  std::map<std::string, std::string> ids = f.all_ids();
  EXPECT_EQ(occurrences(junit, "<testcase "), ids.size()) << junit;
  EXPECT_NE(junit.find("<testsuites name=\"driftgate\" tests=\"" + std::to_string(ids.size()) + "\" failures=\"2\">"),
            std::string::npos)
      << junit;  // bad (regressed) and gone (missing) are gated by default
  std::map<std::string, size_t> per_experiment;
  for (const auto& [id, experiment] : ids) {
    ++per_experiment[experiment];
    EXPECT_EQ(occurrences(junit, "name=\"" + xml_escape(id) + "\""), 1u) << id << "\n" << junit;
  }
  EXPECT_NE(junit.find("<testsuite name=\"exp\" tests=\"" + std::to_string(per_experiment["exp"]) +
                       "\" failures=\"2\" skipped=\"0\">"),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<testsuite name=\"other\" tests=\"2\" failures=\"0\" skipped=\"0\">"), std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<testsuite name=\"changed\" tests=\"2\" failures=\"0\" skipped=\"0\">"), std::string::npos)
      << junit;
  // Each quiet check is a passed testcase (no failure, no skipped, nothing inside) in its experiment's suite.
  for (size_t i = 0; i < report.diff->quiet.size(); ++i) {
    std::string id(report.diff->quiet.id(i));
    std::string experiment = report.diff->quiet.experiment(i);
    std::string testcase =
        "<testcase classname=\"" + xml_escape(experiment) + "\" name=\"" + xml_escape(id) + "\" time=\"0\"/>\n";
    size_t at = junit.find(testcase);
    ASSERT_NE(at, std::string::npos) << testcase << "\n" << junit;
    size_t suite = junit.rfind("<testsuite name=\"", at);
    ASSERT_NE(suite, std::string::npos);
    std::string suite_start = "<testsuite name=\"" + xml_escape(experiment) + "\"";
    EXPECT_EQ(junit.compare(suite, suite_start.size(), suite_start), 0)
        << id << " is not in the suite of " << experiment;
  }
  EXPECT_NE(junit.find("name=\"exp/x&amp;&lt;y&gt;&apos;&quot;/cpu_fp32~onednn_off/out\" time=\"0\"/>"),
            std::string::npos)
      << junit;
}

TEST(QuietChecks, ReportJsonCountsThemAsUnlistedUnchangedAndListsEveryOtherCheck) {
  Fixture f;
  Report report = f.report();
  std::string text = render_json(report);
  Json json = Json::parse(text);
  ASSERT_TRUE(json.contains("unlisted_unchanged")) << text;
  EXPECT_EQ(json["unlisted_unchanged"], 8);
  std::set<std::string> quiet = quiet_ids(*report.diff);
  std::set<std::string> listed;
  for (const auto& check : json["checks"]) {
    std::string id = check["id"].get<std::string>();
    EXPECT_EQ(quiet.count(id), 0u) << id << " is quiet but listed";
    EXPECT_TRUE(listed.insert(id).second) << id << " listed twice";
  }
  std::set<std::string> expected;
  for (const auto& [id, experiment] : f.all_ids()) {
    if (quiet.count(id) == 0) {
      expected.insert(id);
    }
  }
  EXPECT_EQ(listed, expected);
  EXPECT_EQ(json["counts"]["unchanged"], 11);  // the quiet ones are counted
  int64_t total = 0;
  for (const auto& [name, count] : json["counts"].items()) {
    total += count.get<int64_t>();
  }
  EXPECT_EQ(total, static_cast<int64_t>(f.all_ids().size()));
  // It is written where the one-DOM dump would write it: after "checks", before "refresh".
  size_t checks_at = text.find("\n  \"checks\": [");
  size_t unlisted_at = text.find("\n  \"unlisted_unchanged\": 8,\n");
  size_t refresh_at = text.find("\n  \"refresh\": ");
  EXPECT_LT(checks_at, unlisted_at) << text;
  EXPECT_LT(unlisted_at, refresh_at) << text;
  EXPECT_EQ(Json::parse(text).dump(2, ' ', false, Json::error_handler_t::replace) + "\n", text);

  // Nothing compared: nothing unlisted.
  BaselineSelection none;
  none.reason = "no baseline";
  Json neutral = Json::parse(render_json(make_report(f.run, none, std::nullopt, GatePolicy{})));
  EXPECT_EQ(neutral["unlisted_unchanged"], 0);
  // Every check quiet: none listed, all counted.
  Report same = make_report(f.baseline, found(f.baseline), diff_runs(f.baseline, f.baseline), GatePolicy{});
  Json all_quiet = Json::parse(render_json(same));
  EXPECT_TRUE(all_quiet["checks"].empty());
  EXPECT_EQ(all_quiet["unlisted_unchanged"], static_cast<int64_t>(f.base_checks.size()));
  EXPECT_EQ(occurrences(render_junit(same), "<testcase "), f.base_checks.size());
}

std::string policy_error(const std::string& yaml) {
  try {
    parse_gate_policy(yaml, "policy.yaml", "2026-06-15");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(QuietChecks, UnchangedCannotBeGatedAnywhere) {
  const std::string why =
      ": it is the class of checks whose result did not change; to fail on changes that still pass, gate drift_grew "
      "or task_changed";
  EXPECT_EQ(policy_error("gate: [unchanged]\n"), "policy.yaml:1:8: 'unchanged' cannot be gated in gate" + why);
  EXPECT_EQ(policy_error("gate: [regressed, unchanged, missing]\n"),
            "policy.yaml:1:19: 'unchanged' cannot be gated in gate" + why);
  EXPECT_EQ(policy_error("# policy\ngate:\n  - regressed\n  - unchanged\n"),
            "policy.yaml:4:5: 'unchanged' cannot be gated in gate" + why);
  EXPECT_EQ(policy_error("gate: [regressed]\nexperiments:\n  e: {gate: [new, unchanged]}\n"),
            "policy.yaml:3:19: 'unchanged' cannot be gated in experiment 'e' gate" + why);
  // Every other class still can be, and a misspelling is still an unknown class.
  EXPECT_EQ(policy_error("gate: [regressed, crashed, missing, drift_grew, task_changed, new, fixed]\n"), "(no error)");
  EXPECT_EQ(policy_error("gate: [unchanges]\n").substr(0, 52), "policy.yaml:1:8: unknown diff class 'unchanges' in g");
}

}  // namespace
}  // namespace driftgate

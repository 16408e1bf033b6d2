// `driftgate diff` through its command function, in a real git repository.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/command.h"
#include "core/error.h"
#include "core/file_util.h"
#include "differ/baseline_store.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::make_check;
using test::make_environment;
using test::make_run;
using test::TempDir;
using test::TestRepo;

struct Invocation {
  int code = -1;
  std::string out;
  std::string err;
};

// main: c1 (baseline) - c2;  feature from c1: f1 (the run)
class CmdDiffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c1 = repo.commit("c1");
    c2 = repo.commit("c2");
    repo.git("checkout -q -b feature " + c1);
    f1 = repo.commit("f1");
    DirectoryStore(store).save(
        make_run(c1, make_environment(),
                 {make_check("x", CheckStatus::k_pass, 1e-7), make_check("y", CheckStatus::k_pass, 1e-7)}));
  }

  std::string write_run_file(const RunFile& run) {
    std::ostringstream content;
    write_run(content, run);
    write_file_atomic(dir / "run.jsonl", content.str());
    return dir / "run.jsonl";
  }

  Invocation diff(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    std::ostringstream out;
    std::ostringstream err;
    args.insert(args.end(), {"--store", store, "--repo", repo.dir()});
    CommandContext context{args, std::move(env), out, err};
    Invocation result;
    result.code = cmd_diff(context);
    result.out = out.str();
    result.err = err.str();
    return result;
  }

  std::string error_of(std::vector<std::string> args) {
    try {
      diff(std::move(args));
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }

  TempDir dir;
  TestRepo repo{dir / "repo"};
  std::string store = dir / "baselines";
  std::string c1, c2, f1;
};

TEST_F(CmdDiffTest, ARegressionExitsOneAndWritesBothFiles) {
  std::string run = write_run_file(
      make_run(f1, make_environment(),
               {make_check("x", CheckStatus::k_fail_numeric, 0.5), make_check("y", CheckStatus::k_pass, 1e-7)}));
  Invocation result =
      diff({run, "--base", "main", "--report", dir / "out/report.json", "--markdown", dir / "out/summary.md"});
  EXPECT_EQ(result.code, 1);
  EXPECT_EQ(result.out.substr(0, result.out.find('\n')), "**driftgate: FAIL** \xE2\x80\x94 1 regressed");
  EXPECT_NE(result.out.find("`exp/x/cpu_fp32~onednn_off/out`: pass"), std::string::npos) << result.out;
  EXPECT_EQ(read_file(dir / "out/summary.md"), result.out);
  nlohmann::json report = nlohmann::json::parse(read_file(dir / "out/report.json"));
  EXPECT_EQ(report["verdict"], "fail");
  EXPECT_EQ(report["baseline"]["sha"], c1);
  EXPECT_EQ(report["baseline"]["steps"], 0);
  EXPECT_EQ(report["run"]["env_key"], make_environment().key());
  EXPECT_EQ(result.err, "driftgate diff: compared " + run + " with " + store + "/" + make_environment().key() + "/" +
                            c1 + ".jsonl\n");
}

TEST_F(CmdDiffTest, TheBaseComesFromTheCiWhenNotGiven) {
  std::string run = write_run_file(
      make_run(f1, make_environment(),
               {make_check("x", CheckStatus::k_pass, 1e-7), make_check("y", CheckStatus::k_pass, 1e-7)}));
  Invocation result =
      diff({run, "--report", dir / "report.json"}, {{"GITLAB_CI", "true"}, {"CI_MERGE_REQUEST_DIFF_BASE_SHA", c2}});
  EXPECT_EQ(result.code, 0);
  EXPECT_EQ(result.out.substr(0, result.out.find('\n')), "**driftgate: PASS** \xE2\x80\x94 2 unchanged");
  nlohmann::json report = nlohmann::json::parse(read_file(dir / "report.json"));
  EXPECT_EQ(report["baseline"]["start_sha"], c1);  // merge base of f1 and c2
}

TEST_F(CmdDiffTest, QuietPrintsOnlyTheVerdict) {
  std::string run = write_run_file(make_run(f1, make_environment(), {make_check("x", CheckStatus::k_pass, 1e-7)}));
  Invocation result = diff({run, "-q"});
  EXPECT_EQ(result.code, 1);  // y is missing
  EXPECT_EQ(result.out, "**driftgate: FAIL** \xE2\x80\x94 1 missing\n");
  EXPECT_EQ(result.err, "");
}

TEST_F(CmdDiffTest, NoComparableBaselineIsNeutral) {
  std::string run =
      write_run_file(make_run(f1, make_environment("2"), {make_check("x", CheckStatus::k_fail_numeric, 1.0)}));
  Invocation result = diff({run, "--report", dir / "report.json"});
  EXPECT_EQ(result.code, 0);
  EXPECT_EQ(result.out.substr(0, result.out.find('\n')),
            "**driftgate: no comparable baseline** \xE2\x80\x94 baselines exist only for other environments: " +
                make_environment().key() + " (threads 1 -> 2)");
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "report.json"))["verdict"], "no_baseline");

  Invocation across = diff({run, "--allow-env-mismatch"});
  EXPECT_EQ(across.code, 1);
  EXPECT_EQ(across.out.substr(0, across.out.find('\n')),
            "**driftgate: FAIL** \xE2\x80\x94 1 regressed, 1 missing (compared across environments)");
}

TEST_F(CmdDiffTest, InputErrorsSayWhatToTry) {
  std::string run = write_run_file(make_run(f1, make_environment(), {make_check("x", CheckStatus::k_pass)}));
  EXPECT_NE(error_of({dir / "none.jsonl"}).find(dir / "none.jsonl"), std::string::npos);
  // Before the first baseline the store does not exist: neutral (exit 0), as the README promises, saying why.
  store = dir / "nowhere";
  Invocation first = diff({run});
  EXPECT_EQ(first.code, 0);
  EXPECT_NE(first.out.find("the baseline store " + store +
                           " does not exist yet (no baseline was ever stored there); store one with driftgate "
                           "baseline update RUN.jsonl --store " +
                           store),
            std::string::npos)
      << first.out;
  store = dir / "baselines";
  EXPECT_EQ(error_of({run, "--max-walk", "0"}),
            "driftgate diff: --max-walk 0: must be at least 1 (first-parent commits searched for a baseline)");
  EXPECT_NE(error_of({run, "--drift-factor", "0.5"}).find("--drift-factor 0.500000: must be at least 1"),
            std::string::npos);
  EXPECT_EQ(error_of({run, "--base", "nope"}),
            "unknown revision 'nope' in " + repo.dir() + "; fetch it (git fetch origin nope) or pass a SHA");
}

TEST_F(CmdDiffTest, APolicyAllowlistsAndEveryFormatIsWritten) {
  std::string run = write_run_file(
      make_run(f1, make_environment(),
               {make_check("x", CheckStatus::k_fail_numeric, 0.5), make_check("y", CheckStatus::k_pass, 1e-7)}));
  write_file_atomic(dir / "gate.yaml",
                    "gate: [regressed, missing]\n"
                    "allow:\n"
                    "  - {check: 'exp/x/*', owner: alice, reason: known, expires: 2026-12-31}\n");
  Invocation allowed = diff({run, "--base", "main", "--policy", dir / "gate.yaml", "--today", "2026-06-15", "--junit",
                             dir / "junit.xml", "--format", "text"});
  EXPECT_EQ(allowed.code, 0);
  EXPECT_EQ(allowed.out.substr(0, allowed.out.find('\n')), "driftgate: PASS - 1 regressed, 1 unchanged");
  EXPECT_NE(allowed.out.find("  (" + (dir / "gate.yaml") + ":1) gate: [regressed, missing]\n"), std::string::npos)
      << allowed.out;
  EXPECT_NE(read_file(dir / "junit.xml").find("tests=\"2\" failures=\"0\""), std::string::npos);

  Invocation expired = diff({run, "--base", "main", "--policy", dir / "gate.yaml", "--today", "2027-01-01", "--junit",
                             dir / "junit.xml", "--report", dir / "report.json"});
  EXPECT_EQ(expired.code, 1);
  EXPECT_NE(expired.out.find("expired on 2026-12-31 and no longer applies"), std::string::npos) << expired.out;
  EXPECT_NE(read_file(dir / "junit.xml").find("tests=\"2\" failures=\"1\""), std::string::npos);
  nlohmann::json report = nlohmann::json::parse(read_file(dir / "report.json"));
  EXPECT_EQ(report["policy"]["allow"][0]["expired"], true);
  EXPECT_EQ(report["checks"][0]["gate_origin"], (dir / "gate.yaml") + ":1");
}

TEST_F(CmdDiffTest, ABadPolicyIsAnErrorAndNothingIsWritten) {
  std::string run = write_run_file(make_run(f1, make_environment(), {make_check("x", CheckStatus::k_pass)}));
  write_file_atomic(dir / "gate.yaml", "gate: [regressed]\nalow: []\n");
  EXPECT_EQ(
      error_of({run, "--policy", dir / "gate.yaml", "--report", dir / "report.json"}),
      (dir / "gate.yaml") +
          ":2:1: unknown key 'alow' in the gate policy; did you mean 'allow'? (allowed: gate, experiments, allow)");
  EXPECT_FALSE(std::filesystem::exists(dir / "report.json"));
  EXPECT_EQ(error_of({run, "--format", "txt"}),
            "driftgate diff: --format 'txt'; did you mean 'text'?: one of auto, text, markdown");
  EXPECT_EQ(error_of({run, "--markdown-budget", "10"}),
            "driftgate diff: --markdown-budget 10: must be at least 2000 bytes (room for the verdict, counts and a "
            "notice)");
}

TEST_F(CmdDiffTest, OutsideAGitRepositoryIsAnError) {
  std::string run = write_run_file(make_run(f1, make_environment(), {make_check("x", CheckStatus::k_pass)}));
  std::filesystem::create_directories(dir / "plain");
  std::ostringstream out;
  std::ostringstream err;
  CommandContext context{{run, "--store", store, "--repo", dir / "plain"}, {}, out, err};
  try {
    cmd_diff(context);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--repo " + (dir / "plain") +
                                         ": not inside a git repository; baselines are chosen by git ancestry, so run "
                                         "driftgate diff in the checkout or pass --repo DIR");
  }
}

// The run's checks are read on a second thread while the baseline is chosen: a broken
// run is still reported first, with its line, even when the store is missing too.
TEST_F(CmdDiffTest, ABrokenRunIsReportedBeforeTheStoreEvenWhileReadConcurrently) {
  std::string run = write_run_file(
      make_run(f1, make_environment(), {make_check("x", CheckStatus::k_pass), make_check("y", CheckStatus::k_pass)}));
  std::string text = read_file(run);
  size_t second_line = text.find('\n') + 1;
  write_file_atomic(run, text.substr(0, second_line) + "{\"type\":\"check\",\"id\":\n" + text.substr(second_line));
  EXPECT_EQ(error_of({run}).rfind(run + ":2: not valid JSON", 0), 0u) << error_of({run});
  store = dir / "nowhere";
  EXPECT_EQ(error_of({run}).rfind(run + ":2: not valid JSON", 0), 0u) << error_of({run});
  // A good run with a store that is a file, not a directory: the store's error.
  std::string good = write_run_file(make_run(f1, make_environment(), {make_check("x", CheckStatus::k_pass)}));
  store = good;
  EXPECT_EQ(error_of({good}), "--store " + good +
                                  ": not a directory; pass the directory that holds <env-key>/<sha>.jsonl files, or "
                                  "notes: for the git notes store");
  // The header alone is read first: a file that is not a run says so before anything else.
  write_file_atomic(dir / "check_first.jsonl", text.substr(second_line));
  EXPECT_EQ(
      error_of({dir / "check_first.jsonl"}),
      dir / "check_first.jsonl" + ":1: the first line must be the run header (\"type\":\"header\"), got type 'check'");
}

}  // namespace
}  // namespace driftgate

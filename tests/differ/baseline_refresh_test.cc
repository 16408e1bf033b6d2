// Baseline refresh: accept (per check, logged; from a run or a proposal), show, list,
// prune, and the refresh command and proposal a failing diff gives.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/command.h"
#include "core/error.h"
#include "core/file_util.h"
#include "differ/baseline_accept.h"
#include "differ/baseline_proposal.h"
#include "differ/baseline_store.h"
#include "tests/differ/test_support.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

using test::make_check;
using test::make_environment;
using test::make_run;
using test::TempDir;
using test::TestRepo;
using S = CheckStatus;

struct Invocation {
  int code = -1;
  std::string out;
};

std::string id_of(const std::string& input) { return make_check_id("exp", input, "cpu_fp32", "onednn_off", "out"); }

// main: c1 (baseline: a, b pass; gone pass) - c2 (the run: a fails, b fails, gone absent, new passes)
class RefreshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.git("config user.name 'Ada Lovelace'");
    repo.git("config user.email ada@example.invalid");
    c1 = repo.commit("c1");
    c2 = repo.commit("c2");
    DirectoryStore(store).save(make_run(
        c1, make_environment(),
        {make_check("a", S::k_pass, 1e-7), make_check("b", S::k_pass, 1e-7), make_check("gone", S::k_pass, 1e-7)}));
    std::ostringstream content;
    write_run(content, make_run(c2, make_environment(),
                                {make_check("a", S::k_fail_numeric, 0.5), make_check("b", S::k_fail_numeric, 0.25),
                                 make_check("new", S::k_pass, 1e-7)}));
    write_file_atomic(run_path, content.str());
  }

  Invocation command(int (*function)(CommandContext&), std::vector<std::string> args,
                     std::map<std::string, std::string> env = {{"SOURCE_DATE_EPOCH", "1767225600"}}) {
    std::ostringstream out;
    std::ostringstream err;
    args.insert(args.end(), {"--store", store, "--repo", repo.dir()});
    CommandContext context{args, std::move(env), out, err};
    Invocation result;
    result.code = function(context);
    result.out = out.str();
    return result;
  }

  std::string error_of(int (*function)(CommandContext&), std::vector<std::string> args) {
    try {
      command(function, std::move(args));
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }

  TempDir dir;
  TestRepo repo{dir / "repo"};
  std::string store = dir / "baselines";
  std::string run_path = dir / "run.jsonl";
  std::string key = make_environment().key();
  std::string c1, c2;
};

TEST_F(RefreshTest, AcceptTakesOnlySelectedChecksAndLogsWhoWhenWhy) {
  Invocation result =
      command(cmd_baseline, {"accept", "exp/a/*", "exp/gone/*", "--reason", "new kernels", "--run", run_path});
  EXPECT_EQ(result.code, 0);
  EXPECT_EQ(result.out, "accepted 1 checks and removed 1 into baseline " + key + "/" + c2 + ".jsonl (from baseline " +
                            c1.substr(0, 7) + "); logged at " + store + "/" + key + "/" + c2 + ".accepted.jsonl:1\n");
  RunFile stored = *DirectoryStore(store).load(key, c2);
  ASSERT_EQ(stored.checks.size(), 2u);
  EXPECT_EQ(stored.checks[0].id, id_of("a"));
  EXPECT_EQ(stored.checks[0].status, S::k_fail_numeric);  // the run's value
  EXPECT_EQ(stored.checks[1].id, id_of("b"));
  EXPECT_EQ(stored.checks[1].status, S::k_pass);  // not selected: the old baseline's value
  EXPECT_EQ(read_file(store + "/" + key + "/" + c2 + ".accepted.jsonl"),
            "{\"when\":\"2026-01-01T00:00:00Z\",\"who\":\"Ada Lovelace <ada@example.invalid>\",\"reason\":\"new "
            "kernels\",\"globs\":[\"exp/a/*\",\"exp/gone/*\"],\"run_sha\":\"" +
                c2 + "\",\"from_sha\":\"" + c1 + "\",\"accepted\":[\"" + id_of("a") + "\"],\"removed\":[\"" +
                id_of("gone") + "\"]}\n");

  // A second acceptance starts from c2's own baseline and appends to the log.
  EXPECT_EQ(command(cmd_baseline, {"accept", id_of("b"), "--reason", "also b", "--run", run_path}).code, 0);
  EXPECT_EQ(DirectoryStore(store).load(key, c2)->checks[1].status, S::k_fail_numeric);
  EXPECT_EQ(DirectoryStore(store).acceptance_log(key, c2).size(), 2u);

  Invocation shown = command(cmd_baseline, {"show", c2});
  EXPECT_NE(shown.out.find("checks 2: fail_numeric 2\n"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("accepted 2026-01-01T00:00:00Z by Ada Lovelace <ada@example.invalid>: new kernels (1 "
                           "checks exp/a/* exp/gone/*; from " +
                           c2.substr(0, 7) + " onto " + c1.substr(0, 7) + ")\n"),
            std::string::npos)
      << shown.out;
  EXPECT_EQ(command(cmd_baseline, {"show"}).out, shown.out);  // HEAD is c2
  Invocation listed = command(cmd_baseline, {"list"});
  // Newest first (HEAD's first parents), each with its commit's date and subject.
  std::string dates = repo.git("log --format=%cd --date=format:'%Y-%m-%d %H:%M %z' -2 HEAD");
  std::string c2_date = dates.substr(0, dates.find('\n'));
  std::string c1_date = dates.substr(dates.find('\n') + 1);
  EXPECT_EQ(listed.out,
            key + ": 2 baselines\n  " + c2 + " (2 accepted)  " + c2_date + "  c2\n  " + c1 + "  " + c1_date + "  c1\n");
}

TEST_F(RefreshTest, AcceptRefusesWithoutReasonOrMatchAndWritesNothing) {
  EXPECT_EQ(error_of(cmd_baseline, {"accept", "exp/a/*", "--run", run_path}),
            "driftgate baseline accept: missing --reason (why the new values are right; it is logged beside the "
            "baseline); usage: driftgate baseline accept CHECK-GLOB... --reason TEXT [--run RUN.jsonl]");
  EXPECT_EQ(error_of(cmd_baseline, {"accept", "exp/zzz/*", "--reason", "r", "--run", run_path}).substr(0, 48),
            "driftgate baseline accept: no check of " + run_path.substr(0, 9));
  EXPECT_FALSE(DirectoryStore(store).contains(key, c2));
  EXPECT_EQ(std::filesystem::exists(store + "/" + key + "/" + c2 + ".accepted.jsonl"), false);
}

TEST_F(RefreshTest, AFailingDiffPrintsTheRefreshCommandAndProposesTheBaseline) {
  Invocation diff = command(cmd_diff, {run_path, "--report", dir / "out/report.json", "--format", "markdown"});
  EXPECT_EQ(diff.code, 1);
  std::string command_line =
      "driftgate baseline accept 'exp/a/cpu_fp32~onednn_off/out' "
      "'exp/b/cpu_fp32~onednn_off/out' 'exp/gone/cpu_fp32~onednn_off/out' --reason 'WHY THE "
      "NEW VALUES ARE RIGHT' --run " +
      run_path + " --store " + store + " --repo " + repo.dir();
  EXPECT_NE(diff.out.find("`" + command_line + "`"), std::string::npos) << diff.out;
  nlohmann::json report = nlohmann::json::parse(read_file(dir / "out/report.json"));
  EXPECT_EQ(report["refresh"]["command"], command_line);
  std::string proposal_path = dir / "out/baseline-proposal.jsonl";
  EXPECT_EQ(report["refresh"]["proposed_baseline"], proposal_path);
  std::string apply_line = "driftgate baseline accept --proposal " + proposal_path +
                           " --reason 'WHY THE NEW VALUES ARE RIGHT' --store " + store + " --repo " + repo.dir();
  EXPECT_EQ(report["refresh"]["proposal_command"], apply_line);
  EXPECT_EQ(report["refresh"]["proposal_changes"], 2);
  EXPECT_EQ(report["refresh"]["proposal_drops"], 1);
  EXPECT_NE(diff.out.find("`" + apply_line + "`"), std::string::npos) << diff.out;
  BaselineProposal proposal = read_baseline_proposal(proposal_path);
  EXPECT_EQ(proposal.header.commit.sha, c2);
  EXPECT_EQ(proposal.base_sha, c1);
  ASSERT_EQ(proposal.changes.size(), 2u);  // a and b from the run; new not gated, not taken
  EXPECT_EQ(proposal.changes[0].status, S::k_fail_numeric);
  EXPECT_EQ(proposal.drops, std::vector<std::string>{id_of("gone")});

  // Running the printed command stores exactly what applying the proposal stores, and the diff then passes.
  EXPECT_EQ(
      command(cmd_baseline, {"accept", id_of("a"), id_of("b"), id_of("gone"), "--reason", "ok", "--run", run_path})
          .code,
      0);
  std::string accepted = read_file(store + "/" + key + "/" + c2 + ".jsonl");
  EXPECT_EQ(command(cmd_diff, {run_path}).code, 0);
  DirectoryStore(store).remove(key, c2);
  Invocation applied = command(cmd_baseline, {"accept", "--proposal", proposal_path, "--reason", "ok"});
  EXPECT_EQ(applied.code, 0);
  EXPECT_EQ(applied.out, "accepted 2 checks and removed 1 from proposal " + proposal_path + " into baseline " + key +
                             "/" + c2 + ".jsonl (from baseline " + c1.substr(0, 7) + "); logged at " + store + "/" +
                             key + "/" + c2 + ".accepted.jsonl:1\n");
  EXPECT_EQ(read_file(store + "/" + key + "/" + c2 + ".jsonl"), accepted);
  EXPECT_EQ(command(cmd_diff, {run_path}).code, 0);
  // Applied again, its baseline c1 is still as it was: the same baseline, logged twice.
  EXPECT_EQ(command(cmd_baseline, {"accept", "--proposal", proposal_path, "--reason", "again"}).code, 0);
  EXPECT_EQ(DirectoryStore(store).acceptance_log(key, c2).size(), 2u);
  // What --proposal refuses.
  EXPECT_NE(error_of(cmd_baseline, {"accept", "--proposal", proposal_path, "exp/*", "--reason", "r"})
                .find("--proposal takes no CHECK-GLOB, --run or --base"),
            std::string::npos);
  EXPECT_NE(error_of(cmd_baseline, {"accept", "--proposal", proposal_path}).find("missing --reason"),
            std::string::npos);
  EXPECT_NE(
      error_of(cmd_baseline, {"accept", "--proposal", run_path, "--reason", "r"}).find(run_path + ":1: not a proposal"),
      std::string::npos);
  DirectoryStore(store).remove(key, c1);
  EXPECT_NE(error_of(cmd_baseline, {"accept", "--proposal", proposal_path, "--reason", "r"})
                .find(proposal_path + ": its baseline " + key + "/" + c1 + " is not in the store"),
            std::string::npos);
}

// A matching check whose values did not change (only its timings) keeps its baseline
// line; an accept that changes nothing says so and stores nothing.
TEST_F(RefreshTest, AcceptingUnchangedChecksKeepsTheirLinesAndStoresNothing) {
  RunFile base = *DirectoryStore(store).load(key, c1);
  RunFile run = base;
  run.header.commit.sha = c2;
  for (auto& check : run.checks) {
    check.reference_ms = 9.0;
  }
  std::ostringstream content;
  write_run(content, run);
  write_file_atomic(run_path, content.str());
  Invocation nothing = command(cmd_baseline, {"accept", "exp/*", "--reason", "r", "--run", run_path});
  EXPECT_EQ(nothing.code, 0);
  EXPECT_EQ(nothing.out, "nothing to accept: the 3 matching checks of " + run_path +
                             " already hold the run's values in baseline " + c1.substr(0, 7) +
                             " (up to their timings); nothing was stored\n");
  EXPECT_FALSE(DirectoryStore(store).contains(key, c2));
  run.checks[0].status = S::k_fail_numeric;
  run.summary = summarize(run.header, run.checks);
  std::ostringstream changed;
  write_run(changed, run);
  write_file_atomic(run_path, changed.str());
  Invocation one = command(cmd_baseline, {"accept", "exp/*", "--reason", "r", "--run", run_path});
  EXPECT_EQ(one.code, 0);
  EXPECT_NE(one.out.find("accepted 1 checks into baseline"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("; 2 matching checks already held the run's values and kept their lines"), std::string::npos)
      << one.out;
  RunFile stored = *DirectoryStore(store).load(key, c2);
  EXPECT_EQ(stored.checks[0].reference_ms, 9.0);
  EXPECT_EQ(stored.checks[1].reference_ms, base.checks[1].reference_ms);
}

TEST_F(RefreshTest, ABaselineAcceptedOnTheBranchWinsOverTheMergeBase) {
  repo.git("checkout -q -b feature " + c1);
  std::string f1 = repo.commit("f1");
  std::string f2 = repo.commit("f2");
  RunFile run = make_run(
      f1, make_environment(),
      {make_check("a", S::k_fail_numeric, 0.5), make_check("b", S::k_pass, 1e-7), make_check("gone", S::k_pass, 1e-7)});
  std::ostringstream content;
  write_run(content, run);
  write_file_atomic(run_path, content.str());
  EXPECT_EQ(command(cmd_diff, {run_path, "--base", "main"}).code, 1);
  // A plain baseline of a branch commit (no acceptance log) is not taken.
  DirectoryStore(store).save(run);
  EXPECT_EQ(command(cmd_diff, {run_path, "--base", "main"}).code, 1);
  DirectoryStore(store).remove(key, f1);
  EXPECT_EQ(
      command(cmd_baseline, {"accept", "exp/a/*", "--reason", "intended", "--run", run_path, "--base", "main"}).code,
      0);
  // The run of a later commit of the branch uses the accepted baseline too.
  run.header.commit.sha = f2;
  std::ostringstream later;
  write_run(later, run);
  write_file_atomic(run_path, later.str());
  Invocation diff = command(cmd_diff, {run_path, "--base", "main", "--format", "text"});
  EXPECT_EQ(diff.code, 0) << diff.out;
  EXPECT_NE(diff.out.find("note: using the baseline accepted on this branch at " + f1.substr(0, 7)), std::string::npos)
      << diff.out;
}

TEST_F(RefreshTest, PruneKeepsTheNewestByFirstParentOrder) {
  std::string c3 = repo.commit("c3");
  std::string c4 = repo.commit("c4");
  for (const auto& sha : {c2, c3, c4}) {
    DirectoryStore(store).save(make_run(sha, make_environment(), {make_check("a", S::k_pass, 1e-7)}));
  }
  DirectoryStore(store).save(make_run(c1, make_environment("2"), {make_check("a", S::k_pass, 1e-7)}));
  repo.git("checkout -q -b side " + c1);
  std::string side = repo.commit("side");
  repo.git("checkout -q main");
  DirectoryStore(store).save(make_run(side, make_environment(), {make_check("a", S::k_pass, 1e-7)}));
  Invocation dry = command(cmd_baseline, {"prune", "--keep", "2", "--dry-run"});
  EXPECT_EQ(dry.out, "kept " + key + "/" + side + " (not on HEAD's first-parent history; prune from its branch)\n" +
                         "would remove " + key + "/" + c2 + ".jsonl\nwould remove " + key + "/" + c1 +
                         ".jsonl\nwould remove 2 baselines, kept at most 2 per environment key\n");
  EXPECT_TRUE(DirectoryStore(store).contains(key, c1));
  EXPECT_EQ(command(cmd_baseline, {"prune", "--keep", "2"}).code, 0);
  EXPECT_EQ(DirectoryStore(store).shas(key).size(), 3u);
  EXPECT_FALSE(DirectoryStore(store).contains(key, c1));
  EXPECT_TRUE(DirectoryStore(store).contains(key, c4));
  EXPECT_TRUE(DirectoryStore(store).contains(make_environment("2").key(), c1));  // per environment key
  EXPECT_NE(error_of(cmd_baseline, {"prune"}).find("--keep N must be given and at least 1"), std::string::npos);
}

TEST(BaselineAccept, GlobsAndShellWordsAreExact) {
  EXPECT_EQ(glob_escape("exp/a*b?[c]\\d"), "exp/a\\*b\\?\\[c\\]\\\\d");
  EXPECT_TRUE(matches_any("exp/a*b?[c]\\d", {glob_escape("exp/a*b?[c]\\d")}));
  EXPECT_FALSE(matches_any("exp/aXb?[c]\\d", {glob_escape("exp/a*b?[c]\\d")}));
  EXPECT_TRUE(matches_any("exp/in/x~y/out", {"exp/*"}));
  EXPECT_EQ(shell_quote("plain/path.jsonl"), "plain/path.jsonl");
  EXPECT_EQ(shell_quote("it's $HOME"), "'it'\\''s $HOME'");
  EXPECT_EQ(shell_quote("~x"), "'~x'");
  // A NUL or U+202E in a suggested command: shown as escapes that bash turns back into them.
  EXPECT_EQ(shell_quote(std::string("e0/a\0b/out", 10)), "$'e0/a\\x00b/out'");
  EXPECT_EQ(shell_quote("e0/it's\xE2\x80\xAE/out"), "$'e0/it\\'s\\xe2\\x80\\xae/out'");
  EXPECT_THROW(parse_acceptance("{\"when\":1}", "log:1"), Error);
  // A repeated key in an acceptance log line is refused where it is.
  try {
    parse_acceptance(R"({"when":"a","when":"b"})", "log:3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("log:3: the key 'when' appears twice in one object (at /when);", 0), 0U)
        << e.what();
  }
}

// A proposal of several MiB is written in pieces (writev of lines in the mapped run):
// read back and applied, it is what accept gives.
TEST(BaselineProposal, AProposalWrittenInPiecesIsWhole) {
  std::vector<CheckRecord> base_checks;
  std::vector<CheckRecord> run_checks;
  for (int i = 0; i < 12000; ++i) {
    std::string input = "img" + std::to_string(i);
    base_checks.push_back(test::make_check(input, CheckStatus::k_pass, 1e-6));
    run_checks.push_back(test::make_check(input, i % 7 == 0 ? CheckStatus::k_fail_numeric : CheckStatus::k_pass,
                                          1e-6 * (i % 13), i % 7 == 0 ? "elements outside" : ""));
  }
  RunFile base = test::make_run("0123456789abcdef0123456789abcdef01234567", test::make_environment(), base_checks);
  RunFile run = test::make_run("fedcba9876543210fedcba9876543210fedcba98", test::make_environment(), run_checks);
  test::TempDir dir;
  std::ostringstream run_text;
  write_run(run_text, run);
  write_file_atomic(dir / "run.jsonl", run_text.str());
  RunDigest run_digest = read_run_digest(dir / "run.jsonl");
  RunDigest base_digest = digest_view(base);
  for (const std::vector<std::string>& globs : std::vector<std::vector<std::string>>{{"exp/*"}, {"exp/img1*"}}) {
    write_baseline_proposal(dir / "proposal.jsonl", run_digest, base_digest, globs);
    if (globs[0] == "exp/*") {
      ASSERT_GT(read_file(dir / "proposal.jsonl").size(), size_t{2} << 20);
    }
    AcceptOutcome accepted = accept_checks(run, base, globs);
    AcceptOutcome applied =
        apply_baseline_proposal(read_baseline_proposal(dir / "proposal.jsonl"), base, dir / "proposal.jsonl");
    std::ostringstream want;
    std::ostringstream got;
    write_run(want, accepted.baseline);
    write_run(got, applied.baseline);
    EXPECT_EQ(got.str(), want.str());
    EXPECT_EQ(applied.accepted, accepted.accepted);
  }
}

}  // namespace
}  // namespace driftgate

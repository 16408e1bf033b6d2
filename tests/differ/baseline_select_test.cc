#include "differ/baseline_select.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::make_check;
using test::make_environment;
using test::make_run;
using test::TempDir;
using test::TestRepo;

// main:    c0 - c1 - c2 - c3
// feature:           \- f1 - f2
class BaselineSelectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c0 = repo.commit("c0");
    c1 = repo.commit("c1");
    c2 = repo.commit("c2");
    c3 = repo.commit("c3");
    repo.git("checkout -q -b feature " + c2);
    f1 = repo.commit("f1");
    f2 = repo.commit("f2");
    opened.emplace(std::move(*GitRepo::open(repo.dir())));
  }

  void store_baseline(const std::string& sha, const Environment& environment = make_environment()) {
    store.save(make_run(sha, environment, {make_check("x", CheckStatus::k_pass, 1e-7)}));
  }

  SelectionRequest request(const std::string& head, std::optional<std::string> base = std::nullopt,
                           int max_walk = k_default_max_walk) {
    return SelectionRequest{head, std::move(base), make_environment(), max_walk, false};
  }

  TempDir dir;
  TestRepo repo{dir / "repo"};
  DirectoryStore store{dir / "baselines"};
  std::optional<GitRepo> opened;
  std::string c0, c1, c2, c3, f1, f2;
};

TEST_F(BaselineSelectTest, StartsAtTheMergeBaseAndTakesTheNearestAncestorBaseline) {
  store_baseline(c0);
  store_baseline(c1);
  store_baseline(c3);  // newer, on main, but not an ancestor of the merge base
  BaselineSelection selection = select_baseline(*opened, store, request(f2, "main"));
  ASSERT_TRUE(selection.found) << selection.reason;
  EXPECT_EQ(selection.start_sha, c2);
  EXPECT_EQ(selection.sha, c1);
  EXPECT_EQ(selection.steps, 1);
  EXPECT_EQ(selection.env_key, make_environment().key());
  EXPECT_FALSE(selection.env_mismatch);
  ASSERT_TRUE(selection.baseline.has_value());
  EXPECT_EQ(selection.baseline->header.commit.sha, c1);
  EXPECT_TRUE(selection.notes.empty());
}

TEST_F(BaselineSelectTest, TheStartCommitItselfCounts) {
  store_baseline(c2);
  BaselineSelection selection = select_baseline(*opened, store, request(f2, c3));
  ASSERT_TRUE(selection.found);
  EXPECT_EQ(selection.sha, c2);
  EXPECT_EQ(selection.steps, 0);
}

TEST_F(BaselineSelectTest, WithoutABaseTheWalkStartsAtTheRunsCommit) {
  store_baseline(c1);
  store_baseline(c3);
  BaselineSelection selection = select_baseline(*opened, store, request(f2));
  ASSERT_TRUE(selection.found);
  EXPECT_EQ(selection.start_sha, f2);
  EXPECT_EQ(selection.sha, c1);
  EXPECT_EQ(selection.steps, 3);  // f2, f1, c2, c1
}

TEST_F(BaselineSelectTest, TheWalkIsBounded) {
  store_baseline(c1);
  BaselineSelection bounded = select_baseline(*opened, store, request(f2, std::nullopt, 3));
  EXPECT_FALSE(bounded.found);
  EXPECT_EQ(bounded.reason, "no baseline within 3 first-parent commits of " + f2.substr(0, 7));
  EXPECT_FALSE(bounded.baseline.has_value());
  BaselineSelection enough = select_baseline(*opened, store, request(f2, std::nullopt, 4));
  EXPECT_TRUE(enough.found);
  EXPECT_THROW(select_baseline(*opened, store, request(f2, std::nullopt, 0)), Error);
}

TEST_F(BaselineSelectTest, TheReasonCountsTheCommitsActuallyWalked) {
  BaselineSelection selection = select_baseline(*opened, store, request(f2));
  EXPECT_FALSE(selection.found);
  EXPECT_EQ(selection.reason, "no baseline within 5 first-parent commits of " + f2.substr(0, 7));
}

TEST_F(BaselineSelectTest, OnlyFirstParentsAreWalked) {
  repo.git("checkout -q main");
  repo.git("checkout -q -b side");
  std::string s1 = repo.commit("s1", "side.txt");
  repo.git("checkout -q main");
  repo.git("merge -q --no-ff -m merge side");
  std::string merge = repo.git("rev-parse HEAD");
  store_baseline(s1);  // reachable only through the merge's second parent
  store_baseline(c0);
  BaselineSelection selection = select_baseline(*opened, store, request(merge));
  ASSERT_TRUE(selection.found);
  EXPECT_EQ(selection.sha, c0);
  EXPECT_EQ(selection.steps, 4);  // merge, c3, c2, c1, c0
}

// After a --no-ff merge, what the PR accepted is the baseline: main's first parents hold only older ones.
TEST_F(BaselineSelectTest, ABaselineAcceptedOnAMergedBranchIsTakenAtTheMerge) {
  repo.git("checkout -q main");
  repo.git("checkout -q -b side");
  std::string s1 = repo.commit("s1", "side.txt");
  std::string s2 = repo.commit("s2", "side.txt");
  repo.git("checkout -q main");
  std::string c4 = repo.commit("c4");
  repo.git("merge -q --no-ff -m merge side");
  std::string merge = repo.git("rev-parse HEAD");
  std::string after = repo.commit("c5");
  store_baseline(c4);  // main's own, older than the merge
  RunFile accepted = make_run(s1, make_environment(), {make_check("x", CheckStatus::k_fail_numeric, 0.5)});
  store.save_accepted(accepted, R"({"who":"t","reason":"r"})");
  store_baseline(s2);  // a plain baseline on the branch: not an acceptance
  for (const std::string& head : {merge, after}) {
    BaselineSelection selection = select_baseline(*opened, store, request(head, "main"));
    ASSERT_TRUE(selection.found) << selection.reason;
    EXPECT_EQ(selection.sha, s1);
    EXPECT_EQ(selection.steps, head == merge ? 0 : 1);  // to the merge commit
    ASSERT_EQ(selection.notes.size(), 1u);
    EXPECT_EQ(selection.notes[0], "using the baseline accepted on the branch merged by " + merge.substr(0, 7) +
                                      ", at " + s1.substr(0, 7) +
                                      " (driftgate baseline accept), not an older first-parent one");
  }
  // A baseline of the merge commit itself is nearer: it wins.
  store_baseline(merge);
  EXPECT_EQ(select_baseline(*opened, store, request(after, "main")).sha, merge);
}

// An accepted baseline below the fork point is on main's own history: found by the first-parent walk.
TEST_F(BaselineSelectTest, AcceptedBaselinesBelowTheForkAreNotTheMergedBranchs) {
  repo.git("checkout -q main");
  repo.git("checkout -q -b side");
  repo.commit("s1", "side.txt");
  repo.git("checkout -q main");
  repo.git("merge -q --no-ff -m merge side");
  std::string merge = repo.git("rev-parse HEAD");
  store.save_accepted(make_run(c1, make_environment(), {make_check("x", CheckStatus::k_pass, 1e-7)}),
                      R"({"who":"t","reason":"r"})");
  store_baseline(c3);
  BaselineSelection selection = select_baseline(*opened, store, request(merge));
  ASSERT_TRUE(selection.found);
  EXPECT_EQ(selection.sha, c3);
  EXPECT_TRUE(selection.notes.empty());
}

TEST_F(BaselineSelectTest, OtherEnvironmentsAreNeverUsedSilently) {
  store_baseline(c1, make_environment("1", "2.6.3"));
  SelectionRequest wanted = request(f2, "main");
  wanted.environment = make_environment("4", "3.1");
  BaselineSelection selection = select_baseline(*opened, store, wanted);
  EXPECT_FALSE(selection.found);
  EXPECT_EQ(selection.reason, "no comparable baseline: baselines exist only for other environments: " +
                                  make_environment("1", "2.6.3").key() + " (onednn 2.6.3 -> 3.1, threads 1 -> 4)");
  EXPECT_FALSE(selection.baseline.has_value());
}

TEST_F(BaselineSelectTest, AllowEnvMismatchTakesTheNearestOtherEnvironmentAndSaysSo) {
  store_baseline(c0, make_environment("2"));
  store_baseline(c1, make_environment("1", "2.6.3"));
  SelectionRequest wanted = request(f2, "main");
  wanted.environment = make_environment("4", "3.1");
  wanted.allow_env_mismatch = true;
  BaselineSelection selection = select_baseline(*opened, store, wanted);
  ASSERT_TRUE(selection.found);
  EXPECT_TRUE(selection.env_mismatch);
  EXPECT_EQ(selection.sha, c1);
  EXPECT_EQ(selection.env_key, make_environment("1", "2.6.3").key());
  EXPECT_EQ(selection.env_changes, "onednn 2.6.3 -> 3.1, threads 1 -> 4");
  EXPECT_EQ(selection.steps, 1);
}

TEST_F(BaselineSelectTest, TheRunsOwnEnvironmentWinsOverANearerOtherOne) {
  store_baseline(c2, make_environment("8"));
  store_baseline(c0);
  SelectionRequest wanted = request(f2, "main");
  wanted.allow_env_mismatch = true;
  BaselineSelection selection = select_baseline(*opened, store, wanted);
  ASSERT_TRUE(selection.found);
  EXPECT_FALSE(selection.env_mismatch);
  EXPECT_EQ(selection.sha, c0);
  EXPECT_EQ(selection.steps, 2);
}

TEST_F(BaselineSelectTest, AgainstEnvTakesThatEnvironmentEvenWhenTheRunsOwnIsNearer) {
  const Environment old_line = make_environment("1", "2.6.3");  // the environment upgraded from
  store_baseline(c0, old_line);
  store_baseline(c1);                                // the run's own environment, nearer
  store_baseline(c2, make_environment("2", "3.1"));  // a third one, nearest
  SelectionRequest wanted = request(f2, "main");
  wanted.against_env = old_line.key();
  BaselineSelection selection = select_baseline(*opened, store, wanted);
  ASSERT_TRUE(selection.found) << selection.reason;
  EXPECT_TRUE(selection.env_mismatch);
  EXPECT_EQ(selection.sha, c0);
  EXPECT_EQ(selection.steps, 2);
  EXPECT_EQ(selection.env_key, old_line.key());
  EXPECT_EQ(selection.env_changes, "onednn 2.6.3 -> " + make_environment().keyed.at("onednn"));
  ASSERT_TRUE(selection.baseline.has_value());
  EXPECT_EQ(selection.baseline->header.environment.key(), old_line.key());

  wanted.against_env = make_environment("7").key();
  selection = select_baseline(*opened, store, wanted);
  EXPECT_FALSE(selection.found);
  EXPECT_EQ(selection.reason.rfind("no baseline of environment " + make_environment("7").key() +
                                       " within 3 first-parent commits of " + c2.substr(0, 7) + " (the store has: ",
                                   0),
            0u)
      << selection.reason;

  wanted.against_env = make_environment().key();  // its own key: the ordinary selection
  selection = select_baseline(*opened, store, wanted);
  ASSERT_TRUE(selection.found);
  EXPECT_FALSE(selection.env_mismatch);
  EXPECT_EQ(selection.sha, c1);

  wanted.against_env = "1.13";
  EXPECT_THROW(select_baseline(*opened, store, wanted), Error);
}

TEST_F(BaselineSelectTest, AnUnknownBaseInAFullCloneIsAnError) {
  try {
    select_baseline(*opened, store, request(f2, "origin/nope"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown revision 'origin/nope' in " + repo.dir() +
                                         "; fetch it (git fetch origin origin/nope) or pass a SHA");
  }
}

TEST_F(BaselineSelectTest, UnrelatedHistoriesFallBackToTheRunsAncestors) {
  repo.git("checkout -q --orphan lonely");
  std::string lonely = repo.commit("lonely", "lonely.txt");
  store_baseline(lonely);
  BaselineSelection selection = select_baseline(*opened, store, request(lonely, "main"));
  ASSERT_TRUE(selection.found);
  EXPECT_EQ(selection.sha, lonely);
  ASSERT_EQ(selection.notes.size(), 1u);
  EXPECT_EQ(selection.notes[0], "HEAD (" + lonely.substr(0, 7) +
                                    ") and BASE 'main' share no history \xE2\x80\x94 falling back to HEAD's own "
                                    "ancestors");
}

TEST_F(BaselineSelectTest, ARunWithoutACommitGetsNoBaseline) {
  store_baseline(f2);
  BaselineSelection selection = select_baseline(*opened, store, request("unknown"));
  EXPECT_FALSE(selection.found);
  EXPECT_EQ(selection.reason,
            "the run has no commit SHA ('unknown'): it was made outside a git checkout, so no baseline can be chosen "
            "by ancestry");
}

TEST_F(BaselineSelectTest, ShallowCloneWithoutTheBaseFallsBackWithAClearNote) {
  TestRepo clone(dir / "clone", false);
  clone.git("clone -q --depth 1 --branch feature file://" + repo.dir() + " .");
  std::optional<GitRepo> shallow = GitRepo::open(clone.dir());
  ASSERT_TRUE(shallow.has_value());
  ASSERT_TRUE(shallow->is_shallow());
  store_baseline(f2);
  BaselineSelection selection = select_baseline(*shallow, store, request(f2, c3));
  ASSERT_TRUE(selection.found);
  EXPECT_EQ(selection.sha, f2);
  EXPECT_EQ(selection.start_sha, f2);
  ASSERT_EQ(selection.notes.size(), 1u);
  EXPECT_EQ(selection.notes[0],
            "shallow clone: the merge base of HEAD and BASE is not in this clone; fetch full history "
            "(actions/checkout fetch-depth: 0, GIT_DEPTH: 0) \xE2\x80\x94 falling back to HEAD's own ancestors");
}

TEST_F(BaselineSelectTest, ShallowCloneWithBothTipsButNoMergeBaseFallsBack) {
  TestRepo clone(dir / "clone", false);
  clone.git("clone -q --depth 1 --no-single-branch --branch feature file://" + repo.dir() + " .");
  std::optional<GitRepo> shallow = GitRepo::open(clone.dir());
  ASSERT_TRUE(shallow.has_value());
  store_baseline(c1);
  BaselineSelection selection = select_baseline(*shallow, store, request(f2, "origin/main"));
  EXPECT_FALSE(selection.found);
  EXPECT_EQ(selection.start_sha, f2);
  EXPECT_EQ(selection.reason, "no baseline within 1 first-parent commits of " + f2.substr(0, 7));
  ASSERT_EQ(selection.notes.size(), 2u);
  EXPECT_EQ(selection.notes[0], k_shallow_clone_note);
  EXPECT_EQ(selection.notes[1], "shallow clone: history ends after 1 first-parent commits of " + f2.substr(0, 7) +
                                    "; fetch full history (actions/checkout fetch-depth: 0, GIT_DEPTH: 0) to search "
                                    "further");
}

}  // namespace
}  // namespace driftgate

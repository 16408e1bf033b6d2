// The git notes store: the BaselineStore contract on refs/notes/driftgate in real
// temporary repositories, corrupt notes named by line, and concurrent writers.
#include "differ/git_notes_store.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "app/command.h"
#include "core/error.h"
#include "core/file_util.h"
#include "core/git_repo.h"
#include "differ/baseline_select.h"
#include "differ/store_spec.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::make_check;
using test::make_environment;
using test::make_run;
using test::TempDir;
using test::TestRepo;

class GitNotesStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c1 = repo.commit("c1");
    c2 = repo.commit("c2");
    c3 = repo.commit("c3");
  }
  RunFile run_at(const std::string& sha, const std::string& threads = "1") {
    return make_run(sha, make_environment(threads),
                    {make_check("b", CheckStatus::k_pass, 1e-7), make_check("a", CheckStatus::k_fail_numeric, 0.5)});
  }

  TempDir dir;
  TestRepo repo{dir / "repo"};
  std::string c1, c2, c3;
};

TEST_F(GitNotesStoreTest, SaveLoadListAndRemoveAcrossEnvironments) {
  GitNotesStore store(repo.dir());
  EXPECT_TRUE(store.env_keys().empty());
  EXPECT_FALSE(store.contains(make_environment().key(), c1));
  EXPECT_EQ(store.save(run_at(c1)), "refs/notes/driftgate:" + c1 + " [" + make_environment().key() + "]");
  store.save(run_at(c1, "2"));
  store.save(run_at(c2));
  std::optional<RunFile> loaded = store.load(make_environment().key(), c1);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->checks[0].id, "exp/a/cpu_fp32~onednn_off/out");  // canonical: sorted by id
  EXPECT_TRUE(store.contains(make_environment("2").key(), c1));
  std::vector<std::string> keys{make_environment().key(), make_environment("2").key()};
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(store.env_keys(), keys);
  std::vector<std::string> shas{c1, c2};
  std::sort(shas.begin(), shas.end());
  EXPECT_EQ(store.shas(make_environment().key()), shas);
  EXPECT_EQ(repo.git("notes --ref=driftgate show " + c1).substr(0, 39),
            "# driftgate baseline " + std::min(keys[0], keys[1]).substr(0, 16) + "\n{");
  // The working tree and the commits are untouched.
  EXPECT_EQ(repo.git("status --porcelain"), "");
  EXPECT_EQ(repo.git("rev-parse HEAD"), c3);

  EXPECT_TRUE(store.remove(make_environment().key(), c1));
  EXPECT_FALSE(store.contains(make_environment().key(), c1));
  EXPECT_TRUE(store.contains(make_environment("2").key(), c1));
  EXPECT_FALSE(store.remove(make_environment().key(), c1));
}

TEST_F(GitNotesStoreTest, AcceptanceLogLinesAreNamedByNoteLine) {
  GitNotesStore store(repo.dir());
  store.save_accepted(run_at(c1), "{\"first\":1}");
  store.save_accepted(run_at(c1), "{\"second\":2}");
  auto log = store.acceptance_log(make_environment().key(), c1);
  ASSERT_EQ(log.size(), 2u);
  // marker, header, 2 checks, summary, marker, then the log
  EXPECT_EQ(log[0].first, "refs/notes/driftgate:" + c1 + ":7");
  EXPECT_EQ(log[1].second, "{\"second\":2}");
}

TEST_F(GitNotesStoreTest, ACorruptOrTruncatedLineIsReportedWithItsLine) {
  GitNotesStore store(repo.dir());
  store.save(run_at(c1));
  std::string note = repo.git("notes --ref=driftgate show " + c1);
  std::string truncated = note.substr(0, note.find("\"type\":\"check\"") + 20);  // cut inside line 3
  write_file_atomic(dir / "note.txt", truncated + "\n");
  repo.git("notes --ref=driftgate add -f -F '" + (dir / "note.txt") + "' " + c1);
  try {
    store.load(make_environment().key(), c1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string prefix = "refs/notes/driftgate:" + c1 + ":3: not valid JSON";
    EXPECT_EQ(std::string(e.what()).substr(0, prefix.size()), prefix);
  }
  write_file_atomic(dir / "note.txt", "hand-written text\n");
  repo.git("notes --ref=driftgate add -f -F '" + (dir / "note.txt") + "' " + c2);
  EXPECT_THROW(store.env_keys(), Error);
}

TEST_F(GitNotesStoreTest, SelectionWalksToABaselineSeveralCommitsBack) {
  GitNotesStore store(repo.dir());
  store.save(run_at(c1));
  std::optional<GitRepo> git = GitRepo::open(repo.dir());
  BaselineSelection selection = select_baseline(*git, store, SelectionRequest{c3, std::nullopt, make_environment()});
  ASSERT_TRUE(selection.found);
  EXPECT_EQ(selection.sha, c1);
  EXPECT_EQ(selection.steps, 2);
}

TEST_F(GitNotesStoreTest, ConcurrentWritersToOneNoteLoseNothing) {
  std::vector<std::thread> writers;
  for (int i = 0; i < 4; ++i) {
    writers.emplace_back([&, i] {
      GitNotesStore store(repo.dir());
      store.save(run_at(c1, std::to_string(10 + i)));
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  EXPECT_EQ(GitNotesStore(repo.dir()).env_keys().size(), 4u);
}

TEST_F(GitNotesStoreTest, DiffAndBaselineCommandsUseTheNotesStore) {
  std::ostringstream content;
  write_run(content, run_at(c1));
  write_file_atomic(dir / "base.jsonl", content.str());
  std::ostringstream out;
  std::ostringstream err;
  CommandContext update{{"update", dir / "base.jsonl", "--store", "notes:", "--repo", repo.dir()}, {}, out, err};
  EXPECT_EQ(cmd_baseline(update), 0);
  RunFile regressed = run_at(c3);
  regressed.checks[0].status = CheckStatus::k_fail_numeric;  // b: pass -> fail
  regressed.summary = summarize(regressed.header, regressed.checks);
  std::ostringstream run_content;
  write_run(run_content, regressed);
  write_file_atomic(dir / "run.jsonl", run_content.str());
  CommandContext diff{{dir / "run.jsonl", "--store-kind", "notes", "--repo", repo.dir()}, {}, out, err};
  EXPECT_EQ(cmd_diff(diff), 1);
  EXPECT_NE(err.str().find("with refs/notes/driftgate:" + c1), std::string::npos) << err.str();
  EXPECT_NE(out.str().find("--store-kind notes --repo"), std::string::npos) << out.str();
}

TEST(StoreSpec, SpellingsAndErrors) {
  EXPECT_EQ(parse_store_spec("baselines", "dir").kind, StoreSpec::Kind::k_directory);
  EXPECT_EQ(parse_store_spec("notes:", "dir").notes_ref, "refs/notes/driftgate");
  EXPECT_EQ(parse_store_spec("notes:refs/notes/ci", "dir").notes_ref, "refs/notes/ci");
  EXPECT_EQ(parse_store_spec("baselines", "notes").notes_ref, "refs/notes/driftgate");
  EXPECT_THROW(parse_store_spec("notes:heads/x", "dir"), Error);
  try {
    parse_store_spec("baselines", "note");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--store-kind 'note'; did you mean 'notes'?: one of dir (a directory of <env-key>/<sha>.jsonl) or notes "
              "(git notes, refs/notes/driftgate)");
  }
}

}  // namespace
}  // namespace driftgate

#include "differ/baseline_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/file_util.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

using test::make_check;
using test::make_environment;
using test::make_run;
using test::TempDir;

const std::string k_sha = "0123456789abcdef0123456789abcdef01234567";
const std::string k_other_sha = "89abcdef0123456789abcdef0123456789abcdef";

RunFile unsorted_run(const std::string& sha = k_sha) {
  return make_run(
      sha, make_environment(),
      {make_check("c", CheckStatus::k_pass, 1e-7), make_check("a", CheckStatus::k_fail_numeric, 0.5, "3 of 10"),
       make_check("b", CheckStatus::k_crash_target, std::nullopt, "threw")});
}

std::vector<std::string> ids(const RunFile& run) {
  std::vector<std::string> result;
  for (const auto& check : run.checks) {
    result.push_back(check.id);
  }
  return result;
}

TEST(BaselineStore, SaveThenLoadRoundTripsSortedByCheckId) {
  TempDir dir;
  DirectoryStore store(dir / "baselines");
  RunFile run = unsorted_run();
  std::string key = run.header.environment.key();

  EXPECT_EQ(store.save(run), key + "/" + k_sha + ".jsonl");

  EXPECT_TRUE(std::filesystem::is_regular_file(dir / ("baselines/" + key + "/" + k_sha + ".jsonl")));
  std::optional<RunFile> loaded = store.load(key, k_sha);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(ids(*loaded), (std::vector<std::string>{"exp/a/cpu_fp32~onednn_off/out", "exp/b/cpu_fp32~onednn_off/out",
                                                    "exp/c/cpu_fp32~onednn_off/out"}));
  EXPECT_EQ(loaded->checks[0].status, CheckStatus::k_fail_numeric);
  EXPECT_EQ(loaded->checks[0].message, "3 of 10");
  EXPECT_EQ(loaded->checks[1].status, CheckStatus::k_crash_target);
  EXPECT_DOUBLE_EQ(loaded->checks[2].stats->max_abs, 1e-7);
  EXPECT_EQ(loaded->header.commit.sha, k_sha);
  EXPECT_EQ(loaded->header.environment.key(), key);
  EXPECT_TRUE(store.contains(key, k_sha));
  EXPECT_EQ(store.env_keys(), std::vector<std::string>{key});
  EXPECT_EQ(store.shas(key), std::vector<std::string>{k_sha});
}

TEST(BaselineStore, BytesAreDeterministicWhateverTheCheckOrder) {
  TempDir dir;
  DirectoryStore first(dir / "one");
  DirectoryStore second(dir / "two");
  RunFile run = unsorted_run();
  RunFile shuffled = run;
  std::swap(shuffled.checks[0], shuffled.checks[2]);
  first.save(run);
  second.save(shuffled);
  std::string key = run.header.environment.key();

  std::string bytes = read_file(first.path_of(key, k_sha));
  EXPECT_EQ(bytes, read_file(second.path_of(key, k_sha)));
  std::ostringstream expected;
  write_run(expected, canonical_baseline(run));
  EXPECT_EQ(bytes, expected.str());
  // Saving again over the same baseline changes nothing.
  first.save(shuffled);
  EXPECT_EQ(read_file(first.path_of(key, k_sha)), bytes);
  // Line 2 is the first check in id order.
  std::istringstream lines(bytes);
  std::string line;
  std::getline(lines, line);
  std::getline(lines, line);
  EXPECT_NE(line.find("\"id\":\"exp/a/cpu_fp32~onednn_off/out\""), std::string::npos) << line;
}

TEST(BaselineStore, LoadOfAbsentBaselineIsNullopt) {
  TempDir dir;
  DirectoryStore store(dir / "baselines");
  std::string key = make_environment().key();
  EXPECT_FALSE(store.exists());
  EXPECT_FALSE(store.load(key, k_sha).has_value());
  EXPECT_FALSE(store.contains(key, k_sha));
  EXPECT_TRUE(store.env_keys().empty());
  EXPECT_TRUE(store.shas(key).empty());
  store.save(unsorted_run(k_other_sha));
  EXPECT_TRUE(store.exists());
  EXPECT_FALSE(store.load(key, k_sha).has_value());
}

TEST(BaselineStore, AtomicWritesLeaveNoTemporaryFiles) {
  TempDir dir;
  DirectoryStore store(dir / "baselines");
  for (int i = 0; i < 5; ++i) {
    store.save(unsorted_run());
    store.save(unsorted_run(k_other_sha));
  }
  std::string key = make_environment().key();
  EXPECT_EQ(test::files_under(dir / "baselines"),
            (std::vector<std::string>{".gitignore", ".lock", key + "/" + k_sha + ".jsonl",
                                      key + "/" + k_other_sha + ".jsonl"}));
}

// Two writers replace the same baseline with different contents while a reader
// keeps loading it: every load must parse (the summary check catches a torn file)
// and be one of the two versions, never a mix.
TEST(BaselineStore, ConcurrentSavesNeverTearAFile) {
  TempDir dir;
  std::vector<CheckRecord> many_a;
  std::vector<CheckRecord> many_b;
  for (int i = 0; i < 300; ++i) {
    std::string input = "in" + std::to_string(1000 + i);
    many_a.push_back(make_check(input, CheckStatus::k_pass, 1e-6, std::string(64, 'a')));
    many_b.push_back(make_check(input, CheckStatus::k_fail_numeric, 0.25, std::string(96, 'b')));
  }
  many_b.pop_back();  // a different size, so a mix of the two cannot pass the summary check
  const RunFile run_a = make_run(k_sha, make_environment(), many_a);
  const RunFile run_b = make_run(k_sha, make_environment(), many_b);
  const std::string key = run_a.header.environment.key();
  std::atomic<bool> done{false};
  std::atomic<int> loads{0};
  std::string reader_failure;

  auto writer = [&](const RunFile& run) {
    DirectoryStore store(dir / "baselines");
    for (int i = 0; i < 40; ++i) {
      store.save(run);
    }
  };
  std::thread reader([&] {
    DirectoryStore store(dir / "baselines");
    while (!done.load()) {
      try {
        std::optional<RunFile> loaded = store.load(key, k_sha);
        if (loaded && loaded->checks.size() != 300 && loaded->checks.size() != 299) {
          reader_failure = "unexpected size " + std::to_string(loaded->checks.size());
        }
        if (loaded) {
          loads.fetch_add(1);
        }
      } catch (const Error& e) {
        reader_failure = e.what();
      }
    }
  });
  std::thread first(writer, std::cref(run_a));
  std::thread second(writer, std::cref(run_b));
  first.join();
  second.join();
  done.store(true);
  reader.join();

  EXPECT_EQ(reader_failure, "");
  EXPECT_GT(loads.load(), 0);
  std::optional<RunFile> last = DirectoryStore(dir / "baselines").load(key, k_sha);
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(last->checks.size() == 300 || last->checks.size() == 299);
  EXPECT_EQ(test::files_under(dir / "baselines"),
            (std::vector<std::string>{".gitignore", ".lock", key + "/" + k_sha + ".jsonl"}));
  EXPECT_EQ(read_file(dir / "baselines/.gitignore"), "# driftgate's lock file for concurrent writers\n.lock\n");
}

TEST(BaselineStore, NamesThatCouldEscapeTheDirectoryAreRejected) {
  TempDir dir;
  DirectoryStore store(dir / "baselines");
  std::string key = make_environment().key();
  try {
    store.load("../../etc", k_sha);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "invalid environment key '../../etc': expected 16 lowercase hex digits (as printed by "
                 "driftgate env)");
  }
  EXPECT_THROW(store.load(key, "../../../../tmp/evil"), Error);
  EXPECT_THROW(store.load(key, "0123456789ABCDEF0123456789ABCDEF01234567"), Error);  // upper case
  EXPECT_THROW(store.contains(key + "/..", k_sha), Error);
  EXPECT_THROW(store.shas(".."), Error);

  RunFile escaping = unsorted_run("../../outside");
  try {
    store.save(escaping);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "invalid commit SHA '../../outside' for a baseline: expected 40 lowercase hex digits; "
                 "store runs made inside a git checkout");
  }
  EXPECT_THROW(store.save(unsorted_run("unknown")), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "baselines"));
  EXPECT_FALSE(std::filesystem::exists(dir / "outside.jsonl"));
}

TEST(BaselineStore, ListingsIgnoreEverythingThatIsNotABaseline) {
  TempDir dir;
  DirectoryStore store(dir / "baselines");
  store.save(unsorted_run());
  std::string key = make_environment().key();
  write_file_atomic(dir / "baselines/README.md", "baselines\n");
  std::filesystem::create_directories(dir / "baselines/not-a-key");
  write_file_atomic(dir / ("baselines/" + key + "/notes.txt"), "x\n");
  write_file_atomic(dir / ("baselines/" + key + "/" + k_other_sha + ".jsonl.tmp.abc123"), "partial");

  EXPECT_EQ(store.env_keys(), std::vector<std::string>{key});
  EXPECT_EQ(store.shas(key), std::vector<std::string>{k_sha});
  EXPECT_FALSE(store.contains(key, k_other_sha));
  // A directory where a baseline belongs is not ignored (the gate would go neutral): it is
  // listed, and reading it is an error that names it.
  std::filesystem::create_directories(dir / ("baselines/" + key + "/" + k_other_sha + ".jsonl"));
  EXPECT_TRUE(store.contains(key, k_other_sha));
  EXPECT_THROW(store.load(key, k_other_sha), Error);
}

TEST(BaselineStore, LoadRefusesAFileWhosePathDisagreesWithItsHeader) {
  TempDir dir;
  DirectoryStore store(dir / "baselines");
  store.save(unsorted_run());
  std::string key = make_environment().key();
  std::filesystem::rename(store.path_of(key, k_sha), store.path_of(key, k_other_sha));
  try {
    store.load(key, k_other_sha);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), store.path_of(key, k_other_sha) + ": holds environment " + key + " and commit " +
                                         k_sha +
                                         ", not the ones its path names; the file was moved or edited by hand; "
                                         "store it again with driftgate baseline update");
  }
}

TEST(BaselineStore, NameValidation) {
  EXPECT_TRUE(is_env_key("0123456789abcdef"));
  EXPECT_FALSE(is_env_key("0123456789abcde"));
  EXPECT_FALSE(is_env_key("0123456789abcdeg"));
  EXPECT_FALSE(is_env_key("0123456789ABCDEF"));
  EXPECT_TRUE(is_commit_sha(k_sha));
  EXPECT_FALSE(is_commit_sha("unknown"));
  EXPECT_FALSE(is_commit_sha(k_sha + "0"));
}

}  // namespace
}  // namespace driftgate

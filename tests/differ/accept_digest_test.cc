// The proposed baseline written from digests (what `driftgate diff` holds) and the glob
// matching that selects its checks: matches_any is fnmatch(3) without flags, its fast
// path for "PREFIX*" included, and write_accepted_baseline from two digests writes the
// text accepted_baseline_text gives for the parsed runs, through a temporary file.
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_util.h"
#include "core/record.h"
#include "core/run_digest.h"
#include "differ/baseline_accept.h"
#include "tests/differ/test_support.h"

namespace driftgate {
namespace {

bool fnmatch_any(const std::string& id, const std::vector<std::string>& globs) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& glob) { return ::fnmatch(glob.c_str(), id.c_str(), 0) == 0; });
}

TEST(MatchesAny, IsFnmatchWithoutFlagsOnRandomIdsAndGlobs) {
  std::mt19937 random(31337);
  auto below = [&random](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  static const char k_id_bytes[] = {'a', 'b', 'c', '/', '~', '.', '_', '-', '*', '?', '[', ']', '\\', '!', 'A'};
  static const char k_glob_bytes[] = {'a', 'b', 'c', '/', '~', '.', '*', '*', '?', '[', ']', '\\', '!', '^', '-'};
  auto random_id = [&] {
    std::string id;
    size_t length = below(14);
    for (size_t i = 0; i < length; ++i) {
      // Now and then a byte of UTF-8 (fnmatch without a locale takes bytes).
      id += below(20) == 0 ? static_cast<char>(0x80 + below(0x80)) : k_id_bytes[below(std::size(k_id_bytes))];
    }
    return id;
  };
  // A prefix of no special character (the fast path's form), from the id or not.
  auto plain_prefix = [&](const std::string& id) {
    std::string prefix;
    if (below(2) == 0) {
      prefix = id.substr(0, below(id.size() + 2));
    } else {
      prefix = random_id();
    }
    if (below(4) == 0 && !prefix.empty()) {
      prefix[below(prefix.size())] = 'z';  // almost the id's prefix
    }
    prefix.erase(std::remove_if(prefix.begin(), prefix.end(),
                                [](char c) { return c == '*' || c == '?' || c == '[' || c == '\\'; }),
                 prefix.end());
    return prefix;
  };
  size_t fast_form = 0;
  size_t matched = 0;
  size_t rounds = 0;
  for (int round = 0; round < 60000; ++round) {
    std::string id = random_id();
    std::string glob;
    switch (below(6)) {
      case 0:
      case 1:  // PREFIX*
        glob = plain_prefix(id) + "*";
        break;
      case 2:  // PREFIX* with one more special character somewhere
        glob = plain_prefix(id);
        glob.insert(below(glob.size() + 1), 1, "*?[\\"[below(4)]);
        glob += "*";
        break;
      case 3:  // '*' in the middle, or a trailing "\*"
        glob = plain_prefix(id) + (below(2) == 0 ? "*" : "\\*") + id.substr(below(id.size() + 1));
        break;
      default: {  // anything
        size_t length = below(10);
        for (size_t i = 0; i < length; ++i) {
          glob += k_glob_bytes[below(std::size(k_glob_bytes))];
        }
        break;
      }
    }
    bool fast = !glob.empty() && glob.back() == '*' && glob.find_first_of("*?[\\") == glob.size() - 1;
    fast_form += fast ? 1 : 0;
    bool expected = ::fnmatch(glob.c_str(), id.c_str(), 0) == 0;
    matched += expected ? 1 : 0;
    ASSERT_EQ(matches_any(id, {glob}), expected) << "id '" << id << "', glob '" << glob << "'";
    // The string_view overload reads only the view's bytes.
    std::string padded = id + "trailing";
    ASSERT_EQ(matches_any(std::string_view(padded).substr(0, id.size()), {glob}), expected)
        << "id '" << id << "', glob '" << glob << "'";
    // Several globs: any of them.
    std::vector<std::string> globs = {glob, plain_prefix(id) + "*", "*" + id.substr(below(id.size() + 1))};
    std::shuffle(globs.begin(), globs.end(), random);
    ASSERT_EQ(matches_any(id, globs), fnmatch_any(id, globs)) << "id '" << id << "'";
    ++rounds;
  }
  EXPECT_GT(fast_form, rounds / 4);
  EXPECT_GT(matched, rounds / 10);
  EXPECT_LT(matched, rounds - rounds / 10);
  EXPECT_FALSE(matches_any("exp/a", {}));
  EXPECT_TRUE(matches_any("", {"*"}));
  EXPECT_TRUE(matches_any("exp/a", {"exp/a*"}));   // the prefix is the whole id
  EXPECT_FALSE(matches_any("exp/", {"exp/a*"}));   // the id is shorter than the prefix
  EXPECT_TRUE(matches_any(".hidden/x", {".h*"}));  // no FNM_PERIOD
  EXPECT_TRUE(matches_any("a/b/c", {"a*"}));       // no FNM_PATHNAME
}

// A run and a baseline of checks of every kind: canonical lines, escaped texts, 3-digit
// exponents, tier-2 and tier-3 members (read in full), in no particular order.
struct Files {
  test::TempDir dir;
  RunFile run;
  RunFile base;
  std::string run_path = dir / "run.jsonl";
  std::string base_path = dir / "base.jsonl";

  Files() {
    std::vector<CheckRecord> base_checks;
    std::vector<CheckRecord> run_checks;
    for (int i = 0; i < 60; ++i) {
      std::string input = "in" + std::to_string((i * 37) % 60);
      CheckStatus before = i % 9 == 0 ? CheckStatus::k_fail_numeric : CheckStatus::k_pass;
      CheckStatus after = i % 7 == 0 ? CheckStatus::k_fail_numeric : CheckStatus::k_pass;
      std::string experiment = i % 3 == 0 ? "other" : "exp";
      if (i % 10 != 1) {
        base_checks.push_back(test::make_check(input, before, 1e-6 * i, "", experiment));
      }
      if (i % 10 != 2) {
        run_checks.push_back(test::make_check(input, after, i % 5 == 0 ? 1e-300 : 2e-6 * i,
                                              i % 4 == 0 ? "q\"uote \xe2\x9c\x93" : "", experiment));
      }
    }
    CheckRecord localized = test::make_check("localized", CheckStatus::k_fail_numeric, 0.5, "diverges");
    localized.localization = Localization{};
    localized.localization->alignment = "position";
    run_checks.push_back(localized);
    base_checks.push_back(test::make_check("localized", CheckStatus::k_pass, 1e-6));
    CheckRecord task = test::make_check("task", CheckStatus::k_fail_task, std::nullopt, "flipped");
    task.output = "task:classification";
    task.id = make_check_id(task.experiment, task.input, task.reference, task.target, task.output);
    task.task = TaskResult{"classification", "top1+top5", {{"top1_agreement", 0.5}}, {"flip at 0"}};
    base_checks.push_back(task);
    run = test::make_run("fedcba9876543210fedcba9876543210fedcba98", test::make_environment(), run_checks);
    base = test::make_run("0123456789abcdef0123456789abcdef01234567", test::make_environment(), base_checks);
    base.header.experiments.push_back(ExperimentHeader{"base_only",
                                                       "configs/b.yaml",
                                                       "h",
                                                       "models/b.pt",
                                                       "m",
                                                       {},
                                                       "cpu_fp32",
                                                       {"onednn_off"},
                                                       Tolerance{},
                                                       "default"});
    base.summary = summarize(base.header, base.checks);
    write(run_path, run);
    write(base_path, base);
  }
  static void write(const std::string& path, const RunFile& file) {
    std::ofstream out(path, std::ios::binary);
    write_run(out, file);
  }
};

const std::vector<std::vector<std::string>> k_glob_sets = {
    {"exp/*"},
    {"exp/in1*", "other/in2*"},
    {"*/in?/*", "exp/localized/*"},
    {"*"},
    {"nothing*"},
    {},
    {"exp/task/cpu_fp32~onednn_off/task:classification", "other/in[0-3]/*"},
    {glob_escape("exp/in10/cpu_fp32~onednn_off/out"), "exp/in5*"},
};

TEST(WriteAcceptedBaseline, FromDigestsIsTheAcceptedBaselineTextOfTheParsedRuns) {
  Files files;
  RunFile run = read_run_file(files.run_path);
  RunFile base = read_run_file(files.base_path);
  RunDigest run_digest = read_run_digest(files.run_path);
  RunDigest base_digest = read_run_digest(files.base_path);
  size_t canonical = 0;
  for (const auto& check : run_digest.checks) {
    canonical += check.record == nullptr ? 1 : 0;
  }
  ASSERT_GT(canonical, 10u) << "the digest copies canonical lines";
  ASSERT_LT(canonical, run_digest.checks.size()) << "and writes the others from their records";
  std::string proposed = files.dir / "proposed/baseline.jsonl";  // its directory is made
  for (const auto& globs : k_glob_sets) {
    std::string expected = accepted_baseline_text(run, base, globs);
    write_accepted_baseline(proposed, run_digest, base_digest, globs);
    EXPECT_EQ(read_file(proposed), expected) << ::testing::PrintToString(globs);
    // The RunFile overload and accept_checks agree with it.
    std::ostringstream written;
    write_run(written, accept_checks(run, base, globs).baseline);
    EXPECT_EQ(written.str(), expected) << ::testing::PrintToString(globs);
    write_accepted_baseline(proposed, run, base, globs);
    EXPECT_EQ(read_file(proposed), expected) << ::testing::PrintToString(globs);
    // The proposal is a run file the strict reader takes.
    EXPECT_NO_THROW(read_run_file(proposed)) << ::testing::PrintToString(globs);
    // From digests of the text held in memory (a baseline read from git notes).
    write_accepted_baseline(proposed, digest_run_text(read_file(files.run_path), "run"),
                            digest_run_text(read_file(files.base_path), "notes:base"), globs);
    EXPECT_EQ(read_file(proposed), expected) << ::testing::PrintToString(globs);
  }
  // Nothing else is left in the directory: no temporary file.
  EXPECT_EQ(test::files_under(files.dir.path()),
            (std::vector<std::string>{"base.jsonl", "proposed/baseline.jsonl", "run.jsonl"}));
}

TEST(WriteAcceptedBaseline, ReplacesTheFileByRenameAndLeavesNoTemporaryFile) {
  Files files;
  RunDigest run_digest = read_run_digest(files.run_path);
  RunDigest base_digest = read_run_digest(files.base_path);
  std::string proposed = files.dir / "proposed.jsonl";
  std::string linked = files.dir / "linked.jsonl";
  {
    std::ofstream old(proposed);
    old << "the old proposal\n";
  }
  // A second name for the old file: a write in place would change it too, a rename does not.
  ASSERT_EQ(std::filesystem::exists(linked), false);
  std::filesystem::create_hard_link(proposed, linked);
  struct stat before {};
  ASSERT_EQ(::stat(proposed.c_str(), &before), 0);
  write_accepted_baseline(proposed, run_digest, base_digest, {"exp/*"});
  struct stat after {};
  ASSERT_EQ(::stat(proposed.c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino) << "the proposal was written in place, not renamed over the old one";
  EXPECT_EQ(read_file(linked), "the old proposal\n");
  EXPECT_EQ(read_file(proposed),
            accepted_baseline_text(read_run_file(files.run_path), read_run_file(files.base_path), {"exp/*"}));
  EXPECT_EQ((after.st_mode & 0777), 0644u);
  EXPECT_EQ(test::files_under(files.dir.path()),
            (std::vector<std::string>{"base.jsonl", "linked.jsonl", "proposed.jsonl", "run.jsonl"}));
  // A path that cannot be written: an error naming it, and nothing left behind.
  std::string directory = files.dir / "a_directory";
  std::filesystem::create_directories(directory);
  try {
    write_accepted_baseline(directory, run_digest, base_digest, {"exp/*"});
    ADD_FAILURE() << "writing over a directory succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(directory), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::files_under(files.dir.path()),
            (std::vector<std::string>{"base.jsonl", "linked.jsonl", "proposed.jsonl", "run.jsonl"}));
}

}  // namespace
}  // namespace driftgate

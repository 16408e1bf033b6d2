// The proposal written from digests (what `driftgate diff` holds) and the glob matching
// that selects its checks: matches_any is fnmatch(3) without flags, its fast path for
// "PREFIX*" included, and a proposal written from two digests, applied to its
// baseline, gives what accept_checks gives for the parsed runs.
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_util.h"
#include "core/record.h"
#include "differ/baseline_accept.h"
#include "differ/baseline_proposal.h"
#include "differ/run_digest.h"
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
    // Checks whose values did not change: the same line, or the same up to the timings;
    // one with tier-2 members (read in full), one whose baseline line a hand reordered.
    for (int i = 0; i < 8; ++i) {
      CheckRecord same = test::make_check("same" + std::to_string(i), CheckStatus::k_pass, 3e-7 * i);
      if (i == 3) {
        same.localization = Localization{};
        same.localization->alignment = "position";
      }
      same.reference_ms = 1.5;
      same.target_ms = 2.0;
      base_checks.push_back(same);
      if (i % 2 == 1) {
        same.reference_ms = 1.75;  // timings move from run to run
      }
      run_checks.push_back(same);
    }
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
    // A line of the baseline with its members in another order: read in full, not in
    // the canonical layout; its values are still the run's.
    std::string text = read_file(base_path);
    const std::string id = "\"id\":\"" + make_check_id("exp", "same5", "cpu_fp32", "onednn_off", "out") + "\"";
    size_t at = text.rfind('\n', text.find(id)) + 1;
    size_t end = text.find('\n', at);
    nlohmann::json sorted = nlohmann::json::parse(text.substr(at, end - at));  // std::map: keys sorted
    text.replace(at, end - at, sorted.dump());
    write_file_atomic(base_path, text);
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

std::string text_of(const RunFile& run) {
  std::ostringstream out;
  write_run(out, run);
  return out.str();
}

// A proposal written from two digests, applied to the baseline it was made from, gives
// what `baseline accept` of the same globs gives from the parsed files: the same
// baseline, accepted and removed ids, whichever way the digests were read.
TEST(BaselineProposal, AppliedToItsBaselineIsWhatAcceptGives) {
  Files files;
  RunFile run = read_run_file(files.run_path);
  RunFile base = read_run_file(files.base_path);
  RunDigest run_digest = read_run_digest(files.run_path);
  size_t canonical = 0;
  for (const auto& check : run_digest.checks) {
    canonical += check.record == nullptr ? 1 : 0;
  }
  ASSERT_GT(canonical, 10u) << "the digest copies canonical lines";
  ASSERT_LT(canonical, run_digest.checks.size()) << "and writes the others from their records";
  struct Way {
    const char* name;
    RunDigest run;
    RunDigest base;
  };
  std::vector<Way> ways;
  ways.push_back({"files", read_run_digest(files.run_path), read_run_digest(files.base_path)});
  ways.push_back({"like", read_run_digest(files.run_path), RunDigest{}});
  ways.back().base = read_run_digest(files.base_path, &ways.back().run);  // twins: vouched lines
  ways.push_back({"memory", digest_run_text(read_file(files.run_path), "run"),
                  digest_run_text(read_file(files.base_path), "notes:base")});
  ways.push_back({"parsed", digest_view(run), digest_view(base)});
  std::string proposed = files.dir / "out/baseline-proposal.jsonl";  // its directory is made
  for (const auto& globs : k_glob_sets) {
    AcceptOutcome accepted = accept_checks(run, base, globs);
    for (const Way& way : ways) {
      SCOPED_TRACE(std::string(way.name) + " " + ::testing::PrintToString(globs));
      ProposalCounts counts = write_baseline_proposal(proposed, way.run, way.base, globs);
      EXPECT_EQ(counts.changes, accepted.accepted.size());
      EXPECT_EQ(counts.drops, accepted.removed.size());
      EXPECT_EQ(counts.unchanged, accepted.unchanged);
      BaselineProposal proposal = read_baseline_proposal(proposed);
      EXPECT_EQ(proposal.base_sha, base.header.commit.sha);
      EXPECT_EQ(proposal.run_sha, run.header.commit.sha);
      EXPECT_EQ(proposal.globs, globs);
      AcceptOutcome applied = apply_baseline_proposal(proposal, base, proposed);
      EXPECT_EQ(text_of(applied.baseline), text_of(accepted.baseline));
      EXPECT_EQ(applied.accepted, accepted.accepted);
      EXPECT_EQ(applied.removed, accepted.removed);
      EXPECT_THROW(read_run_file(proposed), Error) << "a proposal is not a run file";
    }
  }
  // Nothing else is left in the directory: no temporary file.
  EXPECT_EQ(test::files_under(files.dir.path()),
            (std::vector<std::string>{"base.jsonl", "out/baseline-proposal.jsonl", "run.jsonl"}));
}

// Checks whose values did not change keep their baseline lines (their old timings,
// a hand's member order): a refresh changes only what changed.
TEST(BaselineProposal, ChecksThatHoldTheSameValuesAreNotProposed) {
  Files files;
  RunFile run = read_run_file(files.run_path);
  RunFile base = read_run_file(files.base_path);
  AcceptOutcome accepted = accept_checks(run, base, {"exp/same*"});
  EXPECT_TRUE(accepted.accepted.empty()) << ::testing::PrintToString(accepted.accepted);
  EXPECT_TRUE(accepted.removed.empty());
  EXPECT_EQ(accepted.unchanged, 8u);
  for (const auto& check : accepted.baseline.checks) {
    if (check.input.rfind("same", 0) == 0) {
      EXPECT_EQ(check.reference_ms, 1.5) << check.id << ": the baseline's timings stay";
    }
  }
  RunDigest run_digest = read_run_digest(files.run_path);
  RunDigest base_digest = read_run_digest(files.base_path, &run_digest);
  ProposalCounts counts = write_baseline_proposal(files.dir / "p.jsonl", run_digest, base_digest, {"exp/*"});
  EXPECT_EQ(counts.unchanged, 8u);
  BaselineProposal proposal = read_baseline_proposal(files.dir / "p.jsonl");
  for (const auto& check : proposal.changes) {
    EXPECT_EQ(check.input.rfind("same", 0), std::string::npos) << check.id << " is proposed";
  }
  EXPECT_EQ(proposal.changes.size(), counts.changes);
}

// The proposal is the stored baseline's change only: it is refused against any other
// baseline, or one that no longer holds what the diff saw for the checks it changes.
TEST(BaselineProposal, IsRefusedByABaselineThatChangedSince) {
  Files files;
  RunFile run = read_run_file(files.run_path);
  RunFile base = read_run_file(files.base_path);
  std::string path = files.dir / "p.jsonl";
  write_baseline_proposal(path, digest_view(run), digest_view(base), {"exp/in1*"});
  BaselineProposal proposal = read_baseline_proposal(path);
  ASSERT_GT(proposal.changes.size(), 0u);
  auto error_of = [&](const RunFile& other) {
    try {
      apply_baseline_proposal(proposal, other, path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(applied)");
  };
  EXPECT_EQ(error_of(base), "(applied)");
  RunFile moved = base;  // a check the proposal replaces now holds another value
  for (auto& check : moved.checks) {
    if (check.id == proposal.changes.front().id) {
      check.stats->max_abs *= 2;
    }
  }
  EXPECT_NE(error_of(moved).find(path + ": baseline " + proposal.env_key + "/" + proposal.base_sha +
                                 " no longer holds what it held when the proposal was made"),
            std::string::npos)
      << error_of(moved);
  RunFile untouched = base;  // one it does not touch: still applies
  for (auto& check : untouched.checks) {
    if (check.id.rfind("exp/in1", 0) != 0 && check.stats) {
      check.stats->max_abs *= 2;
    }
  }
  EXPECT_EQ(error_of(untouched), "(applied)");
  RunFile grown = base;  // a check more
  grown.checks.push_back(test::make_check("late", CheckStatus::k_pass, 1e-7));
  EXPECT_NE(error_of(grown).find("checks then"), std::string::npos) << error_of(grown);
  RunFile other = base;  // another commit's baseline
  other.header.commit.sha = run.header.commit.sha;
  EXPECT_NE(error_of(other).find("the proposal was made from baseline"), std::string::npos) << error_of(other);
}

// A proposal that is cut short, edited or not a proposal at all: an error naming the
// file and line, never a partial apply.
TEST(BaselineProposal, ACorruptOrTruncatedProposalIsRefusedWithItsLine) {
  Files files;
  std::string path = files.dir / "p.jsonl";
  write_baseline_proposal(path, read_run_digest(files.run_path), read_run_digest(files.base_path), {"*"});
  const std::string good = read_file(path);
  std::vector<std::string> lines;
  std::istringstream in(good);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  ASSERT_GT(lines.size(), 5u);
  auto error_with = [&](const std::vector<std::string>& edited) {
    std::string text;
    for (const auto& line : edited) {
      text += line + "\n";
    }
    write_file_atomic(path, text);
    try {
      read_baseline_proposal(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  EXPECT_EQ(error_with(lines), "(read)");
  std::vector<std::string> cut(lines.begin(), lines.end() - 1);
  EXPECT_NE(error_with(cut).find(path + ": truncated: no end line"), std::string::npos) << error_with(cut);
  std::vector<std::string> broken = lines;
  broken[2] = broken[2].substr(0, broken[2].size() / 2);
  EXPECT_EQ(error_with(broken).rfind(path + ":3: ", 0), 0u) << error_with(broken);
  std::vector<std::string> swapped = lines;
  std::swap(swapped[2], swapped[3]);
  EXPECT_NE(error_with(swapped).find(path + ":4: check "), std::string::npos) << error_with(swapped);
  std::vector<std::string> missing = lines;
  missing.erase(missing.begin() + 2);
  EXPECT_NE(error_with(missing).find("its proposal line says"), std::string::npos) << error_with(missing);
  EXPECT_NE(error_with({read_file(files.run_path).substr(0, read_file(files.run_path).find('\n'))})
                .find(path + ":1: not a proposal"),
            std::string::npos);
  EXPECT_NE(error_with({}).find(path + ":1: empty file"), std::string::npos);
  std::vector<std::string> after = lines;
  after.push_back(lines[2]);
  EXPECT_NE(error_with(after).find("a line after the end line"), std::string::npos) << error_with(after);
}

TEST(BaselineProposal, ReplacesTheFileByRenameAndLeavesNoTemporaryFile) {
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
  write_baseline_proposal(proposed, run_digest, base_digest, {"exp/*"});
  struct stat after {};
  ASSERT_EQ(::stat(proposed.c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino) << "the proposal was written in place, not renamed over the old one";
  EXPECT_EQ(read_file(linked), "the old proposal\n");
  EXPECT_NO_THROW(read_baseline_proposal(proposed));
  EXPECT_EQ((after.st_mode & 0777), 0644u);
  EXPECT_EQ(test::files_under(files.dir.path()),
            (std::vector<std::string>{"base.jsonl", "linked.jsonl", "proposed.jsonl", "run.jsonl"}));
  // A path that cannot be written: an error naming it, and nothing left behind.
  std::string directory = files.dir / "a_directory";
  std::filesystem::create_directories(directory);
  try {
    write_baseline_proposal(directory, run_digest, base_digest, {"exp/*"});
    ADD_FAILURE() << "writing over a directory succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(directory), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::files_under(files.dir.path()),
            (std::vector<std::string>{"base.jsonl", "linked.jsonl", "proposed.jsonl", "run.jsonl"}));
}

}  // namespace
}  // namespace driftgate

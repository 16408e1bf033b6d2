// `driftgate merge`: sharded run files joined strictly, through the library and the command.
#include "differ/run_merge.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "app/command.h"
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

// The whole run has inputs a..f; shard i of 3 holds inputs i and i+3, as run --shard i/3 would write.
RunFile whole() {
  std::vector<CheckRecord> checks;
  for (const char* input : {"a", "b", "c", "d", "e", "f"}) {
    checks.push_back(make_check(input, CheckStatus::k_pass, 1e-7));
  }
  checks[4].status = CheckStatus::k_fail_numeric;
  return make_run(k_sha, make_environment(), checks);
}

NamedRun shard(int index, int count = 3) {
  RunFile full = whole();
  RunFile part;
  part.header = full.header;
  part.header.shard = ShardInfo{index, count};
  for (size_t i = 0; i < full.checks.size(); ++i) {
    if (static_cast<int>(i) % count == index) {
      part.checks.push_back(full.checks[i]);
    }
  }
  part.summary = summarize(part.header, part.checks);
  return {"shard" + std::to_string(index) + ".jsonl", part};
}

std::string error_of(const std::vector<NamedRun>& shards) {
  try {
    merge_shards(shards);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RunMerge, AllShardsInAnyOrderGiveTheWholeRun) {
  RunFile merged = merge_shards({shard(2), shard(0), shard(1)});
  EXPECT_EQ(merged.header.shard.count, 1);
  EXPECT_EQ(merged.checks.size(), 6u);
  EXPECT_EQ(merged.summary.checks, 6);
  EXPECT_EQ(merged.summary.expected_checks, 6);
  EXPECT_EQ(merged.summary.by_status.at("fail_numeric"), 1);
  std::ostringstream text;
  write_run(text, merged);
  EXPECT_EQ(text.str().find("\"shard\""), std::string::npos);  // count 1 is not written
  std::istringstream in(text.str());
  EXPECT_EQ(parse_run(in, "merged").checks.size(), 6u);
}

TEST(RunMerge, MissingDuplicatedAndForeignShardsAreNamed) {
  EXPECT_EQ(error_of({shard(0), shard(2)}),
            "missing shard 1/3 (have 2 of 3); a partial run must not pass the gate, so pass every shard file");
  EXPECT_EQ(error_of({shard(0), shard(1), shard(1)}),
            "shard 1/3 is given twice: shard1.jsonl and shard1.jsonl; pass each shard file once");
  NamedRun other_count = shard(1, 2);
  EXPECT_EQ(error_of({shard(0), other_count, shard(2)}),
            "shard1.jsonl: shard 1/2 is of a run in 2 shards, but shard0.jsonl is of one in 3; pass the shards of "
            "one run");
  NamedRun other_commit = shard(1);
  other_commit.run.header.commit.sha = "fedcba9876543210fedcba9876543210fedcba98";
  EXPECT_EQ(error_of({shard(0), other_commit, shard(2)}),
            "shard1.jsonl: commit fedcba9876543210fedcba9876543210fedcba98 differs from shard0.jsonl's " + k_sha +
                "; pass the shards of one run");
  NamedRun other_env = shard(1);
  other_env.run.header.environment = make_environment("4");
  EXPECT_EQ(error_of({shard(0), other_env, shard(2)}),
            "shard1.jsonl: environment key " + make_environment("4").key() + " differs from shard0.jsonl's " +
                make_environment().key() + " (threads 1 -> 4); every shard must run in the same environment");
  NamedRun other_model = shard(2);
  other_model.run.header.experiments[0].model_hash = "ffff";
  EXPECT_EQ(error_of({shard(0), shard(1), other_model}),
            "shard2.jsonl: its experiments differ from shard0.jsonl's (experiment 'exp' has another config or model "
            "hash); every shard must run the same configs");
  NamedRun overlapping = shard(1);
  overlapping.run.checks.push_back(shard(0).run.checks[0]);
  EXPECT_EQ(error_of({shard(0), overlapping, shard(2)}),
            "check 'exp/a/cpu_fp32~onednn_off/out' is in both shard0.jsonl and shard1.jsonl; the shards overlap, so "
            "they are not of one run --shard i/N split");
}

TEST(CmdMerge, WritesTheMergedFileOrNothing) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int i = 0; i < 3; ++i) {
    std::ostringstream content;
    write_run(content, shard(i).run);
    paths.push_back(dir / ("s" + std::to_string(i) + ".jsonl"));
    write_file_atomic(paths.back(), content.str());
  }
  std::ostringstream out;
  std::ostringstream err;
  CommandContext context{{paths[1], paths[0], paths[2], "-o", dir / "run.jsonl"}, {}, out, err};
  EXPECT_EQ(cmd_merge(context), 0);
  EXPECT_EQ(out.str(), "merged 3 shards into " + (dir / "run.jsonl") + " (6 checks, 6 expected)\n");
  EXPECT_EQ(read_run_file(dir / "run.jsonl").checks.size(), 6u);

  CommandContext partial{{paths[0], paths[2], "-o", dir / "partial.jsonl"}, {}, out, err};
  EXPECT_THROW(cmd_merge(partial), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "partial.jsonl"));
}

}  // namespace
}  // namespace driftgate

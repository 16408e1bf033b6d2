// `driftgate baseline` through its command function: options, refusals, output.
#include <gtest/gtest.h>

#include <filesystem>
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

const std::string k_sha = "0123456789abcdef0123456789abcdef01234567";

struct Invocation {
  int code = -1;
  std::string out;
  std::string err;
};

Invocation baseline(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  CommandContext context{args, {}, out, err};
  Invocation result;
  result.code = cmd_baseline(context);
  result.out = out.str();
  result.err = err.str();
  return result;
}

std::string write_run_file(const TempDir& dir, const RunFile& run, const std::string& name = "run.jsonl") {
  std::ostringstream content;
  write_run(content, run);
  write_file_atomic(dir / name, content.str());
  return dir / name;
}

std::string error_of(const std::vector<std::string>& args) {
  try {
    baseline(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

RunFile two_checks(const std::string& sha) {
  return make_run(sha, make_environment(),
                  {make_check("b", CheckStatus::k_pass, 1e-7), make_check("a", CheckStatus::k_fail_numeric, 0.5)});
}

TEST(CmdBaseline, UpdateStoresTheRunAndSaysWhere) {
  TempDir dir;
  std::string run = write_run_file(dir, two_checks(k_sha));
  Invocation result = baseline({"update", run, "--store", dir / "baselines"});
  EXPECT_EQ(result.code, 0);
  std::string key = make_environment().key();
  EXPECT_EQ(result.out, "stored baseline " + key + "/" + k_sha + ".jsonl (2 checks)\n");
  EXPECT_TRUE(DirectoryStore(dir / "baselines").contains(key, k_sha));
}

TEST(CmdBaseline, RefusesARunWithoutACommit) {
  TempDir dir;
  std::string run = write_run_file(dir, two_checks("unknown"));
  EXPECT_EQ(error_of({"update", run, "--store", dir / "baselines"}),
            run +
                ": the run has no commit SHA ('unknown'): it was made outside a git checkout; run driftgate run "
                "inside the repository so the baseline can be keyed by its commit");
  EXPECT_FALSE(std::filesystem::exists(dir / "baselines"));
}

TEST(CmdBaseline, RefusesADirtyRunUnlessAllowed) {
  TempDir dir;
  RunFile dirty = two_checks(k_sha);
  dirty.header.commit.dirty = true;
  std::string run = write_run_file(dir, dirty);
  EXPECT_EQ(error_of({"update", run, "--store", dir / "baselines"}),
            run +
                ": the run was made with uncommitted changes to tracked files on top of 0123456, so it does not "
                "stand for that commit; commit the changes and run again, or pass --allow-dirty to store it anyway");
  EXPECT_FALSE(std::filesystem::exists(dir / "baselines"));
  EXPECT_EQ(baseline({"update", run, "--store", dir / "baselines", "--allow-dirty"}).code, 0);
}

TEST(CmdBaseline, MissingOrUnknownActionsListTheActions) {
  const std::string actions =
      "actions: update (store a run as the baseline of its commit and environment), accept (take a run's values for "
      "selected checks), show, list, prune; see driftgate baseline --help";
  EXPECT_EQ(error_of({}), "driftgate baseline: missing action; " + actions);
  EXPECT_EQ(error_of({"updte", "run.jsonl"}),
            "driftgate baseline: unknown action 'updte'; did you mean 'update'?; " + actions);
  EXPECT_EQ(error_of({"update"}),
            "driftgate baseline update: missing RUN.jsonl; usage: driftgate baseline update RUN.jsonl [--store DIR] "
            "[--allow-dirty]");
}

TEST(CmdBaseline, AMissingRunFileIsAnErrorNamingIt) {
  TempDir dir;
  EXPECT_NE(error_of({"update", dir / "none.jsonl"}).find(dir / "none.jsonl"), std::string::npos);
}

TEST(CmdBaseline, HelpHasUsageAndAnExample) {
  Invocation result = baseline({"--help"});
  EXPECT_EQ(result.code, 0);
  EXPECT_NE(result.out.find("Usage: driftgate baseline update RUN.jsonl"), std::string::npos);
  EXPECT_NE(result.out.find("Example:\n  driftgate baseline accept 'resnet18/*/cpu_fp32~cpu_bf16/*'"),
            std::string::npos);
  EXPECT_NE(result.out.find("Exit codes:"), std::string::npos);
}

}  // namespace
}  // namespace driftgate

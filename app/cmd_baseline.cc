// driftgate baseline: maintains the baseline store. `update` stores a run as the
// baseline of its (environment key, commit), the step a main-branch CI job runs.
#include <optional>
#include <ostream>
#include <string>

#include "app/cli_util.h"
#include "app/command.h"
#include "core/error.h"
#include "core/record.h"
#include "core/suggest.h"
#include "differ/baseline_store.h"

namespace driftgate {

namespace {

constexpr const char* k_actions_help = "actions: update (store a run as the baseline of its commit and environment)";

// What `driftgate baseline` was asked to do.
struct BaselineRequest {
  std::string action;               // "update"
  std::string run_path;             // the run file to store
  std::string store = "baselines";  // the baseline store directory (created when missing)
  bool allow_dirty = false;         // store a run made with uncommitted changes
};

const CommandHelp k_help{
    "driftgate baseline update RUN.jsonl [--store DIR] [--allow-dirty]",
    "Stores a run as the baseline of its commit and environment: DIR/<env-key>/<sha>.jsonl, records\n"
    "sorted by check id, written atomically (safe with concurrent CI jobs). Refuses a run made outside a\n"
    "git checkout, and one made with uncommitted changes unless --allow-dirty.\n"
    "Actions: update.",
    "driftgate baseline update run.jsonl --store baselines   # on main, after driftgate run"};

std::optional<BaselineRequest> parse_request(CommandContext& context) {
  BaselineRequest request;
  po::options_description options;
  options.add_options()("action", po::value<std::string>(&request.action), "what to do: update (positional)")(
      "run", po::value<std::string>(&request.run_path), "the run file (positional)")(
      "store", po::value<std::string>(&request.store)->default_value("baselines"), "baseline store directory")(
      "allow-dirty", po::bool_switch(&request.allow_dirty),
      "store a run made with uncommitted changes to tracked files");
  po::positional_options_description positional;
  positional.add("action", 1).add("run", 1);
  po::variables_map variables;
  if (!parse_command_line("baseline", context.args, options, positional, k_help, variables, context.out)) {
    return std::nullopt;
  }
  if (request.action.empty()) {
    throw Error(std::string("driftgate baseline: missing action; ") + k_actions_help +
                "; see driftgate baseline --help");
  }
  if (request.action != "update") {
    throw Error("driftgate baseline: unknown action '" + request.action + "'" +
                did_you_mean(request.action, {"update"}) + "; " + k_actions_help + "; see driftgate baseline --help");
  }
  if (request.run_path.empty()) {
    throw Error("driftgate baseline update: missing RUN.jsonl; usage: " + k_help.usage);
  }
  return request;
}

// Refuses runs that cannot stand for their commit.
void require_storable(const RunFile& run, const BaselineRequest& request) {
  const CommitInfo& commit = run.header.commit;
  if (commit.sha == "unknown" || !is_commit_sha(commit.sha)) {
    throw Error(request.run_path + ": the run has no commit SHA ('" + commit.sha +
                "'): it was made outside a git checkout; run driftgate run inside the repository so the baseline "
                "can be keyed by its commit");
  }
  if (commit.dirty && !request.allow_dirty) {
    throw Error(request.run_path + ": the run was made with uncommitted changes to tracked files on top of " +
                commit.sha.substr(0, 7) +
                ", so it does not stand for that commit; commit the changes and run again, or pass --allow-dirty "
                "to store it anyway");
  }
}

}  // namespace

int cmd_baseline(CommandContext& context) {
  std::optional<BaselineRequest> request = parse_request(context);
  if (!request) {
    return 0;
  }
  RunFile run = read_run_file(request->run_path);
  require_storable(run, *request);
  DirectoryStore store(request->store);
  std::string stored = store.save(run);
  context.out << "stored baseline " << stored << " (" << run.checks.size() << " checks)\n";
  return 0;
}

}  // namespace driftgate

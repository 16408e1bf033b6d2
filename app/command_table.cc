#include "app/command.h"

namespace driftgate {

const std::vector<Command>& command_table() {
  static const std::vector<Command> table = {
      {"run", "run experiments on their reference and target backends; write run.jsonl", cmd_run},
      {"explain", "say where a check's drift starts: every activation captured, the first divergent layer",
       cmd_explain},
      {"diff", "compare a run with its baseline; print the summary; exit 1 on regression", cmd_diff},
      {"baseline", "update, accept, show, list or prune the stored baselines", cmd_baseline},
      {"post", "post a report on the PR/MR: sticky comment, commit status (github|gitlab)", cmd_post},
      {"sweep", "pass rates per target backend at several tolerances, from one run file", cmd_sweep},
      {"merge", "join the shard files of run --shard i/N into one run file; exit 2 on a missing shard", cmd_merge},
      {"env", "print the tool version, the environment and its key", cmd_env},
      {"trend", "draw the per-commit history of a branch's baselines as HTML (and markdown)", cmd_trend},
  };
  return table;
}

}  // namespace driftgate

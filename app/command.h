// The subcommand table of the driftgate binary.
//
// Each subcommand lives in its own app/cmd_*.cc: it parses its options with
// Boost.Program_options, calls the libraries, writes results to `out` and
// diagnostics to `err`, and returns an exit code (core/exit_code.h). A
// driftgate::Error escaping a command is turned into exit code 2 by main().
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace driftgate {

// What a command may read from the process, handed in so commands stay testable.
struct CommandContext {
  std::vector<std::string> args;           // arguments after the subcommand name
  std::map<std::string, std::string> env;  // the process environment
  std::ostream& out;                       // results
  std::ostream& err;                       // diagnostics
  // main() ends the process with _Exit as soon as the command returns (builds without
  // sanitizers): a command may leave what it holds to the exit instead of freeing it.
  bool process_exits_after = false;
};

struct Command {
  const char* name;
  const char* summary;  // one line for `driftgate --help`
  int (*run)(CommandContext& context);
};

// All subcommands, in the order `driftgate --help` lists them.
const std::vector<Command>& command_table();

int cmd_run(CommandContext& context);
int cmd_explain(CommandContext& context);
int cmd_diff(CommandContext& context);
int cmd_baseline(CommandContext& context);
int cmd_env(CommandContext& context);
int cmd_merge(CommandContext& context);
int cmd_post(CommandContext& context);
int cmd_sweep(CommandContext& context);
int cmd_trend(CommandContext& context);

}  // namespace driftgate

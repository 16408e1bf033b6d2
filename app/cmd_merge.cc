// driftgate merge: joins the partial run files of `run --shard i/N` into one run
// file, refusing a missing, duplicated or foreign shard (exit 2, nothing written).
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli_util.h"
#include "app/command.h"
#include "core/error.h"
#include "core/file_util.h"
#include "core/record.h"
#include "differ/run_merge.h"

namespace driftgate {

namespace {

// What `driftgate merge` was asked to do.
struct MergeRequest {
  std::vector<std::string> shard_paths;  // the partial run files, any order
  std::string output_path;               // the merged run file
};

const CommandHelp k_help{
    "driftgate merge SHARD.jsonl... -o RUN.jsonl",
    "Joins the files written by driftgate run --shard i/N (one per CI matrix job) into one run file with the\n"
    "summary recomputed. Every shard 0..N-1 must be given exactly once, all of the same commit, environment key\n"
    "and experiments; otherwise nothing is written and the exit code is 2, so a partial run never passes the gate.",
    "driftgate merge shards/run-*.jsonl -o run.jsonl && driftgate diff run.jsonl"};

std::optional<MergeRequest> parse_request(CommandContext& context) {
  MergeRequest request;
  po::options_description options;
  options.add_options()("shard", po::value<std::vector<std::string>>(&request.shard_paths),
                        "partial run files (positional)")(
      "output,o", po::value<std::string>(&request.output_path)->required(), "the merged run file to write");
  po::positional_options_description positional;
  positional.add("shard", -1);
  po::variables_map variables;
  if (!parse_command_line("merge", context.args, options, positional, k_help, variables, context.out)) {
    return std::nullopt;
  }
  if (request.shard_paths.empty()) {
    throw Error("driftgate merge: no shard files given; usage: " + k_help.usage);
  }
  return request;
}

}  // namespace

int cmd_merge(CommandContext& context) {
  std::optional<MergeRequest> request = parse_request(context);
  if (!request) {
    return 0;
  }
  std::vector<NamedRun> shards;
  for (const auto& path : request->shard_paths) {
    shards.push_back({path, read_run_file(path)});
  }
  RunFile merged = merge_shards(shards);
  std::ostringstream content;
  write_run(content, merged);
  write_file_atomic(request->output_path, content.str());
  context.out << "merged " << shards.size() << " shards into " << request->output_path << " (" << merged.checks.size()
              << " checks, " << merged.summary.expected_checks << " expected)\n";
  return 0;
}

}  // namespace driftgate

// driftgate diff: compares a run with the baseline chosen by git ancestry and
// environment, prints the markdown summary and exits 1 when the gate fails.
#include <optional>
#include <ostream>
#include <string>

#include "app/cli_util.h"
#include "app/command.h"
#include "ci/ci_context.h"
#include "core/error.h"
#include "core/file_util.h"
#include "core/git_repo.h"
#include "core/record.h"
#include "differ/baseline_select.h"
#include "differ/baseline_store.h"
#include "differ/diff.h"
#include "differ/json_report.h"
#include "differ/markdown_report.h"
#include "differ/report.h"

namespace driftgate {

namespace {

// Everything `driftgate diff` was asked to do.
struct DiffRequest {
  std::string run_path;               // the run file to judge
  std::string store = "baselines";    // the baseline store directory
  std::string repo = ".";             // a directory inside the git checkout
  std::optional<std::string> base;    // the target branch; default: the CI's PR/MR base SHA
  int max_walk = k_default_max_walk;  // first-parent commits searched for a baseline
  double drift_factor = 10.0;         // growth of max_abs that counts as drift
  bool allow_env_mismatch = false;    // compare with another environment's baseline when none matches
  std::string report_path;            // report.json to write ("" = none)
  std::string markdown_path;          // summary.md to write ("" = none)
  bool quiet = false;                 // stdout: only the verdict line; stderr: nothing
};

const CommandHelp k_help{
    "driftgate diff RUN.jsonl [--store DIR] [--repo DIR] [--base REV] [options]",
    "Compares a run with its baseline and gates on the result. The baseline is the nearest first-parent\n"
    "ancestor of the merge base of the run's commit and --base (the target branch; in GitHub Actions and\n"
    "GitLab merge request pipelines the CI's base SHA is used when --base is not given) that has a baseline\n"
    "for the run's environment key. Without a comparable baseline the result is neutral (exit 0) and says why.\n"
    "Gated classes (exit 1): regressed, crashed, missing. Also reported: drift grew, new, fixed, unchanged.",
    "driftgate diff run.jsonl --base origin/main --report report.json --markdown summary.md"};

std::optional<DiffRequest> parse_request(CommandContext& context) {
  DiffRequest request;
  std::string base;
  po::options_description options;
  options.add_options()("run", po::value<std::string>(&request.run_path)->required(),
                        "the run file to compare (positional)")(
      "store", po::value<std::string>(&request.store)->default_value("baselines"), "baseline store directory")(
      "repo", po::value<std::string>(&request.repo)->default_value("."), "a directory inside the git checkout")(
      "base", po::value<std::string>(&base), "target branch revision or SHA (default: the CI's PR/MR base SHA)")(
      "max-walk", po::value<int>(&request.max_walk)->default_value(k_default_max_walk),
      "first-parent commits searched for a baseline, start included")(
      "drift-factor", po::value<double>(&request.drift_factor)->default_value(10.0),
      "a passing check's max_abs must grow by more than this factor to count as drift grew")(
      "allow-env-mismatch", po::bool_switch(&request.allow_env_mismatch),
      "when no baseline of this environment exists, compare with the nearest of another (marked in every output)")(
      "report", po::value<std::string>(&request.report_path), "write report.json (machine-readable) to FILE")(
      "markdown", po::value<std::string>(&request.markdown_path), "also write the markdown summary to FILE")(
      "quiet,q", po::bool_switch(&request.quiet), "print only the verdict line; no diagnostics");
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map variables;
  if (!parse_command_line("diff", context.args, options, positional, k_help, variables, context.out)) {
    return std::nullopt;
  }
  if (variables.count("base") != 0) {
    request.base = base;
  }
  if (request.max_walk < 1) {
    throw Error("driftgate diff: --max-walk " + std::to_string(request.max_walk) +
                ": must be at least 1 (first-parent commits searched for a baseline)");
  }
  if (!(request.drift_factor >= 1.0)) {
    throw Error("driftgate diff: --drift-factor " + std::to_string(request.drift_factor) +
                ": must be at least 1 (how many times max_abs must grow to count as drift)");
  }
  return request;
}

GitRepo open_repo(const std::string& dir) {
  std::optional<GitRepo> repo = GitRepo::open(dir);
  if (!repo) {
    throw Error("--repo " + dir +
                ": not inside a git repository; baselines are chosen by git ancestry, so run driftgate diff in the "
                "checkout or pass --repo DIR");
  }
  return std::move(*repo);
}

}  // namespace

int cmd_diff(CommandContext& context) {
  std::optional<DiffRequest> request = parse_request(context);
  if (!request) {
    return 0;
  }
  RunFile run = read_run_file(request->run_path);
  DirectoryStore store(request->store);
  if (!store.exists()) {
    throw Error("--store " + request->store +
                ": no such baseline store directory; pass the directory that holds <env-key>/<sha>.jsonl files, or "
                "create one with driftgate baseline update RUN.jsonl --store " +
                request->store);
  }
  GitRepo repo = open_repo(request->repo);
  std::optional<std::string> base = request->base ? request->base : read_ci_context(context.env).base_sha;
  SelectionRequest selection_request{run.header.commit.sha, base, run.header.environment, request->max_walk,
                                     request->allow_env_mismatch};
  BaselineSelection selection = select_baseline(repo, store, selection_request);
  std::optional<DiffResult> diff;
  if (selection.found) {
    DiffOptions diff_options;
    diff_options.drift_factor = request->drift_factor;
    diff = diff_runs(run, *selection.baseline, diff_options);
  }
  Report report = make_report(run, selection, diff, GatePolicy{});
  std::string markdown = render_markdown(report);
  if (!request->report_path.empty()) {
    write_file_atomic(request->report_path, render_json(report));
  }
  if (!request->markdown_path.empty()) {
    write_file_atomic(request->markdown_path, markdown);
  }
  if (request->quiet) {
    context.out << render_verdict_line(report) << "\n";
    return to_int(report_exit_code(report));
  }
  context.out << markdown;
  if (selection.found) {
    context.err << "driftgate diff: compared " << request->run_path << " with "
                << store.path_of(selection.env_key, selection.sha) << "\n";
  }
  return to_int(report_exit_code(report));
}

}  // namespace driftgate

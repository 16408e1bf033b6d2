// driftgate trend: the per-commit history of a branch's baselines as one
// self-contained HTML page (and optionally markdown for a PR comment). A report,
// not a gate: it exits 0 whatever it finds, 2 on bad input with nothing written.
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "app/cli_util.h"
#include "app/command.h"
#include "core/error.h"
#include "core/file_util.h"
#include "core/git_repo.h"
#include "differ/baseline_store.h"
#include "differ/store_spec.h"
#include "differ/trend.h"
#include "differ/trend_html.h"
#include "differ/trend_markdown.h"

namespace driftgate {

namespace {

// Everything `driftgate trend` was asked to do.
struct TrendRequest {
  std::string store = "baselines";  // the baseline store: a directory, or notes:[REF]
  std::string store_kind = "dir";   // dir or notes
  std::string branch = "HEAD";      // the revision whose first-parent history is drawn
  std::string repo = ".";           // a directory inside the git checkout
  std::optional<std::string> env;   // only this environment key
  int max_commits = 200;            // first-parent commits walked, newest first
  double min_effect = 0.5;          // smallest step change reported, in decades of max_abs
  std::string output_path;          // trend.html
  std::string markdown_path;        // trend.md ("" = none)
  bool quiet = false;
};

const CommandHelp k_help{
    "driftgate trend [--store DIR|notes:] --branch REV -o trend.html [--markdown trend.md] [options]",
    "Draws the history of the baselines along the first-parent history of --branch: pass rate per target\n"
    "backend, max error per check (log scale) and beside it the relative error max_abs / max|reference|\n"
    "(unmoved by rescaled outputs), environment changes on the time axis, step changes (optimal\n"
    "segmentation on log10(max_abs) within an environment, and medians across each environment change; at\n"
    "least --min-effect decades) with their commit range, one line per cause, the tolerance sweep of the\n"
    "newest baseline's numeric checks (from recorded min_atol; task checks get their own pass rate),\n"
    "per-layer errors where records carry tier-2 profiles, and every commit's SHA, subject, author and date.\n"
    "The HTML is one file with inline SVG and CSS that opens offline. --markdown adds a table and a mermaid\n"
    "chart for a PR comment. Commits that only add baselines (no baseline of their own, every changed file\n"
    "under the --store directory) are left out of the history. --store notes: reads the git notes store.\n"
    "Always exits 0 when the report was written.",
    "driftgate trend --store baselines --branch main -o trend.html --markdown trend.md"};

std::optional<TrendRequest> parse_request(CommandContext& context) {
  TrendRequest request;
  std::string env;
  po::options_description options;
  options.add_options()("store", po::value<std::string>(&request.store)->default_value("baselines"),
                        "baseline store: a directory (<env-key>/<sha>.jsonl), or notes: / notes:REF for git notes")(
      "store-kind", po::value<std::string>(&request.store_kind)->default_value("dir"),
      "dir or notes (the same as --store notes:)")("branch",
                                                   po::value<std::string>(&request.branch)->default_value("HEAD"),
                                                   "branch or revision whose first-parent history is drawn")(
      "repo", po::value<std::string>(&request.repo)->default_value("."), "a directory inside the git checkout")(
      "env", po::value<std::string>(&env), "only this environment key (16 hex digits; default: every key)")(
      "max-commits", po::value<int>(&request.max_commits)->default_value(200),
      "first-parent commits walked, newest first")(
      "min-effect", po::value<double>(&request.min_effect)->default_value(0.5),
      "smallest step change listed, in decades of max_abs (0.5 = a factor of about 3.2)")(
      "output,o", po::value<std::string>(&request.output_path)->required(), "write the HTML report to FILE")(
      "markdown", po::value<std::string>(&request.markdown_path), "also write the markdown trend to FILE")(
      "quiet,q", po::bool_switch(&request.quiet), "no diagnostics on stderr");
  po::positional_options_description positional;
  po::variables_map variables;
  if (!parse_command_line("trend", context.args, options, positional, k_help, variables, context.out)) {
    return std::nullopt;
  }
  if (variables.count("env") != 0) {
    if (!is_env_key(env)) {
      throw Error("driftgate trend: --env '" + env +
                  "': not an environment key (16 lowercase hex digits); list them with ls " + request.store);
    }
    request.env = env;
  }
  if (request.max_commits < 1) {
    throw Error("driftgate trend: --max-commits " + std::to_string(request.max_commits) +
                ": must be at least 1 (first-parent commits walked)");
  }
  if (!(request.min_effect > 0.0)) {
    throw Error("driftgate trend: --min-effect " + std::to_string(request.min_effect) +
                ": must be positive (decades of max_abs, e.g. 0.5)");
  }
  return request;
}

GitRepo open_repo(const std::string& dir) {
  std::optional<GitRepo> repo = GitRepo::open(dir);
  if (!repo) {
    throw Error("--repo " + dir +
                ": not inside a git repository; the trend follows git history, so run driftgate trend in the "
                "checkout or pass --repo DIR");
  }
  return std::move(*repo);
}

}  // namespace

int cmd_trend(CommandContext& context) {
  std::optional<TrendRequest> request = parse_request(context);
  if (!request) {
    return 0;
  }
  StoreSpec spec = parse_store_spec(request->store, request->store_kind);
  GitRepo repo = open_repo(request->repo);
  std::unique_ptr<BaselineStore> store_owner = open_store(spec, request->repo, true);
  const BaselineStore& store = *store_owner;
  std::string head = repo.resolve(request->branch);
  // Commits that only add baselines (the commit-per-baseline flow) carry no data of their own:
  // left out, so the axis and the table hold the commits that were measured.
  std::optional<std::string> store_path = store_path_in_repo(spec, repo);
  std::vector<CommitDetails> commits;
  size_t baseline_only = 0;
  for (const auto& sha : repo.first_parent_walk(head, request->max_commits)) {
    if (is_baseline_only_commit(repo, store, store_path, sha)) {
      ++baseline_only;
      continue;
    }
    commits.push_back(repo.commit_details(sha));
  }
  TrendOptions options;
  options.env_key = request->env;
  options.change_points.min_effect = request->min_effect;
  TrendData trend = build_trend(request->branch, std::move(commits), store, options);
  if (trend.baselines == 0) {
    throw Error("--store " + request->store + ": no baseline for any of the " + std::to_string(trend.commits.size()) +
                " first-parent commits of '" + request->branch +
                "'; check --branch and --store, or raise --max-commits");
  }
  std::string html = render_trend_html(trend, TrendHtmlOptions{});
  std::string markdown = request->markdown_path.empty() ? "" : render_trend_markdown(trend, TrendMarkdownOptions{});
  write_file_atomic(request->output_path, html);
  if (!request->markdown_path.empty()) {
    write_file_atomic(request->markdown_path, markdown);
  }
  if (!request->quiet) {
    context.err << "driftgate trend: " << trend.commits.size() << " commits, " << trend.baselines << " baselines in "
                << trend.envs.size() << " environment(s), " << trend.markers.size() << " environment change(s), "
                << trend.steps.size() << " step change(s)"
                << (baseline_only == 0
                        ? ""
                        : "; left out " + std::to_string(baseline_only) + " commit(s) that only add baselines")
                << "; wrote " << request->output_path
                << (request->markdown_path.empty() ? "" : " and " + request->markdown_path) << "\n";
  }
  return 0;
}

}  // namespace driftgate

// driftgate diff: compares a run with the baseline chosen by git ancestry and
// environment, judges it with the gate policy, prints the summary (text on a
// terminal, markdown otherwise), writes report.json / summary.md / JUnit XML on
// request, and exits 1 when the gate fails.
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <exception>
#include <filesystem>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "app/cli_util.h"
#include "app/command.h"
#include "ci/ci_context.h"
#include "core/error.h"
#include "core/file_util.h"
#include "core/git_repo.h"
#include "core/record.h"
#include "core/safe_text.h"
#include "core/suggest.h"
#include "differ/baseline_accept.h"
#include "differ/baseline_proposal.h"
#include "differ/baseline_select.h"
#include "differ/baseline_store.h"
#include "differ/diff.h"
#include "differ/gate_policy.h"
#include "differ/json_report.h"
#include "differ/junit_report.h"
#include "differ/markdown_report.h"
#include "differ/report.h"
#include "differ/run_digest.h"
#include "differ/store_spec.h"
#include "differ/text_report.h"

namespace driftgate {

namespace {

// A --note is one line of the summary, not a document.
constexpr size_t k_max_note_bytes = 1000;

// Everything `driftgate diff` was asked to do.
struct DiffRequest {
  std::string run_path;                    // the run file to judge
  std::string store = "baselines";         // the baseline store: a directory, or notes:[REF] for git notes
  std::string store_kind = "dir";          // dir or notes
  std::string repo = ".";                  // a directory inside the git checkout
  std::optional<std::string> base;         // the target branch; default: the CI's PR/MR base SHA
  int max_walk = k_default_max_walk;       // first-parent commits searched for a baseline
  double drift_factor = 10.0;              // growth of max_abs that counts as drift
  bool allow_env_mismatch = false;         // compare with another environment's baseline when none matches
  std::optional<std::string> against_env;  // compare with this environment's baseline (an upgrade gate)
  std::string report_path;                 // report.json to write ("" = none)
  std::string markdown_path;               // summary.md to write ("" = none)
  std::string junit_path;                  // JUnit XML to write ("" = none)
  std::string propose_path;                // the proposal on failure ("" = next to --report, or none)
  std::string policy_path;                 // gate policy YAML ("" = the default policy)
  std::string today;                       // YYYY-MM-DD for allowlist expiry ("" = today, UTC)
  std::string format = "auto";             // stdout: auto (text on a terminal, else markdown), text, markdown
  std::string color = "auto";              // auto (on a terminal), always, never
  size_t markdown_budget = k_default_markdown_budget;  // bytes of the markdown summary
  bool quiet = false;                                  // stdout: only the verdict line; stderr: nothing
  std::vector<std::string> notes;  // --note: lines added to the report's notes (where the baseline came from)
  // driftgate-run-base: the baseline compared is this run, stored in a temporary --store;
  // the refresh commands store it in refresh_store first ("" = a stored baseline as usual).
  std::string refresh_base_run;
  std::optional<std::string> refresh_store;  // the store the refresh commands name (default: --store)
};

const CommandHelp k_help{
    "driftgate diff RUN.jsonl [--store DIR] [--repo DIR] [--base REV] [options]",
    "Compares a run with its baseline and gates on the result. The baseline is the nearest first-parent\n"
    "ancestor of the merge base of the run's commit and --base (the target branch; in GitHub Actions and\n"
    "GitLab merge request pipelines the CI's base SHA is used when --base is not given) that has a baseline\n"
    "for the run's environment key. Without a comparable baseline the result is neutral (exit 0) and says why.\n"
    "--against-env KEY compares with another environment's baseline instead (the upgrade gate: a run under the\n"
    "new LibTorch against the old one's baselines), reporting per check what the upgrade changes.\n"
    "Gated classes by default (exit 1): regressed, crashed, missing, failure grew (a check that failed\n"
    "before fails with max_abs grown by more than --drift-factor) and new failure (a check the baseline\n"
    "lacks that fails); --policy FILE changes them, per experiment too, and allowlists known failures until\n"
    "an expiry date. Also reported: drift grew, task changed, new, fixed, unchanged. The summary on stdout is text on "
    "a terminal and markdown otherwise (--format).",
    "driftgate diff run.jsonl --base origin/main --policy gate.yaml --report report.json --junit junit.xml"};

// Today's date in UTC, for allowlist expiry.
std::string utc_today() {
  std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char buffer[16];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", &parts);
  return buffer;
}

void require_choice(const std::string& option, const std::string& value, const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) {
    return;
  }
  std::string known;
  for (const auto& choice : choices) {
    known += (known.empty() ? "" : ", ") + choice;
  }
  throw Error("driftgate diff: " + option + " '" + value + "'" + did_you_mean(value, choices) + ": one of " + known);
}

std::optional<DiffRequest> parse_request(CommandContext& context) {
  DiffRequest request;
  std::string base;
  po::options_description options;
  options.add_options()("run", po::value<std::string>(&request.run_path)->required(),
                        "the run file to compare (positional)")(
      "store", po::value<std::string>(&request.store)->default_value("baselines"),
      "baseline store: a directory, or notes: for git notes (refs/notes/driftgate; notes:REF for another)")(
      "store-kind", po::value<std::string>(&request.store_kind)->default_value("dir"),
      "dir or notes (same as --store notes:)")("repo", po::value<std::string>(&request.repo)->default_value("."),
                                               "a directory inside the git checkout")(
      "base", po::value<std::string>(&base), "target branch revision or SHA (default: the CI's PR/MR base SHA)")(
      "max-walk", po::value<int>(&request.max_walk)->default_value(k_default_max_walk),
      "first-parent commits searched for a baseline, start included")(
      "drift-factor", po::value<double>(&request.drift_factor)->default_value(10.0),
      "max_abs must grow by more than this factor to count as drift grew (a passing check) or failure grew "
      "(a failing one)")(
      "allow-env-mismatch", po::bool_switch(&request.allow_env_mismatch),
      "when no baseline of this environment exists, compare with the nearest of another (marked in every output)")(
      "against-env", po::value<std::string>(),
      "compare with the nearest baseline of environment KEY (16 hex digits, as driftgate env prints): what "
      "upgrading LibTorch, oneDNN or the compiler changes, per check (marked in every output)")(
      "report", po::value<std::string>(&request.report_path), "write report.json (machine-readable) to FILE")(
      "markdown", po::value<std::string>(&request.markdown_path), "also write the markdown summary to FILE")(
      "junit", po::value<std::string>(&request.junit_path), "write JUnit XML to FILE (one testcase per check)")(
      "propose", po::value<std::string>(&request.propose_path),
      "when the gate fails, write what accepting the gated checks would change in the baseline to FILE, which "
      "baseline accept --proposal applies (default: baseline-proposal.jsonl next to --report)")(
      "policy", po::value<std::string>(&request.policy_path),
      "gate policy YAML: gated classes, per-experiment overrides, allowlist (default: regressed, crashed, missing, "
      "failure_grew, new_failure)")("today", po::value<std::string>(&request.today),
                                    "judge allowlist expiry as of DATE, YYYY-MM-DD (default: today, UTC)")(
      "format", po::value<std::string>(&request.format)->default_value("auto"),
      "stdout summary: auto (text on a terminal, markdown otherwise), text, markdown")(
      "color", po::value<std::string>(&request.color)->default_value("auto"),
      "colour in the text summary: auto (on a terminal), always, never")(
      "markdown-budget", po::value<size_t>(&request.markdown_budget)->default_value(k_default_markdown_budget),
      "maximum bytes of the markdown summary; checks beyond it are counted, not listed")(
      "quiet,q", po::bool_switch(&request.quiet), "print only the verdict line; no diagnostics")(
      "note", po::value<std::vector<std::string>>(&request.notes),
      "add TEXT to the report's notes, shown in every output (repeatable; e.g. driftgate-run-base's \"baseline built "
      "on the spot from merge base SHA\")")(
      "refresh-base-run", po::value<std::string>(&request.refresh_base_run),
      "the baseline in --store is FILE, a run stored there only for this diff (driftgate-run-base): the accept "
      "commands a failing diff suggests store FILE first, with baseline update into --refresh-store")(
      "refresh-store", po::value<std::string>(),
      "the store the suggested accept commands name (default: --store; with --refresh-base-run: baselines)");
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map variables;
  if (!parse_command_line("diff", context.args, options, positional, k_help, variables, context.out)) {
    return std::nullopt;
  }
  if (variables.count("base") != 0) {
    request.base = base;
  }
  if (variables.count("against-env") != 0) {
    request.against_env = variables["against-env"].as<std::string>();
  }
  if (variables.count("refresh-store") != 0) {
    request.refresh_store = variables["refresh-store"].as<std::string>();
    if (request.refresh_base_run.empty()) {
      throw Error(
          "driftgate diff: --refresh-store needs --refresh-base-run FILE (the run the compared baseline was "
          "made from, which the suggested commands store there first)");
    }
  }
  if (!request.refresh_base_run.empty()) {
    require_printable(request.refresh_base_run, "driftgate diff: --refresh-base-run");
  }
  if (request.max_walk < 1) {
    throw Error("driftgate diff: --max-walk " + std::to_string(request.max_walk) +
                ": must be at least 1 (first-parent commits searched for a baseline)");
  }
  require_choice("--format", request.format, {"auto", "text", "markdown"});
  require_choice("--color", request.color, {"auto", "always", "never"});
  if (request.markdown_budget < k_min_markdown_budget) {
    throw Error("driftgate diff: --markdown-budget " + std::to_string(request.markdown_budget) + ": must be at least " +
                std::to_string(k_min_markdown_budget) + " bytes (room for the verdict, counts and a notice)");
  }
  if (!request.today.empty() && !is_iso_date(request.today)) {
    throw Error("driftgate diff: --today '" + request.today + "': expected a date YYYY-MM-DD");
  }
  for (const auto& note : request.notes) {
    if (note.empty() || note.size() > k_max_note_bytes) {
      throw Error("driftgate diff: --note: must be 1 to " + std::to_string(k_max_note_bytes) + " bytes, not " +
                  std::to_string(note.size()));
    }
    require_printable(note, "driftgate diff: --note");
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

// Up to this many gated checks are named one by one in the refresh command;
// beyond it, one glob per experiment keeps the command short.
constexpr size_t k_max_named_checks = 20;

// The globs that accept the gated checks of `report`.
std::vector<std::string> refresh_globs(const Report& report) {
  std::vector<std::string> ids;
  std::set<std::string> experiments;
  for (const auto& check : report.diff->checks) {
    if (decide(report.policy, check).gated) {
      ids.push_back(glob_escape(check.id));
      experiments.insert(glob_escape(check.experiment) + "/*");
    }
  }
  if (ids.size() <= k_max_named_checks) {
    return ids;
  }
  return std::vector<std::string>(experiments.begin(), experiments.end());
}

// Fills the report's refresh command and writes the proposal, for a failing diff.
void propose_refresh(Report& report, const DiffRequest& request, const RunDigest& run, const RunDigest& baseline) {
  if (report.verdict != Verdict::k_fail || report.env_mismatch) {
    return;
  }
  std::vector<std::string> globs = refresh_globs(report);
  std::string store_arguments;  // where both commands find the store
  // Under driftgate-run-base the compared store is temporary: the commands name the real
  // one and store the base run there first, so that they work once the gate has ended.
  const bool base_run_first = !request.refresh_base_run.empty();
  const std::string store = base_run_first ? request.refresh_store.value_or("baselines") : request.store;
  if (request.store_kind != "dir" && !base_run_first) {
    store_arguments += " --store-kind " + shell_quote(request.store_kind);
  }
  if (store != "baselines") {
    store_arguments += " --store " + shell_quote(store);
  }
  if (request.repo != ".") {
    store_arguments += " --repo " + shell_quote(request.repo);
  }
  const std::string first =
      base_run_first ? "driftgate baseline update " + shell_quote(request.refresh_base_run) + store_arguments + " && "
                     : "";
  std::string command = first + "driftgate baseline accept";
  for (const auto& glob : globs) {
    command += " " + shell_quote(glob);
  }
  command += " --reason 'WHY THE NEW VALUES ARE RIGHT' --run " + shell_quote(request.run_path) + store_arguments;
  if (request.base) {
    command += " --base " + shell_quote(*request.base);
  }
  report.refresh_command = command;
  std::string path = request.propose_path;
  if (path.empty() && !request.report_path.empty()) {
    path = parent_directory(request.report_path) + "/baseline-proposal.jsonl";
  }
  if (path.empty()) {
    return;
  }
  ProposalCounts counts = write_baseline_proposal(path, run, baseline, globs);
  report.proposed_baseline = path;
  report.proposal_changes = counts.changes;
  report.proposal_drops = counts.drops;
  report.proposal_command = first + "driftgate baseline accept --proposal " + shell_quote(path) +
                            " --reason 'WHY THE NEW VALUES ARE RIGHT'" + store_arguments;
}

// When main() ends the process right after the command (CommandContext), the digests
// are left to the exit: unmapping two gigabyte files and freeing a million-entry
// vector per side took ~0.06 s of a million-check diff.
void leave_to_exit(const CommandContext& context, RunDigest& run, std::optional<RunDigest>& baseline) {
  if (!context.process_exits_after) {
    return;
  }
  new RunDigest(std::move(run));  // NOLINT: released to the process's end on purpose
  if (baseline) {
    new RunDigest(std::move(*baseline));  // NOLINT: as above
  }
}

}  // namespace

int cmd_diff(CommandContext& context) {
  std::optional<DiffRequest> request = parse_request(context);
  if (!request) {
    return 0;
  }
  std::string today = request->today.empty() ? utc_today() : request->today;
  GatePolicy policy;
  policy.today = today;
  if (!request->policy_path.empty()) {
    policy = load_gate_policy(request->policy_path, today);
  }
  // The run's checks are read (differ/run_digest.h: two threads, read_run_file's checks
  // and errors) while the baseline is chosen on this one; then the baseline is read with
  // the run's digest at hand. Errors keep their order: the run's first, then the
  // store's and the selection's.
  RunHeader header = read_run_header(request->run_path);
  std::future<RunDigest> reading =
      std::async(std::launch::async, [path = request->run_path] { return read_run_digest(path); });
  std::unique_ptr<BaselineStore> store_owner;
  std::optional<GitRepo> repo;
  BaselineSelection selection;
  std::exception_ptr selection_error;
  try {
    StoreSpec spec = parse_store_spec(request->store, request->store_kind);
    store_owner = open_store(spec, request->repo, false);
    repo.emplace(open_repo(request->repo));
    auto* directory = dynamic_cast<DirectoryStore*>(store_owner.get());
    std::error_code ignored;
    if (directory != nullptr && std::filesystem::exists(spec.directory, ignored) && !directory->exists()) {
      throw Error("--store " + spec.directory +
                  ": not a directory; pass the directory that holds <env-key>/<sha>.jsonl files, or notes: for "
                  "the git notes store");
    }
    if (directory != nullptr && !directory->exists()) {
      // Before the first baseline: neutral, like any run without a comparable baseline.
      selection.reason = "no comparable baseline: the baseline store " + spec.directory +
                         " does not exist yet (no baseline was ever stored there); store one with driftgate "
                         "baseline update RUN.jsonl --store " +
                         spec.directory + ", or pass the --store that holds <env-key>/<sha>.jsonl files";
    } else {
      std::optional<std::string> base = request->base ? request->base : read_ci_context(context.env).base_sha;
      // Chosen here, read below: the baseline's lines that equal the run's are vouched
      // for by the run's digest (read_check_like) instead of being scanned again.
      SelectionRequest selection_request{header.commit.sha,           base,  header.environment,  request->max_walk,
                                         request->allow_env_mismatch, false, request->against_env};
      selection = select_baseline(*repo, *store_owner, selection_request);
    }
  } catch (...) {
    selection_error = std::current_exception();
  }
  RunDigest run = reading.get();
  if (selection_error) {
    std::rethrow_exception(selection_error);
  }
  if (run.header.commit.sha != header.commit.sha || run.header.environment.key() != header.environment.key()) {
    throw Error(request->run_path + ": the run file changed while it was read; run the diff again");
  }
  // The latency table's rows (one per experiment and backend, per input where there are
  // few: differ/latency.h) are read from the run on another thread while this one reads
  // the baseline, and from the baseline on another while this one compares the checks.
  std::future<std::vector<LatencyRow>> run_latency =
      std::async(std::launch::async, [&run] { return latency_rows(run, k_latency_inputs_shown); });
  const BaselineStore& store = *store_owner;
  std::optional<RunDigest> baseline;
  std::optional<DiffResult> diff;
  if (selection.found) {
    baseline = store.load_digest(selection.env_key, selection.sha, &run);
    if (!baseline) {
      throw Error("baseline " + selection.env_key + "/" + selection.sha +
                  " disappeared while being read; run the diff again");
    }
  }
  std::future<std::vector<LatencyRow>> baseline_latency;
  if (baseline) {
    baseline_latency =
        std::async(std::launch::async, [&baseline] { return latency_rows(*baseline, k_latency_inputs_shown); });
  }
  if (selection.found) {
    DiffOptions diff_options;
    diff_options.drift_factor = request->drift_factor;
    diff_options.name_quiet_checks = !request->junit_path.empty();  // only JUnit lists them
    diff = diff_runs(run, *baseline, diff_options);
  }
  Report report = make_report(run.header, selection, std::move(diff), policy);
  report.notes.insert(report.notes.begin(), request->notes.begin(), request->notes.end());
  report.latency = run_latency.get();
  if (selection.found) {
    add_baseline_latency(report.latency, baseline_latency.get());
    propose_refresh(report, *request, run, *baseline);
  }
  std::string markdown = render_markdown(report, request->markdown_budget);
  if (!request->report_path.empty()) {
    write_file_atomic(request->report_path, render_json(report));
  }
  if (!request->markdown_path.empty()) {
    write_file_atomic(request->markdown_path, markdown);
  }
  if (!request->junit_path.empty()) {
    write_file_atomic(request->junit_path, render_junit(report));
  }
  leave_to_exit(context, run, baseline);
  // Only the real stdout can be a terminal; tests hand in string streams.
  bool terminal = &context.out == &std::cout && ::isatty(STDOUT_FILENO) == 1;
  bool text = request->format == "text" || (request->format == "auto" && terminal);
  bool color = request->color == "always" || (request->color == "auto" && terminal);
  if (request->quiet) {
    context.out << (text ? render_text_verdict_line(report, TextOptions{color}) : render_verdict_line(report)) << "\n";
    return to_int(report_exit_code(report));
  }
  if (text) {
    context.out << render_text(report, TextOptions{color});
  } else {
    context.out << markdown;
  }
  if (selection.found) {
    context.err << "driftgate diff: compared " << request->run_path << " with "
                << store.location(selection.env_key, selection.sha) << "\n";
  }
  return to_int(report_exit_code(report));
}

}  // namespace driftgate

// driftgate baseline: maintains the baseline store.
//   update  stores a run as the baseline of its (environment key, commit): the step a main-branch CI job runs;
//   accept  takes a run's new values for selected checks into the baseline of the run's commit, logging who,
//           when and why beside it: how an intended change stops failing the gate;
//   show, list, prune  look at and trim the store.
#include <algorithm>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>

#include "app/cli_util.h"
#include "app/command.h"
#include "ci/ci_context.h"
#include "core/error.h"
#include "core/git_repo.h"
#include "core/record.h"
#include "core/suggest.h"
#include "differ/baseline_accept.h"
#include "differ/baseline_proposal.h"
#include "differ/baseline_select.h"
#include "differ/baseline_store.h"
#include "differ/store_spec.h"
#include "differ/text_report.h"
#include "differ/trend.h"

namespace driftgate {

namespace {

constexpr const char* k_actions_help =
    "actions: update (store a run as the baseline of its commit and environment), accept (take a run's values for "
    "selected checks), show, list, prune";
const std::vector<std::string> k_actions = {"update", "accept", "show", "list", "prune"};

// What `driftgate baseline` was asked to do.
struct BaselineRequest {
  std::string action;                  // one of k_actions
  std::vector<std::string> operands;   // update: RUN; accept: GLOB...; show: [SHA]
  std::string store = "baselines";     // the baseline store: a directory (created when missing) or notes:[REF]
  std::string store_kind = "dir";      // dir or notes
  std::string repo = ".";              // a directory inside the git checkout
  bool allow_dirty = false;            // store a run made with uncommitted changes
  std::string run_path = "run.jsonl";  // accept: the run whose values are taken
  bool run_given = false;              // accept: --run was given
  std::string proposal_path;           // accept: a failing diff's proposal to apply instead of a run
  std::string reason;                  // accept: why the new values are right
  std::optional<std::string> base;     // accept: the target branch, to find the baseline to start from
  std::string env_key;                 // show: which environment ("" = the only one with that commit)
  int keep = -1;                       // prune: baselines kept per environment key
  bool dry_run = false;                // prune: only say what would go
};

const CommandHelp k_help{
    "driftgate baseline update RUN.jsonl [--store DIR] [--allow-dirty]\n"
    "       driftgate baseline accept CHECK-GLOB... --reason TEXT [--run RUN.jsonl] [--base REV]\n"
    "       driftgate baseline accept --proposal FILE --reason TEXT\n"
    "       driftgate baseline show [SHA] [--env KEY]\n"
    "       driftgate baseline list\n"
    "       driftgate baseline prune --keep N [--dry-run]",
    "update stores a run as the baseline of its commit and environment: DIR/<env-key>/<sha>.jsonl, records\n"
    "sorted by check id, written atomically under a lock (safe with concurrent CI jobs; DIR/.gitignore keeps\n"
    "the lock file out of git add). It refuses a run made outside a git checkout or before the first commit,\n"
    "and one made with uncommitted changes unless --allow-dirty.\n"
    "accept takes the run's values for the checks matching any CHECK-GLOB (fnmatch; '*' also matches '/') into\n"
    "the baseline of the run's commit, starting from that commit's baseline or else the one diff would choose;\n"
    "other checks keep their baseline values, and so do matching checks whose values did not change (only\n"
    "their timings). Who (git config user, else $USER), when (UTC; SOURCE_DATE_EPOCH when set) and why are\n"
    "appended to DIR/<env-key>/<sha>.accepted.jsonl. accept --proposal applies the proposal a failing diff\n"
    "wrote (the changes only; no run file needed) to the baseline it was made from, refusing it when that\n"
    "baseline has changed since.\n"
    "show prints one baseline (default: HEAD's; a HEAD that only adds baselines is stepped over to its first\n"
    "parent) with its acceptance log; list prints every baseline, newest first, with its commit's date and\n"
    "subject. Every action reads --store DIR or the git notes store (--store notes: or --store-kind notes).\n"
    "prune keeps the N newest baselines per environment key, newest by HEAD's first-parent history (baselines\n"
    "of commits not on it are kept and listed), or by file modification time outside a git checkout.",
    "driftgate baseline accept 'resnet18/*/cpu_fp32~cpu_bf16/*' --reason 'bf16 softmax: expected' --run run.jsonl"};

std::optional<BaselineRequest> parse_request(CommandContext& context) {
  BaselineRequest request;
  std::string base;
  po::options_description options;
  options.add_options()("action", po::value<std::string>(&request.action),
                        "update, accept, show, list or prune (positional)")(
      "operand", po::value<std::vector<std::string>>(&request.operands),
      "RUN.jsonl, CHECK-GLOB... or SHA (positional)")(
      "store", po::value<std::string>(&request.store)->default_value("baselines"),
      "baseline store: a directory, or notes: for git notes (refs/notes/driftgate; notes:REF for another)")(
      "store-kind", po::value<std::string>(&request.store_kind)->default_value("dir"),
      "dir or notes (same as --store notes:)")("repo", po::value<std::string>(&request.repo)->default_value("."),
                                               "a directory inside the git checkout")(
      "allow-dirty", po::bool_switch(&request.allow_dirty),
      "update/accept: store a run made with uncommitted changes to tracked files")(
      "run", po::value<std::string>(&request.run_path)->default_value("run.jsonl"),
      "accept: the run whose values are taken")(
      "proposal", po::value<std::string>(&request.proposal_path),
      "accept: apply this proposal of a failing diff (its baseline-proposal.jsonl) instead of globs and a run")(
      "reason", po::value<std::string>(&request.reason), "accept: why the new values are right (required)")(
      "base", po::value<std::string>(&base),
      "accept: target branch, to find the baseline to start from (default: the CI's PR/MR base SHA)")(
      "env", po::value<std::string>(&request.env_key), "show: the environment key (default: the only one)")(
      "keep", po::value<int>(&request.keep), "prune: baselines kept per environment key (at least 1)")(
      "dry-run", po::bool_switch(&request.dry_run), "prune: print what would be removed, remove nothing");
  po::positional_options_description positional;
  positional.add("action", 1).add("operand", -1);
  po::variables_map variables;
  if (!parse_command_line("baseline", context.args, options, positional, k_help, variables, context.out)) {
    return std::nullopt;
  }
  if (variables.count("base") != 0) {
    request.base = base;
  }
  request.run_given = !variables["run"].defaulted();
  if (request.action.empty()) {
    throw Error(std::string("driftgate baseline: missing action; ") + k_actions_help +
                "; see driftgate baseline --help");
  }
  if (std::find(k_actions.begin(), k_actions.end(), request.action) == k_actions.end()) {
    throw Error("driftgate baseline: unknown action '" + request.action + "'" +
                did_you_mean(request.action, k_actions) + "; " + k_actions_help + "; see driftgate baseline --help");
  }
  return request;
}

[[noreturn]] void usage_error(const std::string& action, const std::string& what, const std::string& usage) {
  throw Error("driftgate baseline " + action + ": " + what + "; usage: " + usage);
}

// Refuses runs that cannot stand for their commit.
void require_storable(const CommitInfo& commit, const std::string& run_path, bool allow_dirty,
                      const std::string& repo_dir) {
  if (commit.sha == "unknown" || !is_commit_sha(commit.sha)) {
    std::optional<GitRepo> repo = GitRepo::open(repo_dir);
    if (repo && repo->head_info().sha == "unknown") {
      throw Error(run_path + ": the run has no commit SHA ('" + commit.sha + "'): the repository " + repo->workdir() +
                  " has no commit yet; commit (git add, git commit) and run driftgate run again so the baseline can "
                  "be keyed by its commit");
    }
    throw Error(run_path + ": the run has no commit SHA ('" + commit.sha +
                "'): it was made outside a git checkout; run driftgate run inside the repository so the baseline "
                "can be keyed by its commit");
  }
  if (commit.dirty && !allow_dirty) {
    throw Error(run_path + ": the run was made with uncommitted changes to tracked files on top of " +
                commit.sha.substr(0, 7) +
                ", so it does not stand for that commit; commit the changes and run again, or pass --allow-dirty "
                "to store it anyway");
  }
}

std::unique_ptr<BaselineStore> open_store(const BaselineRequest& request, bool must_exist) {
  return driftgate::open_store(parse_store_spec(request.store, request.store_kind), request.repo, must_exist);
}

// ISO 8601 UTC of SOURCE_DATE_EPOCH when set (reproducible logs), else of now.
std::string timestamp(const std::map<std::string, std::string>& env) {
  std::time_t when = std::time(nullptr);
  auto it = env.find("SOURCE_DATE_EPOCH");
  if (it != env.end()) {
    try {
      when = static_cast<std::time_t>(std::stoll(it->second));
    } catch (const std::exception&) {
      throw Error("SOURCE_DATE_EPOCH '" + it->second + "': expected seconds since 1970-01-01 UTC");
    }
  }
  std::tm parts{};
  gmtime_r(&when, &parts);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buffer;
}

std::string who(const std::optional<GitRepo>& repo, const std::map<std::string, std::string>& env) {
  if (repo) {
    if (std::optional<std::string> identity = repo->user_identity()) {
      return *identity;
    }
  }
  auto user = env.find("USER");
  return user != env.end() && !user->second.empty() ? user->second : "unknown";
}

int update(CommandContext& context, const BaselineRequest& request) {
  if (request.operands.size() != 1) {
    usage_error("update", request.operands.empty() ? "missing RUN.jsonl" : "expected one RUN.jsonl",
                "driftgate baseline update RUN.jsonl [--store DIR] [--allow-dirty]");
  }
  RunFile run = read_run_file(request.operands[0]);
  require_storable(run.header.commit, request.operands[0], request.allow_dirty, request.repo);
  std::string stored = open_store(request, false)->save(run);
  context.out << "stored baseline " << stored << " (" << run.checks.size() << " checks)\n";
  return 0;
}

// The baseline accept starts from: the run's own commit's, else the one diff would choose.
RunFile accept_base(CommandContext& context, const BaselineRequest& request, const BaselineStore& store,
                    const RunFile& run, const std::optional<GitRepo>& repo) {
  std::string env_key = run.header.environment.key();
  if (std::optional<RunFile> own = store.load(env_key, run.header.commit.sha)) {
    return *own;
  }
  if (!repo) {
    throw Error("--repo " + request.repo + ": not inside a git repository and no baseline of " +
                run.header.commit.sha.substr(0, 7) +
                " exists; run in the checkout so the baseline to start from "
                "can be found by ancestry");
  }
  std::optional<std::string> base = request.base ? request.base : read_ci_context(context.env).base_sha;
  BaselineSelection selection =
      select_baseline(*repo, store, SelectionRequest{run.header.commit.sha, base, run.header.environment});
  if (!selection.found) {
    throw Error("no baseline to accept into: " + selection.reason +
                "; store the whole run with driftgate baseline update " + request.run_path);
  }
  return *selection.baseline;
}

// "accepted 2 checks and removed 1 into baseline K/S.jsonl (from baseline 1234567); logged at ...".
void say_accepted(std::ostream& out, const AcceptOutcome& outcome, const std::string& source, const std::string& stored,
                  const std::string& from_sha, const std::string& logged_at) {
  out << "accepted " << outcome.accepted.size() << " checks"
      << (outcome.removed.empty() ? "" : " and removed " + std::to_string(outcome.removed.size())) << source
      << " into baseline " << stored << " (from baseline " << from_sha.substr(0, 7) << ")"
      << (outcome.unchanged == 0 ? ""
                                 : "; " + std::to_string(outcome.unchanged) +
                                       " matching checks already held the run's values and kept their lines")
      << "; logged at " << logged_at << "\n";
}

// accept --proposal: the changes a failing diff proposed, applied to the baseline it chose.
int accept_proposal(CommandContext& context, const BaselineRequest& request) {
  const std::string usage = "driftgate baseline accept --proposal FILE --reason TEXT";
  if (!request.operands.empty() || request.run_given || request.base) {
    usage_error("accept",
                "--proposal takes no CHECK-GLOB, --run or --base (the proposal names its checks and "
                "its baseline)",
                usage);
  }
  if (request.reason.empty()) {
    usage_error("accept", "missing --reason (why the new values are right; it is logged beside the baseline)", usage);
  }
  BaselineProposal proposal = read_baseline_proposal(request.proposal_path);
  require_storable(proposal.header.commit, request.proposal_path, request.allow_dirty, request.repo);
  std::unique_ptr<BaselineStore> store = open_store(request, true);
  std::optional<RunFile> base = store->load(proposal.env_key, proposal.base_sha);
  if (!base) {
    throw Error(request.proposal_path + ": its baseline " + proposal.env_key + "/" + proposal.base_sha +
                " is not in the store " + request.store + " (pruned, or another --store); run driftgate diff again");
  }
  AcceptOutcome outcome = apply_baseline_proposal(proposal, std::move(*base), request.proposal_path);
  std::optional<GitRepo> repo = GitRepo::open(request.repo);
  Acceptance acceptance{who(repo, context.env), timestamp(context.env), request.reason,   proposal.globs,
                        proposal.run_sha,       proposal.base_sha,      outcome.accepted, outcome.removed};
  std::string stored = store->save_accepted(outcome.baseline, acceptance.to_json_line());
  say_accepted(context.out, outcome, " from proposal " + request.proposal_path, stored, proposal.base_sha,
               store->acceptance_log(proposal.env_key, proposal.run_sha).back().first);
  return 0;
}

int accept(CommandContext& context, const BaselineRequest& request) {
  if (!request.proposal_path.empty()) {
    return accept_proposal(context, request);
  }
  const std::string usage = "driftgate baseline accept CHECK-GLOB... --reason TEXT [--run RUN.jsonl]";
  if (request.operands.empty()) {
    usage_error("accept", "missing CHECK-GLOB (which checks to accept, e.g. 'resnet18/*')", usage);
  }
  if (request.reason.empty()) {
    usage_error("accept", "missing --reason (why the new values are right; it is logged beside the baseline)", usage);
  }
  RunFile run = read_run_file(request.run_path);
  require_storable(run.header.commit, request.run_path, request.allow_dirty, request.repo);
  std::unique_ptr<BaselineStore> store = open_store(request, true);
  std::optional<GitRepo> repo = GitRepo::open(request.repo);
  RunFile base = accept_base(context, request, *store, run, repo);
  AcceptOutcome outcome = accept_checks(run, base, request.operands);
  if (outcome.accepted.empty() && outcome.removed.empty() && outcome.unchanged != 0) {
    context.out << "nothing to accept: the " << outcome.unchanged << " matching checks of " << request.run_path
                << " already hold the run's values in baseline " << base.header.commit.sha.substr(0, 7)
                << " (up to their timings); nothing was stored\n";
    return 0;
  }
  if (outcome.accepted.empty() && outcome.removed.empty()) {
    std::vector<std::string> ids;
    for (const auto& check : run.checks) {
      ids.push_back(check.id);
    }
    throw Error("driftgate baseline accept: no check of " + request.run_path + " or of baseline " +
                base.header.commit.sha.substr(0, 7) + " matches " + request.operands[0] +
                did_you_mean(request.operands[0], ids) +
                "; check ids look like <experiment>/<input>/<ref>~<target>/<output>");
  }
  Acceptance acceptance{who(repo, context.env), timestamp(context.env), request.reason,   request.operands,
                        run.header.commit.sha,  base.header.commit.sha, outcome.accepted, outcome.removed};
  std::string stored = store->save_accepted(outcome.baseline, acceptance.to_json_line());
  say_accepted(context.out, outcome, "", stored, base.header.commit.sha,
               store->acceptance_log(run.header.environment.key(), run.header.commit.sha).back().first);
  return 0;
}

std::string resolve_sha(const BaselineRequest& request, const std::optional<GitRepo>& repo) {
  std::string revision = request.operands.empty() ? "HEAD" : request.operands[0];
  if (is_commit_sha(revision)) {
    return revision;
  }
  if (!repo) {
    throw Error("driftgate baseline show: '" + revision + "' is not a full commit SHA and --repo " + request.repo +
                " is not a git checkout to resolve it in; pass the 40-digit SHA");
  }
  return repo->resolve(revision);
}

int show(CommandContext& context, const BaselineRequest& request) {
  if (request.operands.size() > 1) {
    usage_error("show", "expected at most one SHA", "driftgate baseline show [SHA] [--env KEY]");
  }
  std::unique_ptr<BaselineStore> store = open_store(request, true);
  std::optional<GitRepo> repo = GitRepo::open(request.repo);
  std::string sha = resolve_sha(request, repo);
  if (request.operands.empty() && repo && repo->head_info().sha != "unknown") {
    // HEAD in the commit-per-baseline flow is often the commit that stored its parent's
    // baseline: step over such commits to the one that was measured, and say so.
    std::optional<std::string> store_path =
        store_path_in_repo(parse_store_spec(request.store, request.store_kind), *repo);
    std::string head = sha;
    for (int guard = 0; guard < 100 && is_baseline_only_commit(*repo, *store, store_path, sha); ++guard) {
      std::vector<std::string> parents = repo->parents(sha);
      if (parents.empty()) {
        break;
      }
      sha = parents[0];
    }
    if (sha != head) {
      context.out << "HEAD " << head.substr(0, 7) << " only adds baselines; showing its first parent "
                  << sha.substr(0, 7) << "\n";
    }
  }
  std::vector<std::string> keys;
  for (const auto& key : store->env_keys()) {
    if ((request.env_key.empty() || key == request.env_key) && store->contains(key, sha)) {
      keys.push_back(key);
    }
  }
  if (keys.empty()) {
    throw Error("no baseline of " + sha + (request.env_key.empty() ? "" : " for environment " + request.env_key) +
                " in " + request.store + "; driftgate baseline list shows what there is");
  }
  if (keys.size() > 1) {
    std::string list;
    for (const auto& key : keys) {
      list += (list.empty() ? "" : ", ") + key;
    }
    throw Error("commit " + sha.substr(0, 7) + " has baselines for several environments (" + list +
                "); choose one with --env KEY");
  }
  RunFile run = *store->load(keys[0], sha);
  context.out << "baseline " << store->location(keys[0], sha) << "\n"
              << "commit " << sha << (run.header.commit.branch.empty() ? "" : " (" + run.header.commit.branch + ")")
              << "\nenvironment " << keys[0] << ":";
  for (const auto& [field, value] : run.header.environment.keyed) {
    context.out << " " << field << "=" << value;
  }
  context.out << "\nchecks " << run.checks.size() << ":";
  for (const auto& [status, count] : run.summary.by_status) {
    if (count > 0) {
      context.out << " " << status << " " << count;
    }
  }
  context.out << "\n";
  for (const auto& experiment : run.header.experiments) {
    context.out << "experiment " << experiment.name << ": model " << experiment.model_hash.substr(0, 7) << ", config "
                << experiment.config_hash.substr(0, 7) << "\n";
  }
  for (const auto& [where, line] : store->acceptance_log(keys[0], sha)) {
    Acceptance entry = parse_acceptance(line, where);
    context.out << "accepted " << entry.when << " by " << entry.who << ": " << entry.reason << " ("
                << entry.accepted.size() << " checks";
    for (const auto& glob : entry.globs) {
      context.out << " " << glob;
    }
    context.out << "; from " << entry.run_sha.substr(0, 7) << " onto " << entry.from_sha.substr(0, 7) << ")\n";
  }
  return 0;
}

// One listed baseline: its commit's details when the repository has the commit.
struct ListedBaseline {
  std::string sha;
  std::optional<CommitDetails> details;
  size_t rank = SIZE_MAX;  // place on HEAD's first-parent history, newest first; SIZE_MAX: not on it
};

int list(CommandContext& context, const BaselineRequest& request) {
  std::unique_ptr<BaselineStore> store = open_store(request, true);
  std::optional<GitRepo> repo = GitRepo::open(request.repo);
  std::map<std::string, size_t> rank;
  if (repo && repo->head_info().sha != "unknown") {
    std::vector<std::string> walk = repo->first_parent_walk("HEAD", 1000000);
    for (size_t i = 0; i < walk.size(); ++i) {
      rank[walk[i]] = i;
    }
  }
  for (const auto& key : store->env_keys()) {
    std::vector<std::string> shas = store->shas(key);
    context.out << key << ": " << shas.size() << (shas.size() == 1 ? " baseline\n" : " baselines\n");
    // Newest first: HEAD's first-parent history in order, then other commits by date, then
    // commits this clone does not have, by SHA.
    std::vector<ListedBaseline> listed;
    for (const auto& sha : shas) {
      ListedBaseline item{sha, std::nullopt, rank.count(sha) != 0 ? rank[sha] : SIZE_MAX};
      if (repo) {
        try {
          item.details = repo->commit_details(sha);
        } catch (const Error&) {
          item.details.reset();  // not in this clone: listed by SHA alone
        }
      }
      listed.push_back(std::move(item));
    }
    std::stable_sort(listed.begin(), listed.end(), [](const ListedBaseline& a, const ListedBaseline& b) {
      if (a.rank != b.rank) {
        return a.rank < b.rank;
      }
      if (a.details.has_value() != b.details.has_value()) {
        return a.details.has_value();
      }
      return a.details && a.details->time != b.details->time ? a.details->time > b.details->time : a.sha < b.sha;
    });
    for (const auto& item : listed) {
      size_t accepted = store->acceptance_log(key, item.sha).size();
      context.out << "  " << item.sha << (accepted == 0 ? "" : " (" + std::to_string(accepted) + " accepted)");
      if (item.details) {
        context.out << "  " << format_commit_date(*item.details) << "  " << terminal_safe(item.details->subject);
        if (item.rank == SIZE_MAX) {
          context.out << "  (not on HEAD's first-parent history)";
        }
      } else if (repo) {
        context.out << "  (commit not in this repository)";
      }
      context.out << "\n";
    }
  }
  return 0;
}

int prune(CommandContext& context, const BaselineRequest& request) {
  if (request.keep < 1) {
    usage_error("prune", "--keep N must be given and at least 1 (baselines kept per environment key)",
                "driftgate baseline prune --keep N [--dry-run]");
  }
  std::unique_ptr<BaselineStore> store = open_store(request, true);
  std::optional<GitRepo> repo = GitRepo::open(request.repo);
  std::map<std::string, size_t> rank;
  if (repo) {
    std::vector<std::string> walk = repo->first_parent_walk("HEAD", 1000000);
    for (size_t i = 0; i < walk.size(); ++i) {
      rank[walk[i]] = i;
    }
  }
  size_t removed = 0;
  for (const auto& key : store->env_keys()) {
    std::vector<std::string> order;
    std::vector<std::string> off_history;
    if (repo) {
      for (const auto& sha : store->shas(key)) {
        (rank.count(sha) != 0 ? order : off_history).push_back(sha);
      }
      std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) { return rank[a] < rank[b]; });
    } else if (auto* directory = dynamic_cast<DirectoryStore*>(store.get())) {
      order = directory->shas_newest_written_first(key);
    }
    for (const auto& sha : off_history) {
      context.out << "kept " << key << "/" << sha << " (not on HEAD's first-parent history; prune from its branch)\n";
    }
    for (size_t i = static_cast<size_t>(request.keep); i < order.size(); ++i) {
      if (!request.dry_run) {
        store->remove(key, order[i]);
      }
      context.out << (request.dry_run ? "would remove " : "removed ") << key << "/" << order[i] << ".jsonl\n";
      ++removed;
    }
  }
  context.out << (request.dry_run ? "would remove " : "removed ") << removed << " baselines, kept at most "
              << request.keep << " per environment key\n";
  return 0;
}

}  // namespace

int cmd_baseline(CommandContext& context) {
  std::optional<BaselineRequest> request = parse_request(context);
  if (!request) {
    return 0;
  }
  if (request->action == "update") {
    return update(context, *request);
  }
  if (request->action == "accept") {
    return accept(context, *request);
  }
  if (request->action == "show") {
    return show(context, *request);
  }
  if (request->action == "list") {
    return list(context, *request);
  }
  return prune(context, *request);
}

}  // namespace driftgate

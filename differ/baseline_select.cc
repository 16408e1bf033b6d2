#include "differ/baseline_select.h"

#include <algorithm>

#include "core/error.h"

namespace driftgate {

const char* const k_shallow_clone_note =
    "shallow clone: the merge base of HEAD and BASE is not in this clone; fetch full history "
    "(actions/checkout fetch-depth: 0, GIT_DEPTH: 0) \xE2\x80\x94 falling back to HEAD's own ancestors";

namespace {

std::string short_sha(const std::string& sha) { return sha.substr(0, 7); }

struct StartPoint {
  std::string sha;
  std::vector<std::string> notes;
};

// The merge base of the run's commit and the base revision, or the run's commit
// itself (with a note) when the base is unknown to a shallow clone or unrelated.
StartPoint choose_start(const GitRepo& repo, const SelectionRequest& request) {
  const std::string& head = request.head_sha;
  if (!request.base_revision) {
    return {head, {}};
  }
  bool shallow = repo.is_shallow();
  std::optional<std::string> base;
  try {
    base = repo.merge_base(head, repo.resolve(*request.base_revision));
  } catch (const Error&) {
    // A shallow clone may lack the base commit or the parents between them.
    if (!shallow) {
      throw;
    }
  }
  if (base) {
    return {*base, {}};
  }
  if (shallow) {
    return {head, {k_shallow_clone_note}};
  }
  return {head,
          {"HEAD (" + short_sha(head) + ") and BASE '" + *request.base_revision +
           "' share no history \xE2\x80\x94 falling back to HEAD's own ancestors"}};
}

struct Hit {
  std::string sha;
  std::string env_key;
  int steps = 0;
  std::string merged_by = {};  // a baseline accepted on a merged branch: the merge commit
};

bool is_accepted(const BaselineStore& store, const std::string& key, const std::string& sha) {
  return store.contains(key, sha) && !store.acceptance_log(key, sha).empty();
}

// A baseline accepted (driftgate baseline accept) on a branch that the merge commit `merge`
// brought in: on a second or later parent or its first parents, down to where they meet the
// merge's first parent; the newest such commit of the first such parent.
std::optional<Hit> accepted_on_merged_branch(const GitRepo& repo, const BaselineStore& store, const std::string& merge,
                                             const std::string& own, int steps, int max_walk) {
  std::vector<std::string> parents = repo.parents(merge);
  for (size_t p = 1; p < parents.size(); ++p) {
    std::optional<std::string> fork = repo.merge_base(parents[p], parents[0]);
    for (const std::string& sha : repo.first_parent_walk(parents[p], max_walk)) {
      if (fork && sha == *fork) {
        break;
      }
      if (is_accepted(store, own, sha)) {
        return Hit{sha, own, steps, merge};
      }
    }
  }
  return std::nullopt;
}

// Walks `walk` and returns the nearest baseline of `own` and the nearest of any
// other environment key (each may be absent). A merge commit on the walk counts a
// baseline accepted on the branch it merged as its own (accepted_on_merged_branch).
std::pair<std::optional<Hit>, std::optional<Hit>> nearest_hits(const GitRepo& repo, const BaselineStore& store,
                                                               const std::vector<std::string>& walk,
                                                               const std::string& own, int max_walk) {
  std::vector<std::string> others = store.env_keys();
  others.erase(std::remove(others.begin(), others.end(), own), others.end());
  std::optional<Hit> other;
  for (size_t i = 0; i < walk.size(); ++i) {
    int steps = static_cast<int>(i);
    if (store.contains(own, walk[i])) {
      return {Hit{walk[i], own, steps}, other};
    }
    if (std::optional<Hit> merged = accepted_on_merged_branch(repo, store, walk[i], own, steps, max_walk)) {
      return {merged, other};
    }
    for (size_t k = 0; k < others.size() && !other; ++k) {
      if (store.contains(others[k], walk[i])) {
        other = Hit{walk[i], others[k], steps};
      }
    }
  }
  return {std::nullopt, other};
}

// A baseline accepted on the branch itself (driftgate baseline accept) for the run's
// commit or one of its first parents above the start: the refresh the user asked for.
std::optional<Hit> accepted_on_branch(const GitRepo& repo, const BaselineStore& store, const std::string& head,
                                      const std::string& start, const std::string& own, int max_walk) {
  if (head == start) {
    return std::nullopt;
  }
  std::vector<std::string> branch = repo.first_parent_walk(head, max_walk);
  for (size_t i = 0; i < branch.size() && branch[i] != start; ++i) {
    if (is_accepted(store, own, branch[i])) {
      return Hit{branch[i], own, 0};
    }
  }
  return std::nullopt;
}

void take(BaselineSelection& selection, const BaselineStore& store, const Hit& hit, bool load) {
  selection.found = true;
  selection.sha = hit.sha;
  selection.env_key = hit.env_key;
  selection.steps = hit.steps;
  if (!load) {
    return;
  }
  selection.baseline = store.load(hit.env_key, hit.sha);
  if (!selection.baseline) {
    throw Error("baseline " + hit.env_key + "/" + hit.sha + " disappeared while being read; run the diff again");
  }
}

}  // namespace

BaselineSelection select_baseline(const GitRepo& repo, const BaselineStore& store, const SelectionRequest& request) {
  if (request.max_walk < 1) {
    throw Error("max walk " + std::to_string(request.max_walk) +
                ": must be at least 1 (how many first-parent commits to search for a baseline)");
  }
  BaselineSelection selection;
  if (!is_commit_sha(request.head_sha)) {
    bool unborn = repo.head_info().sha == "unknown";
    selection.reason = "the run has no commit SHA ('" + request.head_sha + "'): " +
                       (unborn ? "the repository " + repo.workdir() +
                                     " has no commit yet (git commit, then run again), so no baseline can be chosen "
                                     "by ancestry"
                               : std::string("it was made outside a git checkout, so no baseline can be chosen by "
                                             "ancestry"));
    return selection;
  }
  StartPoint start = choose_start(repo, request);
  selection.start_sha = start.sha;
  selection.notes = start.notes;
  std::vector<std::string> walk = repo.first_parent_walk(start.sha, request.max_walk);
  std::string own = request.environment.key();
  if (request.against_env && *request.against_env != own) {
    const std::string& wanted = *request.against_env;
    if (!is_env_key(wanted)) {
      throw Error("--against-env '" + wanted +
                  "': an environment key is 16 hex digits (driftgate env prints it; "
                  "the store's directories are named by it)");
    }
    auto [hit, other] = nearest_hits(repo, store, walk, wanted, request.max_walk);
    (void)other;
    if (!hit) {
      std::vector<std::string> keys = store.env_keys();
      std::string listed;
      for (const auto& key : keys) {
        listed += (listed.empty() ? "" : ", ") + key;
      }
      selection.reason = "no baseline of environment " + wanted + " within " + std::to_string(walk.size()) +
                         " first-parent commits of " + short_sha(start.sha) +
                         " (the store has: " + (listed.empty() ? std::string("none") : listed) + ")";
      return selection;
    }
    std::optional<RunFile> other_run = store.load(hit->env_key, hit->sha);
    take(selection, store, *hit, request.load);
    selection.env_mismatch = true;
    selection.env_changes =
        other_run ? describe_changes(diff_environments(other_run->header.environment, request.environment)) : "";
    return selection;
  }
  if (std::optional<Hit> accepted =
          accepted_on_branch(repo, store, request.head_sha, start.sha, own, request.max_walk)) {
    take(selection, store, *accepted, request.load);
    selection.start_sha = accepted->sha;
    selection.notes.push_back("using the baseline accepted on this branch at " + short_sha(accepted->sha) +
                              " (driftgate baseline accept), not the merge base's");
    return selection;
  }
  auto [same, other] = nearest_hits(repo, store, walk, own, request.max_walk);
  if (same) {
    take(selection, store, *same, request.load);
    if (!same->merged_by.empty()) {
      selection.notes.push_back("using the baseline accepted on the branch merged by " + short_sha(same->merged_by) +
                                ", at " + short_sha(same->sha) +
                                " (driftgate baseline accept), not an older first-parent one");
    }
    return selection;
  }
  if (repo.is_shallow() && static_cast<int>(walk.size()) < request.max_walk) {
    selection.notes.push_back("shallow clone: history ends after " + std::to_string(walk.size()) +
                              " first-parent commits of " + short_sha(start.sha) +
                              "; fetch full history (actions/checkout fetch-depth: 0, GIT_DEPTH: 0) to search further");
  }
  if (!other) {
    selection.reason =
        "no baseline within " + std::to_string(walk.size()) + " first-parent commits of " + short_sha(start.sha);
    return selection;
  }
  std::optional<RunFile> other_run = store.load(other->env_key, other->sha);
  std::string changes =
      other_run ? describe_changes(diff_environments(other_run->header.environment, request.environment)) : "";
  if (!request.allow_env_mismatch) {
    selection.reason =
        "no comparable baseline: baselines exist only for other environments: " + other->env_key + " (" + changes + ")";
    return selection;
  }
  take(selection, store, *other, request.load);
  selection.env_mismatch = true;
  selection.env_changes = changes;
  return selection;
}

}  // namespace driftgate

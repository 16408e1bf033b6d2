#include "core/git_repo.h"

#include <git2.h>

#include <deque>
#include <memory>
#include <set>

#include "core/error.h"

namespace driftgate {

void ensure_libgit2() {
  static const int k_initialized = git_libgit2_init();
  (void)k_initialized;
}

namespace {

std::string last_git_error() {
  const git_error* error = git_error_last();
  if (error == nullptr || error->message == nullptr) {
    return "unknown libgit2 error";
  }
  return error->message;
}

struct ObjectFree {
  void operator()(git_object* object) const { git_object_free(object); }
};
struct CommitFree {
  void operator()(git_commit* commit) const { git_commit_free(commit); }
};
struct ReferenceFree {
  void operator()(git_reference* reference) const { git_reference_free(reference); }
};
struct StatusListFree {
  void operator()(git_status_list* list) const { git_status_list_free(list); }
};
using ObjectPtr = std::unique_ptr<git_object, ObjectFree>;
using CommitPtr = std::unique_ptr<git_commit, CommitFree>;
using ReferencePtr = std::unique_ptr<git_reference, ReferenceFree>;
using StatusListPtr = std::unique_ptr<git_status_list, StatusListFree>;

std::string oid_hex(const git_oid* oid) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, oid);
  return hex;
}

bool is_full_sha(const std::string& text) {
  if (text.size() != GIT_OID_HEXSZ) {
    return false;
  }
  for (char c : text) {
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex) {
      return false;
    }
  }
  return true;
}

// True when anything tracked differs from HEAD: staged changes or modified/deleted
// files in the working tree. Untracked and ignored files do not count.
bool has_tracked_changes(git_repository* repo) {
  if (git_repository_is_bare(repo) != 0) {
    return false;
  }
  git_status_options options;
  git_status_options_init(&options, GIT_STATUS_OPTIONS_VERSION);
  options.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
  options.flags = GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
  git_status_list* raw = nullptr;
  if (git_status_list_new(&raw, repo, &options) != 0) {
    throw Error(std::string("cannot read the git status of ") + git_repository_path(repo) + ": " + last_git_error());
  }
  StatusListPtr list(raw);
  size_t count = git_status_list_entrycount(list.get());
  for (size_t i = 0; i < count; ++i) {
    const git_status_entry* entry = git_status_byindex(list.get(), i);
    unsigned int status = entry->status;
    status &= ~static_cast<unsigned int>(GIT_STATUS_WT_NEW | GIT_STATUS_IGNORED);
    if (status != GIT_STATUS_CURRENT) {
      return true;
    }
  }
  return false;
}

// The parents of `commit` whose objects are in the repository; a shallow clone
// lacks the parents of its boundary commits.
std::vector<git_oid> present_parents(git_repository* repo, const git_commit* commit) {
  std::vector<git_oid> parents;
  for (unsigned int i = 0; i < git_commit_parentcount(commit); ++i) {
    const git_oid* id = git_commit_parent_id(commit, i);
    git_commit* parent = nullptr;
    int rc = git_commit_lookup(&parent, repo, id);
    if (rc == GIT_ENOTFOUND) {
      continue;
    }
    if (rc != 0) {
      throw Error("cannot read the parent " + oid_hex(id) + " of commit " + oid_hex(git_commit_id(commit)) + ": " +
                  last_git_error());
    }
    git_commit_free(parent);
    parents.push_back(*id);
  }
  return parents;
}

// Breadth-first over the commits present in the repository, starting at `start`;
// stops early when `visit` returns true and returns that commit.
template <typename Visit>
std::optional<std::string> breadth_first(git_repository* repo, const git_oid& start, Visit visit) {
  std::deque<git_oid> queue{start};
  std::set<std::string> seen{oid_hex(&start)};
  while (!queue.empty()) {
    git_oid id = queue.front();
    queue.pop_front();
    std::string hex = oid_hex(&id);
    if (visit(hex)) {
      return hex;
    }
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo, &id) != 0) {
      throw Error("cannot read commit " + hex + ": " + last_git_error());
    }
    CommitPtr commit(raw);
    for (const git_oid& parent : present_parents(repo, commit.get())) {
      if (seen.insert(oid_hex(&parent)).second) {
        queue.push_back(parent);
      }
    }
  }
  return std::nullopt;
}

// The merge base within a shallow clone: the ancestor of `b` nearest to it (in
// generations) that is also an ancestor of `a`, among the commits present. libgit2
// 1.5's git_merge_base fails (and leaks) on the missing parents at the boundary.
std::optional<std::string> shallow_merge_base(git_repository* repo, const git_oid& a, const git_oid& b) {
  std::set<std::string> ancestors_of_a;
  breadth_first(repo, a, [&](const std::string& hex) {
    ancestors_of_a.insert(hex);
    return false;
  });
  return breadth_first(repo, b, [&](const std::string& hex) { return ancestors_of_a.count(hex) != 0; });
}

// The commit `sha` (40 hex digits) names, or an error saying how to fetch it.
CommitPtr lookup_commit(git_repository* repo, const std::string& sha, const std::string& workdir) {
  git_oid oid;
  if (git_oid_fromstr(&oid, sha.c_str()) != 0) {
    throw Error("invalid commit '" + sha + "': " + last_git_error());
  }
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repo, &oid) != 0) {
    throw Error("unknown commit '" + sha + "' in " + workdir + "; fetch it (git fetch origin " + sha + ")");
  }
  return CommitPtr(raw);
}

}  // namespace

std::optional<GitRepo> GitRepo::open(const std::string& path) {
  ensure_libgit2();
  git_repository* repo = nullptr;
  int rc = git_repository_open_ext(&repo, path.c_str(), 0, nullptr);
  if (rc == GIT_ENOTFOUND) {
    return std::nullopt;
  }
  if (rc != 0) {
    throw Error("cannot open the git repository at " + path + ": " + last_git_error() +
                "; check that it is a valid checkout (git status)");
  }
  return GitRepo(repo);
}

GitRepo::GitRepo(git_repository* repo) : m_repo(repo) {}

GitRepo::GitRepo(GitRepo&& other) noexcept : m_repo(other.m_repo) { other.m_repo = nullptr; }

GitRepo& GitRepo::operator=(GitRepo&& other) noexcept {
  if (this != &other) {
    git_repository_free(m_repo);
    m_repo = other.m_repo;
    other.m_repo = nullptr;
  }
  return *this;
}

GitRepo::~GitRepo() { git_repository_free(m_repo); }

CommitInfo GitRepo::head_info() const {
  CommitInfo info;
  info.sha = "unknown";
  git_reference* raw = nullptr;
  int rc = git_repository_head(&raw, m_repo);
  if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND) {
    info.dirty = has_tracked_changes(m_repo);
    return info;
  }
  if (rc != 0) {
    throw Error("cannot read HEAD of " + workdir() + ": " + last_git_error());
  }
  ReferencePtr head(raw);
  const git_oid* target = git_reference_target(head.get());
  if (target != nullptr) {
    info.sha = oid_hex(target);
  }
  if (git_reference_is_branch(head.get()) != 0) {
    info.branch = git_reference_shorthand(head.get());
  }
  info.dirty = has_tracked_changes(m_repo);
  return info;
}

std::string GitRepo::resolve(const std::string& revision) const {
  git_object* raw = nullptr;
  int rc = git_revparse_single(&raw, m_repo, revision.c_str());
  if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC || rc == GIT_EAMBIGUOUS) {
    throw Error("unknown revision '" + revision + "' in " + workdir() + "; fetch it (git fetch origin " + revision +
                ") or pass a SHA");
  }
  if (rc != 0) {
    throw Error("cannot resolve revision '" + revision + "' in " + workdir() + ": " + last_git_error());
  }
  ObjectPtr object(raw);
  git_object* peeled_raw = nullptr;
  if (git_object_peel(&peeled_raw, object.get(), GIT_OBJECT_COMMIT) != 0) {
    throw Error("revision '" + revision + "' in " + workdir() + " does not name a commit: " + last_git_error());
  }
  ObjectPtr peeled(peeled_raw);
  return oid_hex(git_object_id(peeled.get()));
}

std::optional<std::string> GitRepo::merge_base(const std::string& a, const std::string& b) const {
  git_oid one;
  git_oid two;
  if (git_oid_fromstr(&one, resolve(a).c_str()) != 0 || git_oid_fromstr(&two, resolve(b).c_str()) != 0) {
    throw Error("cannot compute the merge base of '" + a + "' and '" + b + "': " + last_git_error());
  }
  if (is_shallow()) {
    return shallow_merge_base(m_repo, one, two);
  }
  git_oid base;
  int rc = git_merge_base(&base, m_repo, &one, &two);
  if (rc == GIT_ENOTFOUND) {
    return std::nullopt;
  }
  if (rc != 0) {
    throw Error("cannot compute the merge base of '" + a + "' and '" + b + "' in " + workdir() + ": " +
                last_git_error());
  }
  return oid_hex(&base);
}

std::vector<std::string> GitRepo::first_parent_walk(const std::string& start, int limit) const {
  std::vector<std::string> walk;
  if (limit <= 0) {
    return walk;
  }
  git_oid oid;
  std::string start_sha = is_full_sha(start) ? start : resolve(start);
  if (git_oid_fromstr(&oid, start_sha.c_str()) != 0) {
    throw Error("invalid commit '" + start + "': " + last_git_error());
  }
  git_commit* raw = nullptr;
  int rc = git_commit_lookup(&raw, m_repo, &oid);
  if (rc != 0) {
    throw Error("unknown revision '" + start + "' in " + workdir() + "; fetch it (git fetch origin " + start +
                ") or pass a SHA");
  }
  CommitPtr commit(raw);
  while (true) {
    walk.push_back(oid_hex(git_commit_id(commit.get())));
    if (static_cast<int>(walk.size()) >= limit || git_commit_parentcount(commit.get()) == 0) {
      return walk;
    }
    git_commit* parent = nullptr;
    rc = git_commit_lookup(&parent, m_repo, git_commit_parent_id(commit.get(), 0));
    if (rc == GIT_ENOTFOUND) {
      return walk;  // the shallow boundary: the parent's object is not in this clone
    }
    if (rc != 0) {
      throw Error("cannot read the parent of commit " + walk.back() + " in " + workdir() + ": " + last_git_error());
    }
    commit.reset(parent);
  }
}

std::vector<std::string> GitRepo::parents(const std::string& sha) const {
  CommitPtr commit = lookup_commit(m_repo, sha, workdir());
  std::vector<std::string> result;
  for (unsigned i = 0; i < git_commit_parentcount(commit.get()); ++i) {
    git_commit* parent = nullptr;
    if (git_commit_lookup(&parent, m_repo, git_commit_parent_id(commit.get(), i)) == 0) {
      git_commit_free(parent);
      result.push_back(oid_hex(git_commit_parent_id(commit.get(), i)));
    }
  }
  return result;
}

bool GitRepo::changes_only_under(const std::string& sha, const std::string& prefix) const {
  CommitPtr commit = lookup_commit(m_repo, sha, workdir());
  if (git_commit_parentcount(commit.get()) == 0) {
    return false;
  }
  git_commit* raw_parent = nullptr;
  if (git_commit_lookup(&raw_parent, m_repo, git_commit_parent_id(commit.get(), 0)) != 0) {
    return false;  // a shallow boundary
  }
  CommitPtr parent(raw_parent);
  git_tree* raw_tree = nullptr;
  git_tree* raw_parent_tree = nullptr;
  if (git_commit_tree(&raw_tree, commit.get()) != 0 || git_commit_tree(&raw_parent_tree, parent.get()) != 0) {
    git_tree_free(raw_tree);
    throw Error("cannot read the tree of commit " + sha + ": " + last_git_error());
  }
  std::unique_ptr<git_tree, void (*)(git_tree*)> tree(raw_tree, git_tree_free);
  std::unique_ptr<git_tree, void (*)(git_tree*)> parent_tree(raw_parent_tree, git_tree_free);
  git_diff* raw_diff = nullptr;
  if (git_diff_tree_to_tree(&raw_diff, m_repo, parent_tree.get(), tree.get(), nullptr) != 0) {
    throw Error("cannot compare commit " + sha + " with its parent: " + last_git_error());
  }
  std::unique_ptr<git_diff, void (*)(git_diff*)> diff(raw_diff, git_diff_free);
  size_t deltas = git_diff_num_deltas(diff.get());
  const std::string under = prefix + "/";
  for (size_t i = 0; i < deltas; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    for (const char* path : {delta->old_file.path, delta->new_file.path}) {
      if (path != nullptr && std::string(path).rfind(under, 0) != 0) {
        return false;
      }
    }
  }
  return deltas > 0;
}

std::optional<std::string> GitRepo::user_identity() const {
  git_config* raw = nullptr;
  if (git_repository_config_snapshot(&raw, m_repo) != 0) {
    return std::nullopt;
  }
  std::unique_ptr<git_config, void (*)(git_config*)> config(raw, git_config_free);
  auto value = [&](const char* name) -> std::string {
    const char* text = nullptr;
    return git_config_get_string(&text, config.get(), name) == 0 && text != nullptr ? text : "";
  };
  std::string name = value("user.name");
  std::string email = value("user.email");
  if (name.empty() && email.empty()) {
    return std::nullopt;
  }
  if (email.empty()) {
    return name;
  }
  return name.empty() ? "<" + email + ">" : name + " <" + email + ">";
}

CommitDetails GitRepo::commit_details(const std::string& sha) const {
  git_oid oid;
  std::string full = is_full_sha(sha) ? sha : resolve(sha);
  git_commit* raw = nullptr;
  if (git_oid_fromstr(&oid, full.c_str()) != 0 || git_commit_lookup(&raw, m_repo, &oid) != 0) {
    throw Error("cannot read commit " + sha + " in " + workdir() + ": " + last_git_error() +
                "; fetch more history (git fetch --unshallow) or pass a commit of this repository");
  }
  CommitPtr commit(raw);
  CommitDetails details;
  details.sha = oid_hex(git_commit_id(commit.get()));
  const char* summary = git_commit_summary(commit.get());
  details.subject = summary != nullptr ? summary : "";
  const git_signature* author = git_commit_author(commit.get());
  details.author = author != nullptr && author->name != nullptr ? author->name : "";
  details.time = static_cast<int64_t>(git_commit_time(commit.get()));
  details.offset_minutes = git_commit_time_offset(commit.get());
  return details;
}

bool GitRepo::is_shallow() const { return git_repository_is_shallow(m_repo) == 1; }

std::string GitRepo::workdir() const {
  const char* dir = git_repository_workdir(m_repo);
  std::string path = dir != nullptr ? dir : git_repository_path(m_repo);
  while (path.size() > 1 && path.back() == '/') {
    path.pop_back();
  }
  return path;
}

}  // namespace driftgate

// Read-only access to the git repository a run or a diff happens in (libgit2).
//
// It serves two purposes: 1) the runner stamps each run with the commit SHA,
// branch and dirty flag; 2) the differ chooses a baseline by walking from the
// merge base of HEAD and the target branch along first parents.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/record.h"

struct git_repository;

namespace driftgate {

// Sets up libgit2's global state once per process (thread-safe) and never tears it
// down: pairing git_libgit2_init/shutdown per object lets the count reach zero while
// other threads use libgit2, which deletes its thread-state key and leaks their state.
void ensure_libgit2();

// Who made a commit, when, and its subject line: what trend reports show beside a SHA.
struct CommitDetails {
  std::string sha;
  std::string subject;     // first line of the message
  std::string author;      // author name
  int64_t time = 0;        // committer time, seconds since the epoch
  int offset_minutes = 0;  // the committer's UTC offset
};

class GitRepo {
 public:
  // Discovers the repository containing `path` (walking up). Returns nullopt when
  // `path` is not inside a git repository. Throws driftgate::Error on a corrupt one.
  static std::optional<GitRepo> open(const std::string& path);

  GitRepo(GitRepo&& other) noexcept;
  GitRepo& operator=(GitRepo&& other) noexcept;
  GitRepo(const GitRepo&) = delete;
  GitRepo& operator=(const GitRepo&) = delete;
  ~GitRepo();

  // HEAD's SHA, the branch name ("" when detached), and whether tracked files differ from HEAD.
  // In a repository with no commit yet, sha is "unknown".
  CommitInfo head_info() const;

  // Resolves a revision ("HEAD", "origin/main", a SHA prefix) to a full SHA.
  // Throws driftgate::Error naming the revision and suggesting `git fetch` when it is unknown.
  std::string resolve(const std::string& revision) const;

  // The merge base of two commits, or nullopt when they share no history
  // (as in a shallow clone that does not reach it).
  std::optional<std::string> merge_base(const std::string& a, const std::string& b) const;

  // `start` and then its first-parent ancestors, at most `limit` commits, newest first.
  // Stops early at a shallow boundary or a root commit.
  std::vector<std::string> first_parent_walk(const std::string& start, int limit) const;

  // The parents of the commit `sha` (a full SHA), first parent first; empty for a root commit.
  // A parent missing from a shallow clone is left out. Throws driftgate::Error for an unknown commit.
  std::vector<std::string> parents(const std::string& sha) const;

  // Whether the commit `sha` changes files (against its first parent) only under the directory
  // `prefix` (relative to the repository root, "/"-separated, no trailing slash), and changes
  // at least one: a commit that only adds baselines. False for a root commit, or when the
  // parent is missing from a shallow clone.
  bool changes_only_under(const std::string& sha, const std::string& prefix) const;

  // "Name <email>" from git config (user.name, user.email; either alone when the
  // other is unset), or nullopt when neither is configured: who accepted a baseline.
  std::optional<std::string> user_identity() const;

  // Subject, author and date of the commit `sha` (a full SHA or any revision).
  // Throws driftgate::Error naming the commit when it is not in the repository.
  CommitDetails commit_details(const std::string& sha) const;

  // True for a shallow clone (the CI default), whose history may end early.
  bool is_shallow() const;

  // The working directory's root.
  std::string workdir() const;

 private:
  explicit GitRepo(git_repository* repo);
  git_repository* m_repo = nullptr;
};

}  // namespace driftgate

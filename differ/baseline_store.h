// Where baselines live: the records of one run per (environment key, commit SHA).
//
// The differ reads baselines while choosing and diffing; `driftgate baseline
// update` writes them. Both talk to the BaselineStore interface, which its two
// backends implement (directories here, git notes in git_notes_store.h); tests use
// the real ones on temporary directories and repositories. DirectoryStore is the
// default: `<root>/<env-key>/<sha>.jsonl`, one immutable-looking, reviewable file
// per baseline, written atomically under an exclusive lock on `<root>/.lock`.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/record.h"
#include "differ/run_digest.h"

namespace driftgate {

class BaselineStore {
 public:
  virtual ~BaselineStore() = default;

  // The baseline of (env_key, sha), or nullopt when there is none. Throws
  // driftgate::Error on a malformed name or a corrupt baseline.
  virtual std::optional<RunFile> load(const std::string& env_key, const std::string& sha) const = 0;

  // load() for a diff: the baseline as a digest (differ/run_digest.h), with the same
  // checks and errors; `like` as read_run_digest takes it. The default reads it in
  // full with load().
  virtual std::optional<RunDigest> load_digest(const std::string& env_key, const std::string& sha,
                                               const RunDigest* like = nullptr) const;

  // Whether a baseline of (env_key, sha) exists, without reading it.
  virtual bool contains(const std::string& env_key, const std::string& sha) const = 0;

  // Stores `run` under its own environment key and commit SHA, records sorted by
  // check id. Returns where it went, for messages ("<env-key>/<sha>.jsonl").
  virtual std::string save(const RunFile& run) = 0;

  // Every environment key that has at least one baseline, sorted.
  virtual std::vector<std::string> env_keys() const = 0;

  // Every commit SHA with a baseline for `env_key`, sorted.
  virtual std::vector<std::string> shas(const std::string& env_key) const = 0;

  // Stores `run` as save() does and appends `acceptance_line` (one JSON line, see
  // baseline_accept.h) to the baseline's acceptance log, both under one lock.
  virtual std::string save_accepted(const RunFile& run, const std::string& acceptance_line) = 0;

  // The acceptance log of (env_key, sha), oldest first: (where, line) pairs, where
  // is "<file>:<line>" for messages. Empty when nothing was ever accepted.
  virtual std::vector<std::pair<std::string, std::string>> acceptance_log(const std::string& env_key,
                                                                          const std::string& sha) const = 0;

  // Deletes the baseline of (env_key, sha) and its acceptance log. Returns false when there was none.
  virtual bool remove(const std::string& env_key, const std::string& sha) = 0;

  // Where the baseline of (env_key, sha) lives, for messages: a path or a note name.
  virtual std::string location(const std::string& env_key, const std::string& sha) const = 0;
};

// Validation of the two names a baseline is keyed by, so that nothing a run file
// says can make a path escape the store. Throw driftgate::Error when malformed.
bool is_env_key(const std::string& text);     // 16 lowercase hex digits
bool is_commit_sha(const std::string& text);  // 40 lowercase hex digits
void require_env_key(const std::string& env_key);
void require_commit_sha(const std::string& sha);

// A copy of `run` whose checks are sorted by id: the canonical baseline form.
RunFile canonical_baseline(const RunFile& run);

class DirectoryStore : public BaselineStore {
 public:
  explicit DirectoryStore(std::string root);

  // Whether the root directory exists (a diff against a missing store is an error,
  // while the first `baseline update` creates it).
  bool exists() const;
  const std::string& root() const { return m_root; }
  // "<root>/<env-key>/<sha>.jsonl"
  std::string path_of(const std::string& env_key, const std::string& sha) const;

  std::optional<RunFile> load(const std::string& env_key, const std::string& sha) const override;
  std::optional<RunDigest> load_digest(const std::string& env_key, const std::string& sha,
                                       const RunDigest* like = nullptr) const override;
  bool contains(const std::string& env_key, const std::string& sha) const override;
  std::string save(const RunFile& run) override;
  std::vector<std::string> env_keys() const override;
  std::vector<std::string> shas(const std::string& env_key) const override;
  std::string save_accepted(const RunFile& run, const std::string& acceptance_line) override;
  std::vector<std::pair<std::string, std::string>> acceptance_log(const std::string& env_key,
                                                                  const std::string& sha) const override;
  bool remove(const std::string& env_key, const std::string& sha) override;
  std::string location(const std::string& env_key, const std::string& sha) const override {
    return path_of(env_key, sha);
  }

  // "<root>/<env-key>/<sha>.accepted.jsonl"
  std::string acceptance_path_of(const std::string& env_key, const std::string& sha) const;
  // The SHAs of `env_key` by the modification time of their files, newest first
  // (ties by SHA): the order of writing when no git history is at hand.
  std::vector<std::string> shas_newest_written_first(const std::string& env_key) const;

 private:
  std::string m_root;
};

}  // namespace driftgate

// Baselines kept in git notes (refs/notes/driftgate) instead of a directory.
//
// Some teams do not want baseline files in their tree: a note attaches data to a
// commit without changing it, travels with `git push origin refs/notes/driftgate`
// and is fetched only on request. One note per commit holds that commit's
// baselines, one section per environment key, in key order:
//
//   # driftgate baseline <env-key>
//   {"type":"header",...}          the run file, records sorted by check id
//   ...
//   {"type":"summary",...}
//   # driftgate accepted <env-key>
//   {"when":...,"who":...}         the acceptance log (baseline_accept.h), oldest first
//
// Parse errors name the note and the line within it ("refs/notes/driftgate:<sha>:12").
// Writes happen under an exclusive lock on <git-dir>/driftgate-notes.lock and
// re-read the note inside it, so two concurrent writers cannot lose each other's
// section (the same guarantee as DirectoryStore).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "differ/baseline_store.h"

struct git_repository;

namespace driftgate {

inline constexpr const char* k_notes_ref = "refs/notes/driftgate";

class GitNotesStore : public BaselineStore {
 public:
  // Opens the repository containing `repo_dir`. Throws driftgate::Error when there is none.
  explicit GitNotesStore(const std::string& repo_dir, std::string notes_ref = k_notes_ref);
  ~GitNotesStore() override;
  GitNotesStore(const GitNotesStore&) = delete;
  GitNotesStore& operator=(const GitNotesStore&) = delete;

  std::optional<RunFile> load(const std::string& env_key, const std::string& sha) const override;
  bool contains(const std::string& env_key, const std::string& sha) const override;
  std::string save(const RunFile& run) override;
  std::vector<std::string> env_keys() const override;
  std::vector<std::string> shas(const std::string& env_key) const override;
  std::string save_accepted(const RunFile& run, const std::string& acceptance_line) override;
  std::vector<std::pair<std::string, std::string>> acceptance_log(const std::string& env_key,
                                                                  const std::string& sha) const override;
  bool remove(const std::string& env_key, const std::string& sha) override;

  // "refs/notes/driftgate:<sha> [<env-key>]": where a baseline lives, for messages.
  std::string location(const std::string& env_key, const std::string& sha) const override;

  // One commit's note, parsed into sections (exposed for tests).
  struct Section {
    std::vector<std::string> baseline;  // run file lines
    std::vector<std::string> accepted;  // acceptance log lines
    int baseline_first_line = 0;        // 1-based line of the first baseline line in the note
    int accepted_first_line = 0;
  };
  using Note = std::map<std::string, Section>;  // by env key
  static Note parse_note(const std::string& text, const std::string& name);
  static std::string render_note(const Note& note);

 private:
  std::optional<std::string> read_note(const std::string& sha) const;
  void write_note(const std::string& sha, const std::string& text);
  std::vector<std::string> annotated_commits() const;
  std::string note_name(const std::string& sha) const;

  git_repository* m_repo = nullptr;
  std::string m_ref;
  std::string m_lock_path;
};

}  // namespace driftgate

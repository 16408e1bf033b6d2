#include "differ/git_notes_store.h"

#include <fcntl.h>
#include <git2.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/git_repo.h"

namespace driftgate {

namespace {

constexpr const char* k_baseline_marker = "# driftgate baseline ";
constexpr const char* k_accepted_marker = "# driftgate accepted ";

std::string git_error_text() {
  const git_error* error = git_error_last();
  return error != nullptr && error->message != nullptr ? error->message : "unknown libgit2 error";
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// An exclusive flock on `path` for the lifetime of the object (as DirectoryStore's lock).
class NotesLock {
 public:
  explicit NotesLock(const std::string& path) {
    m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0) {
      throw Error(path + ": cannot open the notes store's lock file (" + std::strerror(errno) + ")");
    }
    while (::flock(m_fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        std::string reason = std::strerror(errno);
        ::close(m_fd);
        throw Error(path + ": cannot lock the notes store (" + reason + ")");
      }
    }
  }
  NotesLock(const NotesLock&) = delete;
  NotesLock& operator=(const NotesLock&) = delete;
  ~NotesLock() {
    ::flock(m_fd, LOCK_UN);
    ::close(m_fd);
  }

 private:
  int m_fd = -1;
};

git_oid to_oid(const std::string& sha) {
  require_commit_sha(sha);
  git_oid oid;
  if (git_oid_fromstr(&oid, sha.c_str()) != 0) {
    throw Error("invalid commit SHA '" + sha + "': " + git_error_text());
  }
  return oid;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) {
    text += line + "\n";
  }
  return text;
}

}  // namespace

GitNotesStore::GitNotesStore(const std::string& repo_dir, std::string notes_ref) : m_ref(std::move(notes_ref)) {
  ensure_libgit2();
  if (git_repository_open_ext(&m_repo, repo_dir.c_str(), 0, nullptr) != 0) {
    std::string reason = git_error_text();
    throw Error("--repo " + repo_dir + ": the git notes store needs a git repository (" + reason +
                "); run in the checkout or use the directory store (--store DIR)");
  }
  m_lock_path = std::string(git_repository_path(m_repo)) + "driftgate-notes.lock";
}

GitNotesStore::~GitNotesStore() { git_repository_free(m_repo); }

std::string GitNotesStore::note_name(const std::string& sha) const { return m_ref + ":" + sha; }

std::string GitNotesStore::location(const std::string& env_key, const std::string& sha) const {
  return note_name(sha) + " [" + env_key + "]";
}

GitNotesStore::Note GitNotesStore::parse_note(const std::string& text, const std::string& name) {
  Note note;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string>* current = nullptr;
  for (int number = 1; std::getline(in, line); ++number) {
    bool baseline = starts_with(line, k_baseline_marker);
    if (baseline || starts_with(line, k_accepted_marker)) {
      std::string key = line.substr(std::strlen(baseline ? k_baseline_marker : k_accepted_marker));
      if (!is_env_key(key)) {
        throw Error(name + ":" + std::to_string(number) + ": invalid environment key '" + key +
                    "' in a section marker; the note was edited by hand");
      }
      Section& section = note[key];
      current = baseline ? &section.baseline : &section.accepted;
      if (!current->empty()) {
        throw Error(name + ":" + std::to_string(number) + ": a second " + (baseline ? "baseline" : "acceptance") +
                    " section for environment " + key + "; the note was edited by hand");
      }
      (baseline ? section.baseline_first_line : section.accepted_first_line) = number + 1;
      continue;
    }
    if (current == nullptr) {
      throw Error(name + ":" + std::to_string(number) + ": text before the first '" + k_baseline_marker +
                  "<env-key>' line; this note was not written by driftgate");
    }
    current->push_back(line);
  }
  return note;
}

std::string GitNotesStore::render_note(const Note& note) {
  std::string text;
  for (const auto& [key, section] : note) {
    if (!section.baseline.empty()) {
      text += k_baseline_marker + key + "\n" + joined(section.baseline);
    }
    if (!section.accepted.empty()) {
      text += k_accepted_marker + key + "\n" + joined(section.accepted);
    }
  }
  return text;
}

std::optional<std::string> GitNotesStore::read_note(const std::string& sha) const {
  git_oid oid = to_oid(sha);
  git_note* note = nullptr;
  int rc = git_note_read(&note, m_repo, m_ref.c_str(), &oid);
  if (rc == GIT_ENOTFOUND) {
    return std::nullopt;
  }
  if (rc != 0) {
    throw Error("cannot read " + note_name(sha) + ": " + git_error_text());
  }
  std::string text = git_note_message(note) != nullptr ? git_note_message(note) : "";
  git_note_free(note);
  return text;
}

void GitNotesStore::write_note(const std::string& sha, const std::string& text) {
  git_oid oid = to_oid(sha);
  git_signature* signature = nullptr;
  if (git_signature_default(&signature, m_repo) != 0 &&
      git_signature_now(&signature, "driftgate", "driftgate@localhost") != 0) {
    throw Error("cannot make a signature for the notes commit: " + git_error_text());
  }
  git_oid note_oid;
  int rc = text.empty()
               ? git_note_remove(m_repo, m_ref.c_str(), signature, signature, &oid)
               : git_note_create(&note_oid, m_repo, m_ref.c_str(), signature, signature, &oid, text.c_str(), 1);
  git_signature_free(signature);
  if (rc != 0) {
    throw Error("cannot write " + note_name(sha) + ": " + git_error_text() +
                "; is the commit in this repository and the repository writable?");
  }
}

std::vector<std::string> GitNotesStore::annotated_commits() const {
  std::vector<std::string> shas;
  int rc = git_note_foreach(
      m_repo, m_ref.c_str(),
      [](const git_oid*, const git_oid* annotated, void* payload) {
        char hex[GIT_OID_HEXSZ + 1];
        git_oid_tostr(hex, sizeof hex, annotated);
        static_cast<std::vector<std::string>*>(payload)->push_back(hex);
        return 0;
      },
      &shas);
  if (rc == GIT_ENOTFOUND) {
    return {};
  }
  if (rc != 0) {
    throw Error("cannot list " + m_ref + ": " + git_error_text());
  }
  std::sort(shas.begin(), shas.end());
  return shas;
}

std::optional<RunFile> GitNotesStore::load(const std::string& env_key, const std::string& sha) const {
  require_env_key(env_key);
  std::optional<std::string> text = read_note(sha);
  if (!text) {
    return std::nullopt;
  }
  Note note = parse_note(*text, note_name(sha));
  auto it = note.find(env_key);
  if (it == note.end() || it->second.baseline.empty()) {
    return std::nullopt;
  }
  // Blank lines in front keep parse_run's line numbers equal to the note's.
  std::istringstream in(std::string(static_cast<size_t>(it->second.baseline_first_line - 1), '\n') +
                        joined(it->second.baseline));
  RunFile run = parse_run(in, note_name(sha));
  if (run.header.environment.key() != env_key || run.header.commit.sha != sha) {
    throw Error(note_name(sha) + ": the section for " + env_key + " holds environment " + run.header.environment.key() +
                " and commit " + run.header.commit.sha +
                "; the note was copied or edited by hand; store it again with driftgate baseline update");
  }
  return run;
}

bool GitNotesStore::contains(const std::string& env_key, const std::string& sha) const {
  require_env_key(env_key);
  std::optional<std::string> text = read_note(sha);
  if (!text) {
    return false;
  }
  Note note = parse_note(*text, note_name(sha));
  auto it = note.find(env_key);
  return it != note.end() && !it->second.baseline.empty();
}

std::string GitNotesStore::save(const RunFile& run) { return save_accepted(run, ""); }

std::string GitNotesStore::save_accepted(const RunFile& run, const std::string& acceptance_line) {
  std::string env_key = run.header.environment.key();
  const std::string& sha = run.header.commit.sha;
  require_env_key(env_key);
  require_commit_sha(sha);
  std::ostringstream content;
  write_run(content, canonical_baseline(run));
  NotesLock lock(m_lock_path);
  std::optional<std::string> text = read_note(sha);
  Note note = text ? parse_note(*text, note_name(sha)) : Note{};
  Section& section = note[env_key];
  section.baseline.clear();
  std::istringstream lines(content.str());
  for (std::string line; std::getline(lines, line);) {
    section.baseline.push_back(line);
  }
  if (!acceptance_line.empty()) {
    section.accepted.push_back(acceptance_line);
  }
  write_note(sha, render_note(note));
  return location(env_key, sha);
}

std::vector<std::pair<std::string, std::string>> GitNotesStore::acceptance_log(const std::string& env_key,
                                                                               const std::string& sha) const {
  std::vector<std::pair<std::string, std::string>> log;
  std::optional<std::string> text = read_note(sha);
  if (!text) {
    return log;
  }
  Note note = parse_note(*text, note_name(sha));
  auto it = note.find(env_key);
  if (it == note.end()) {
    return log;
  }
  for (size_t i = 0; i < it->second.accepted.size(); ++i) {
    log.emplace_back(note_name(sha) + ":" + std::to_string(it->second.accepted_first_line + static_cast<int>(i)),
                     it->second.accepted[i]);
  }
  return log;
}

bool GitNotesStore::remove(const std::string& env_key, const std::string& sha) {
  require_env_key(env_key);
  NotesLock lock(m_lock_path);
  std::optional<std::string> text = read_note(sha);
  if (!text) {
    return false;
  }
  Note note = parse_note(*text, note_name(sha));
  if (note.erase(env_key) == 0) {
    return false;
  }
  write_note(sha, render_note(note));
  return true;
}

std::vector<std::string> GitNotesStore::env_keys() const {
  std::vector<std::string> keys;
  for (const auto& sha : annotated_commits()) {
    for (const auto& [key, section] : parse_note(read_note(sha).value_or(""), note_name(sha))) {
      if (!section.baseline.empty() && std::find(keys.begin(), keys.end(), key) == keys.end()) {
        keys.push_back(key);
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<std::string> GitNotesStore::shas(const std::string& env_key) const {
  require_env_key(env_key);
  std::vector<std::string> shas;
  for (const auto& sha : annotated_commits()) {
    Note note = parse_note(read_note(sha).value_or(""), note_name(sha));
    auto it = note.find(env_key);
    if (it != note.end() && !it->second.baseline.empty()) {
      shas.push_back(sha);
    }
  }
  return shas;
}

}  // namespace driftgate

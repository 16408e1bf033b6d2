#include "differ/baseline_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/file_util.h"
#include "core/input_file.h"

namespace driftgate {

namespace {

namespace fs = std::filesystem;

constexpr const char* k_lock_name = ".lock";
constexpr const char* k_ignore_name = ".gitignore";

// Keeps the store's lock file out of `git add baselines/`: a .gitignore naming it, written
// once beside it (an existing .gitignore is the user's and left alone).
void ignore_lock_file(const std::string& root) {
  std::error_code ec;
  fs::path ignore = fs::path(root) / k_ignore_name;
  if (!fs::exists(ignore, ec)) {
    write_file_atomic(ignore.string(),
                      std::string("# driftgate's lock file for concurrent writers\n") + k_lock_name + "\n");
  }
}
constexpr const char* k_suffix = ".jsonl";
constexpr const char* k_acceptance_suffix = ".accepted.jsonl";

bool is_lower_hex(const std::string& text, size_t length) {
  if (text.size() != length) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Holds an exclusive flock on a file for its lifetime. flock locks belong to the
// open file description, so two threads that each open the lock file exclude each
// other as well as two processes do.
class ExclusiveLock {
 public:
  explicit ExclusiveLock(const std::string& path) {
    m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0) {
      throw Error(path + ": cannot open the baseline store's lock file (" + std::strerror(errno) +
                  "); check that the store directory is writable");
    }
    while (::flock(m_fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        std::string reason = std::strerror(errno);
        ::close(m_fd);
        throw Error(path + ": cannot lock the baseline store (" + reason + ")");
      }
    }
  }
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;
  ~ExclusiveLock() {
    ::flock(m_fd, LOCK_UN);
    ::close(m_fd);
  }

 private:
  int m_fd = -1;
};

// Sorted names of the entries of `dir` that `keep` accepts; empty when `dir` does not exist.
template <typename Keep>
std::vector<std::string> list_directory(const std::string& dir, Keep keep) {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return names;
  }
  fs::directory_iterator it(dir, ec);
  if (ec) {
    throw Error(dir + ": cannot list the baseline store (" + ec.message() + ")");
  }
  for (const auto& entry : it) {
    std::string name = entry.path().filename().string();
    if (keep(entry, name)) {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

bool is_env_key(const std::string& text) { return is_lower_hex(text, 16); }

bool is_commit_sha(const std::string& text) { return is_lower_hex(text, 40); }

void require_env_key(const std::string& env_key) {
  if (!is_env_key(env_key)) {
    throw Error("invalid environment key '" + env_key +
                "': expected 16 lowercase hex digits (as printed by driftgate env)");
  }
}

void require_commit_sha(const std::string& sha) {
  if (!is_commit_sha(sha)) {
    throw Error("invalid commit SHA '" + sha +
                "' for a baseline: expected 40 lowercase hex digits; store runs made inside a git checkout");
  }
}

RunFile canonical_baseline(const RunFile& run) {
  RunFile copy = run;
  std::sort(copy.checks.begin(), copy.checks.end(),
            [](const CheckRecord& a, const CheckRecord& b) { return a.id < b.id; });
  return copy;
}

DirectoryStore::DirectoryStore(std::string root) : m_root(std::move(root)) {}

bool DirectoryStore::exists() const {
  std::error_code ec;
  return fs::is_directory(m_root, ec);
}

std::string DirectoryStore::path_of(const std::string& env_key, const std::string& sha) const {
  require_env_key(env_key);
  require_commit_sha(sha);
  return (fs::path(m_root) / env_key / (sha + k_suffix)).string();
}

bool DirectoryStore::contains(const std::string& env_key, const std::string& sha) const {
  // Anything at the path counts: a FIFO, a directory or a link to /dev/zero where a
  // baseline belongs is an error when read (core/input_file.h), never a missing baseline.
  std::error_code ec;
  return fs::exists(fs::symlink_status(path_of(env_key, sha), ec));
}

std::optional<RunDigest> BaselineStore::load_digest(const std::string& env_key, const std::string& sha,
                                                    const RunDigest* /*like*/) const {
  std::optional<RunFile> run = load(env_key, sha);
  if (!run) {
    return std::nullopt;
  }
  return digest_of(std::make_shared<const RunFile>(std::move(*run)));
}

namespace {

// A stored file must hold the baseline its path names.
void require_named(const std::string& path, const RunHeader& header, const std::string& env_key,
                   const std::string& sha) {
  std::string stored_key = header.environment.key();
  if (stored_key != env_key || header.commit.sha != sha) {
    throw Error(path + ": holds environment " + stored_key + " and commit " + header.commit.sha +
                ", not the ones its path names; the file was moved or edited by hand; store it again with "
                "driftgate baseline update");
  }
}

}  // namespace

std::optional<RunFile> DirectoryStore::load(const std::string& env_key, const std::string& sha) const {
  if (!contains(env_key, sha)) {
    return std::nullopt;
  }
  std::string path = path_of(env_key, sha);
  RunFile run = read_run_file(path, k_baseline_file);
  require_named(path, run.header, env_key, sha);
  return run;
}

std::optional<RunDigest> DirectoryStore::load_digest(const std::string& env_key, const std::string& sha,
                                                     const RunDigest* like) const {
  if (!contains(env_key, sha)) {
    return std::nullopt;
  }
  std::string path = path_of(env_key, sha);
  RunDigest digest = read_run_digest(path, like, k_baseline_file);
  require_named(path, digest.header, env_key, sha);
  return digest;
}

std::string DirectoryStore::save(const RunFile& run) { return save_accepted(run, ""); }

std::string DirectoryStore::save_accepted(const RunFile& run, const std::string& acceptance_line) {
  std::string env_key = run.header.environment.key();
  std::string path = path_of(env_key, run.header.commit.sha);
  std::ostringstream content;
  write_run(content, canonical_baseline(run));
  std::error_code ec;
  fs::create_directories(m_root, ec);
  if (ec) {
    throw Error(m_root + ": cannot create the baseline store (" + ec.message() + ")");
  }
  ExclusiveLock lock((fs::path(m_root) / k_lock_name).string());
  ignore_lock_file(m_root);
  write_file_atomic(path, content.str());
  if (!acceptance_line.empty()) {
    std::string log_path = acceptance_path_of(env_key, run.header.commit.sha);
    std::string log = fs::exists(fs::symlink_status(log_path, ec)) ? read_input_file(log_path, k_acceptance_log) : "";
    if (!log.empty() && log.back() != '\n') {
      throw Error(log_path + ": the last line is truncated; fix or remove the line before accepting again");
    }
    write_file_atomic(log_path, log + acceptance_line + "\n");
  }
  return env_key + "/" + run.header.commit.sha + k_suffix;
}

std::string DirectoryStore::acceptance_path_of(const std::string& env_key, const std::string& sha) const {
  require_env_key(env_key);
  require_commit_sha(sha);
  return (fs::path(m_root) / env_key / (sha + k_acceptance_suffix)).string();
}

std::vector<std::pair<std::string, std::string>> DirectoryStore::acceptance_log(const std::string& env_key,
                                                                                const std::string& sha) const {
  std::vector<std::pair<std::string, std::string>> lines;
  std::string path = acceptance_path_of(env_key, sha);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    return lines;
  }
  std::istringstream in(read_input_file(path, k_acceptance_log));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    lines.emplace_back(path + ":" + std::to_string(number), line);
  }
  return lines;
}

bool DirectoryStore::remove(const std::string& env_key, const std::string& sha) {
  std::string path = path_of(env_key, sha);
  std::string log_path = acceptance_path_of(env_key, sha);
  ExclusiveLock lock((fs::path(m_root) / k_lock_name).string());
  std::error_code ec;
  bool removed = fs::remove(path, ec);
  if (ec) {
    throw Error(path + ": cannot remove the baseline (" + ec.message() + ")");
  }
  fs::remove(log_path, ec);
  if (ec) {
    throw Error(log_path + ": cannot remove the acceptance log (" + ec.message() + ")");
  }
  return removed;
}

std::vector<std::string> DirectoryStore::shas_newest_written_first(const std::string& env_key) const {
  std::vector<std::pair<fs::file_time_type, std::string>> written;
  for (const auto& sha : shas(env_key)) {
    std::error_code ec;
    written.emplace_back(fs::last_write_time(path_of(env_key, sha), ec), sha);
  }
  std::sort(written.begin(), written.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<std::string> order;
  for (const auto& entry : written) {
    order.push_back(entry.second);
  }
  return order;
}

std::vector<std::string> DirectoryStore::env_keys() const {
  return list_directory(m_root, [](const fs::directory_entry& entry, const std::string& name) {
    std::error_code ec;
    return is_env_key(name) && entry.is_directory(ec);
  });
}

std::vector<std::string> DirectoryStore::shas(const std::string& env_key) const {
  require_env_key(env_key);
  std::vector<std::string> names = list_directory(
      (fs::path(m_root) / env_key).string(), [](const fs::directory_entry& /*entry*/, const std::string& name) {
        std::string suffix = k_suffix;
        // Whatever the entry is: one that is not a regular file fails when read, by name.
        return name.size() == 40 + suffix.size() && name.compare(40, suffix.size(), suffix) == 0 &&
               is_commit_sha(name.substr(0, 40));
      });
  for (auto& name : names) {
    name.resize(40);
  }
  return names;
}

}  // namespace driftgate

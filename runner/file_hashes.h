// Content hashes of the run's configs and models, computed beside the forwards.
//
// It exists because hashing is the runner's largest fixed cost after process start
// (a 47 MB resnet18 is ~0.1 s of SHA-1, a 77 MB RetinaNet more) and the runner
// process sits idle while an experiment's forked child loads and runs its backends.
// start() forks one hasher process that hashes every path and
// sends the results back over a pipe; wait() collects them. The hashes are exactly
// hash_file()'s (git blob ids, computed with OpenSSL's faster SHA-1), and a file
// that cannot be hashed throws the same driftgate::Error from wait(). A process,
// not a thread: the runner forks its experiment children meanwhile, and a fork
// never copies another thread's locks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runner/subprocess.h"

namespace driftgate {

class FileHashes {
 public:
  // Starts hashing `paths` in a forked process (in this process, before returning,
  // when fork fails).
  static FileHashes start(std::vector<std::string> paths);

  FileHashes(FileHashes&& other) noexcept;
  FileHashes& operator=(FileHashes&&) = delete;
  FileHashes(const FileHashes&) = delete;
  FileHashes& operator=(const FileHashes&) = delete;
  // Kills and reaps a hasher that was never waited for.
  ~FileHashes();

  // One hash per path, in order. Throws driftgate::Error for the first path that
  // could not be hashed (the message hash_file() gives) or when the hasher died.
  // Call once.
  std::vector<std::string> wait();

 private:
  FileHashes() = default;

  std::vector<std::string> m_paths;
  std::vector<std::string> m_hashes;  // filled here when hashed in this process
  std::string m_error;                // likewise
  std::optional<Child> m_hasher;      // empty when hashed in this process, and once waited for
};

}  // namespace driftgate

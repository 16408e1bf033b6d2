// A file written in pieces and made visible all at once.
//
// write_file_atomic (core/file_util.h) is this with one piece. A large output, such
// as the proposed baseline of a failing diff over a million checks (about a
// gigabyte), is written as it is produced instead of being built in memory first.
// The contract is write_file_atomic's: a temporary file in the same directory,
// fsync, rename over the target, fsync of the directory; a reader sees the old file
// or the whole new one. A device or FIFO (/dev/null, a pipe) is written straight
// into; a symlink has its target replaced.
//
// Durability::k_replace drops the two fsyncs and keeps the rest: readers still see the
// old file or the whole new one, but a power cut may lose the new one. It is for large
// outputs derived from files that stay (the proposed baseline of a failing diff, ~1 GB
// at a million checks, whose fsync alone took 3.6 s on this project's CI disk);
// baselines in a store are always durable.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace driftgate {

enum class Durability {
  k_durable,  // fsync the file before the rename and the directory after it
  k_replace,  // rename only: atomic for readers, not across a power cut
};

class AtomicFile {
 public:
  // Creates the temporary file (and missing parent directories). Throws
  // driftgate::Error naming `path` when it cannot.
  explicit AtomicFile(const std::string& path, Durability durability = Durability::k_durable);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends bytes. Throws driftgate::Error (the temporary file is removed; the
  // target is untouched) when they cannot be written.
  void write(std::string_view bytes);
  // Appends the pieces in order with as few system calls as writev(2) allows, straight
  // from where they are (a mapped file's lines need no copy). Same errors as write().
  void write(const std::vector<std::string_view>& pieces);
  // Makes the written bytes the content of `path`. Throws driftgate::Error, leaving
  // the old file, when it cannot.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& failure);

  std::string m_requested;  // the path as given, for messages
  std::string m_path;       // the file replaced (a symlink's target)
  std::string m_temp;       // "" when writing straight into a device or FIFO
  int m_fd = -1;
  bool m_committed = false;
  Durability m_durability;
};

}  // namespace driftgate

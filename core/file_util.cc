#include "core/file_util.h"

#include <fcntl.h>
#include <git2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/git_repo.h"
#include "core/input_file.h"

namespace driftgate {

std::string read_file(const std::string& path) { return read_input_file(path, k_any_file); }

void write_file_atomic(const std::string& path, const std::string& content) {
  AtomicFile file(path);
  file.write(content);
  file.commit();
}

std::string hash_file(const std::string& path) {
  ensure_libgit2();
  git_oid oid;
  if (git_odb_hashfile(&oid, path.c_str(), GIT_OBJECT_BLOB) != 0) {
    const git_error* error = git_error_last();
    throw Error(path + ": cannot hash (" + std::string(error != nullptr ? error->message : "unknown error") + ")");
  }
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
}

bool write_fully(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      return false;
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

bool read_fully(int fd, char* data, std::size_t size) {
  while (size > 0) {
    ssize_t got = ::read(fd, data, size);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      return false;
    }
    data += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

std::string parent_directory(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

std::string resolve_path(const std::string& base_dir, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_absolute()) {
    return p.lexically_normal().string();
  }
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

}  // namespace driftgate

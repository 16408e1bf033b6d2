#include "core/file_util.h"

#include <fcntl.h>
#include <git2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace driftgate {

namespace {

std::string os_error() { return std::strerror(errno); }

// Writes all of `content` to `fd`, retrying short writes.
bool write_all(int fd, const std::string& content) {
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
  return true;
}

}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(path + ": cannot read (" + os_error() + ")");
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

void write_file_atomic(const std::string& requested_path, const std::string& content) {
  std::string path = requested_path;
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
    // Replace what the link points to, not the link itself.
    std::error_code ec;
    std::filesystem::path target = std::filesystem::canonical(path, ec);
    if (!ec) {
      path = target.string();
    }
  }
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    if (S_ISDIR(info.st_mode)) {
      throw Error(requested_path + ": is a directory; name a file to write");
    }
    // A device or FIFO (/dev/null, /dev/stdout, a pipe): renaming over it would replace
    // the device node itself, so write straight into it.
    int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
    bool ok = fd >= 0 && write_all(fd, content);
    std::string failure = ok ? "" : os_error();
    if (fd >= 0) {
      ::close(fd);
    }
    if (!ok) {
      throw Error(requested_path + ": cannot write (" + failure + ")");
    }
    return;
  }
  std::string directory = parent_directory(path);
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    throw Error(path + ": cannot create directory " + directory + " (" + ec.message() + ")");
  }
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    throw Error(path + ": cannot create a temporary file in " + directory + " (" + os_error() +
                "); check that the directory is writable");
  }
  ::fchmod(fd, 0644);
  bool ok = write_all(fd, content) && ::fsync(fd) == 0;
  std::string failure = ok ? "" : os_error();
  if (::close(fd) != 0 && ok) {
    ok = false;
    failure = os_error();
  }
  if (ok && ::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    failure = os_error();
  }
  if (!ok) {
    ::unlink(temp.c_str());
    throw Error(path + ": cannot write (" + failure + "); nothing was changed");
  }
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

std::string hash_file(const std::string& path) {
  git_libgit2_init();
  git_oid oid;
  if (git_odb_hashfile(&oid, path.c_str(), GIT_OBJECT_BLOB) != 0) {
    const git_error* error = git_error_last();
    throw Error(path + ": cannot hash (" + std::string(error != nullptr ? error->message : "unknown error") + ")");
  }
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
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

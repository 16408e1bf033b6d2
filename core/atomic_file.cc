#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/file_util.h"

namespace driftgate {

namespace {

std::string os_error() { return std::strerror(errno); }

}  // namespace

AtomicFile::AtomicFile(const std::string& path, Durability durability)
    : m_requested(path), m_path(path), m_durability(durability) {
  struct stat info {};
  if (::lstat(m_path.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
    // Replace what the link points to, not the link itself.
    std::error_code ec;
    std::filesystem::path target = std::filesystem::canonical(m_path, ec);
    if (!ec) {
      m_path = target.string();
    }
  }
  if (::stat(m_path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    if (S_ISDIR(info.st_mode)) {
      throw Error(m_requested + ": is a directory; name a file to write");
    }
    // A device or FIFO (/dev/null, /dev/stdout, a pipe): renaming over it would replace
    // the device node itself, so write straight into it.
    m_fd = ::open(m_path.c_str(), O_WRONLY | O_TRUNC);
    if (m_fd < 0) {
      throw Error(m_requested + ": cannot write (" + os_error() + ")");
    }
    return;
  }
  std::string directory = parent_directory(m_path);
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    throw Error(m_path + ": cannot create directory " + directory + " (" + ec.message() + ")");
  }
  m_temp = m_path + ".tmp.XXXXXX";
  m_fd = ::mkstemp(m_temp.data());
  if (m_fd < 0) {
    throw Error(m_path + ": cannot create a temporary file in " + directory + " (" + os_error() +
                "); check that the directory is writable");
  }
  ::fchmod(m_fd, 0644);
}

AtomicFile::~AtomicFile() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
  if (!m_committed && !m_temp.empty()) {
    ::unlink(m_temp.c_str());
  }
}

void AtomicFile::fail(const std::string& failure) {
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
  if (m_temp.empty()) {
    throw Error(m_requested + ": cannot write (" + failure + ")");
  }
  ::unlink(m_temp.c_str());
  m_temp.clear();
  throw Error(m_path + ": cannot write (" + failure + "); nothing was changed");
}

void AtomicFile::write(std::string_view bytes) {
  if (m_fd < 0 || m_committed) {
    throw Error(m_requested + ": written after it was finished or failed");
  }
  if (!write_fully(m_fd, bytes.data(), bytes.size())) {
    fail(os_error());
  }
}

void AtomicFile::write(const std::vector<std::string_view>& pieces) {
  if (m_fd < 0 || m_committed) {
    throw Error(m_requested + ": written after it was finished or failed");
  }
  constexpr size_t k_batch = 1024;  // IOV_MAX on Linux
  size_t next = 0;                  // the first piece not wholly written
  size_t done = 0;                  // bytes of pieces[next] already written
  while (next < pieces.size()) {
    struct iovec batch[k_batch];
    int count = 0;
    for (size_t i = next; i < pieces.size() && count < static_cast<int>(k_batch); ++i) {
      size_t skip = i == next ? done : 0;
      if (pieces[i].size() > skip) {
        batch[count].iov_base = const_cast<char*>(pieces[i].data() + skip);
        batch[count].iov_len = pieces[i].size() - skip;
        ++count;
      }
    }
    if (count == 0) {
      return;  // only empty pieces were left
    }
    ssize_t written = ::writev(m_fd, batch, count);
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      fail(written < 0 ? os_error() : "no progress");
    }
    // Past what was written: whole pieces, then part of one.
    auto left = static_cast<size_t>(written);
    while (next < pieces.size() && left >= pieces[next].size() - done) {
      left -= pieces[next].size() - done;
      done = 0;
      ++next;
    }
    done += left;
  }
}

void AtomicFile::commit() {
  if (m_fd < 0 || m_committed) {
    throw Error(m_requested + ": finished twice or after a failure");
  }
  if (m_temp.empty()) {
    ::close(m_fd);
    m_fd = -1;
    m_committed = true;
    return;
  }
  if (m_durability == Durability::k_durable && ::fsync(m_fd) != 0) {
    fail(os_error());
  }
  int fd = m_fd;
  m_fd = -1;
  if (::close(fd) != 0 || ::rename(m_temp.c_str(), m_path.c_str()) != 0) {
    fail(os_error());
  }
  m_committed = true;
  if (m_durability != Durability::k_durable) {
    return;
  }
  int dir_fd = ::open(parent_directory(m_path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace driftgate

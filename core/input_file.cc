#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <streambuf>

#include "core/error.h"

namespace driftgate {

namespace {

constexpr std::size_t k_chunk = std::size_t{1} << 16;

// "a FIFO (named pipe)" for a file type that is not a regular file.
std::string describe_type(mode_t mode) {
  if (S_ISFIFO(mode)) {
    return "a FIFO (named pipe)";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  return "not a regular file";
}

// "a run file", "an experiment config".
std::string with_article(const char* name) {
  return (std::string("aeiou").find(name[0]) != std::string::npos ? "an " : "a ") + std::string(name);
}

[[noreturn]] void refuse_type(const std::string& path, const InputKind& kind, mode_t mode) {
  throw Error(path + ": " + describe_type(mode) + ", not a regular file; driftgate reads " + with_article(kind.name) +
              " only from a regular file (" +
              (kind.fix != nullptr ? kind.fix : "save the data to a file and pass that") + ")");
}

[[noreturn]] void refuse_size(const std::string& path, const InputKind& kind, const std::string& size) {
  throw Error(path + ": " + size + ", over the limit of " + describe_size(kind.max_bytes) + " for " +
              with_article(kind.name) + "; is this the right file?");
}

}  // namespace

std::string non_regular_file_type(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode)) {
    return "";
  }
  return describe_type(info.st_mode);
}

std::string describe_size(std::uint64_t bytes) {
  if (bytes < 1024) {
    return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  }
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  std::array<char, 32> text{};
  if (value == static_cast<double>(static_cast<std::uint64_t>(value))) {
    std::snprintf(text.data(), text.size(), "%llu %s", static_cast<unsigned long long>(value), units[unit]);
  } else {
    std::snprintf(text.data(), text.size(), "%.1f %s", value, units[unit]);
  }
  return text.data();
}

// Reads the descriptor in chunks; throws past the cap or on a read error.
class InputFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(InputFile& file) : m_file(file) {}

  // Appends up to `size` bytes to `out`; 0 at the end of the file.
  std::size_t read_some(char* out, std::size_t size) {
    for (;;) {
      ssize_t got = ::read(m_file.m_fd, out, size);
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got < 0) {
        throw Error(m_file.m_path + ": cannot read " + m_file.m_kind.name + " (" + std::strerror(errno) + ")");
      }
      m_total += static_cast<std::uint64_t>(got);
      if (m_total > m_file.m_kind.max_bytes) {
        refuse_size(m_file.m_path, m_file.m_kind, "grew while being read");
      }
      return static_cast<std::size_t>(got);
    }
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) {
      return traits_type::to_int_type(*gptr());
    }
    std::size_t got = read_some(m_chunk.data(), m_chunk.size());
    if (got == 0) {
      return traits_type::eof();
    }
    setg(m_chunk.data(), m_chunk.data(), m_chunk.data() + got);
    return traits_type::to_int_type(*gptr());
  }

 private:
  InputFile& m_file;
  std::uint64_t m_total = 0;
  std::array<char, k_chunk> m_chunk{};
};

InputFile::InputFile(const std::string& path, const InputKind& kind) : m_path(path), m_kind(kind) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (m_fd < 0) {
    int error = errno;
    struct stat info {};
    if (error == ENXIO && ::stat(path.c_str(), &info) == 0) {
      refuse_type(path, kind, info.st_mode);  // a socket cannot be opened at all
    }
    throw Error(path + ": cannot open " + kind.name + " (" + std::strerror(error) + ")");
  }
  struct stat info {};
  if (::fstat(m_fd, &info) != 0) {
    int error = errno;
    ::close(m_fd);
    throw Error(path + ": cannot open " + kind.name + " (" + std::strerror(error) + ")");
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(m_fd);
    refuse_type(path, kind, info.st_mode);
  }
  m_size = static_cast<std::uint64_t>(info.st_size);
  if (m_size > kind.max_bytes) {
    ::close(m_fd);
    refuse_size(path, kind, describe_size(m_size));
  }
  int flags = ::fcntl(m_fd, F_GETFL);
  if (flags >= 0) {
    ::fcntl(m_fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  m_buffer = std::make_unique<Buffer>(*this);
}

InputFile::~InputFile() {
  m_stream.reset();
  m_buffer.reset();
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

std::string InputFile::read_all() {
  std::string content;
  content.reserve(static_cast<std::size_t>(m_size));
  std::size_t at = 0;
  for (;;) {
    if (content.size() < at + k_chunk) {
      // The whole file in one go when its size holds; a chunk more at a time when it grew.
      content.resize(std::max<std::size_t>(at + k_chunk, static_cast<std::size_t>(m_size) + 1));
    }
    std::size_t got = m_buffer->read_some(content.data() + at, content.size() - at);
    if (got == 0) {
      break;
    }
    at += got;
  }
  content.resize(at);
  return content;
}

std::istream& InputFile::stream() {
  if (!m_stream) {
    m_stream = std::make_unique<std::istream>(m_buffer.get());
    // The buffer's Error reaches the caller instead of becoming a failbit.
    m_stream->exceptions(std::ios::badbit);
  }
  return *m_stream;
}

std::string read_input_file(const std::string& path, const InputKind& kind) {
  InputFile file(path, kind);
  return file.read_all();
}

}  // namespace driftgate

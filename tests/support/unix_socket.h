// A Unix socket bound at a path, for the tests that hand a socket where a file is expected;
// closed (the path stays, as a socket file) when the object goes.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace driftgate::test {

class BoundUnixSocket {
 public:
  explicit BoundUnixSocket(const std::string& path) : m_fd(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (m_fd < 0 || path.size() >= sizeof(address.sun_path)) {
      throw std::runtime_error("cannot make a Unix socket at " + path);
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    if (::bind(m_fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(m_fd);
      throw std::runtime_error("cannot bind a Unix socket at " + path);
    }
  }
  BoundUnixSocket(const BoundUnixSocket&) = delete;
  BoundUnixSocket& operator=(const BoundUnixSocket&) = delete;
  ~BoundUnixSocket() { ::close(m_fd); }

 private:
  int m_fd;
};

}  // namespace driftgate::test

#include "runner/subprocess.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace driftgate {
namespace {

// noexcept: an exception escaping `body` calls std::terminate here, in the child,
// instead of unwinding into the parent's code.
[[noreturn]] void run_child(const std::function<int(int fd)>& body, int fd) noexcept { ::_exit(body(fd)); }

// Waits until `fd` is readable or `deadline` comes: false on the deadline.
bool wait_readable(int fd, Deadline deadline) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return false;
    }
    pollfd descriptor{fd, POLLIN, 0};
    int ready = ::poll(&descriptor, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    return ready != 0;
  }
}

// One read(), retrying EINTR: bytes read, 0 at the end or on an error.
size_t read_some(int fd, char* data, size_t size) {
  while (true) {
    ssize_t got = ::read(fd, data, size);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    return got <= 0 ? 0 : static_cast<size_t>(got);
  }
}

}  // namespace

Deadline deadline_in(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  }
  if (WIFEXITED(status)) {
    return "exited with code " + std::to_string(WEXITSTATUS(status));
  }
  return "stopped";
}

int wait_for_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

bool reap_if_exited(pid_t pid) {
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  return done != 0;  // reaped, or not ours any more
}

std::optional<Child> Child::start(const std::function<int(int fd)>& body, StartFailure* failure) {
  int fds[2];
  if (::pipe(fds) != 0) {
    *failure = {true, std::strerror(errno)};
    return std::nullopt;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    *failure = {false, std::strerror(errno)};
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(body, fds[1]);
  }
  ::close(fds[1]);
  return Child(pid, fds[0]);
}

Child::Child(Child&& other) noexcept : m_pid(std::exchange(other.m_pid, -1)), m_fd(std::exchange(other.m_fd, -1)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    close_pipe();
    kill_and_reap();
    m_pid = std::exchange(other.m_pid, -1);
    m_fd = std::exchange(other.m_fd, -1);
  }
  return *this;
}

Child::~Child() {
  close_pipe();
  kill_and_reap();
}

ReadResult Child::read_exact(char* data, size_t size, Deadline deadline) {
  while (size > 0) {
    if (!wait_readable(m_fd, deadline)) {
      return ReadResult::k_timeout;
    }
    const size_t got = read_some(m_fd, data, size);
    if (got == 0) {
      return ReadResult::k_eof;
    }
    data += got;
    size -= got;
  }
  return ReadResult::k_ok;
}

bool Child::read_to_end(std::string& data, Deadline deadline) {
  char buffer[65536];
  while (true) {
    if (!wait_readable(m_fd, deadline)) {
      return false;
    }
    const size_t got = read_some(m_fd, buffer, sizeof buffer);
    if (got == 0) {
      return true;
    }
    data.append(buffer, got);
  }
}

void Child::close_pipe() {
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
}

int Child::reap() {
  if (m_pid <= 0) {
    return 0;  // waitpid(-1) would take any child of this process
  }
  const int status = wait_for_exit(m_pid);
  m_pid = -1;
  return status;
}

int Child::kill_and_reap() {
  if (m_pid > 0) {
    ::kill(m_pid, SIGKILL);
  }
  return reap();
}

pid_t Child::release() { return std::exchange(m_pid, -1); }

}  // namespace driftgate

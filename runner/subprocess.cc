#include "runner/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

extern char** environ;

namespace driftgate {
namespace {

// noexcept: an exception escaping `body` calls std::terminate here, in the child,
// instead of unwinding into the parent's code.
[[noreturn]] void run_child(const std::function<int(int fd)>& body, int fd) noexcept { ::_exit(body(fd)); }

// Waits until `fd` is readable or `deadline` comes: false on the deadline. Without a
// deadline the read itself waits (one system call per read, not two).
bool wait_readable(int fd, Deadline deadline) {
  if (deadline == k_no_deadline) {
    return true;
  }
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

// Writing to a child that is gone must fail the write, not kill this process with SIGPIPE:
// the signal is blocked for this thread around the write and a pending one is consumed.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&m_set);
    sigaddset(&m_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    m_was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &m_set, &m_old);
  }
  ~SigpipeBlock() {
    if (!m_was_pending) {
      const timespec zero{0, 0};
      while (sigtimedwait(&m_set, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t m_set;
  sigset_t m_old;
  bool m_was_pending = false;
};

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
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

std::optional<Child> Child::spawn(const std::vector<std::string>& argv, bool to_stdin, StartFailure* failure) {
  int from_child[2] = {-1, -1};
  int to_child[2] = {-1, -1};
  if (::pipe2(from_child, O_CLOEXEC) != 0 || (to_stdin && ::pipe2(to_child, O_CLOEXEC) != 0)) {
    *failure = {true, std::strerror(errno)};
    for (int& fd : from_child) {
      close_fd(fd);
    }
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (to_stdin) {
    posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  }
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  std::vector<std::string> arguments = argv;
  std::vector<char*> pointers;
  for (std::string& argument : arguments) {
    pointers.push_back(argument.data());
  }
  pointers.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, arguments.front().c_str(), &actions, nullptr, pointers.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close_fd(to_child[0]);
  close_fd(from_child[1]);
  if (spawned != 0) {
    *failure = {false, std::strerror(spawned)};
    close_fd(to_child[1]);
    close_fd(from_child[0]);
    return std::nullopt;
  }
  return Child(pid, from_child[0], to_child[1]);
}

Child::Child(Child&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)), m_fd(std::exchange(other.m_fd, -1)), m_to(std::exchange(other.m_to, -1)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    close_pipe();
    kill_and_reap();
    m_pid = std::exchange(other.m_pid, -1);
    m_fd = std::exchange(other.m_fd, -1);
    m_to = std::exchange(other.m_to, -1);
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

bool Child::read_to_end(std::string& data, Deadline deadline, size_t limit) {
  char buffer[65536];
  while (true) {
    if (data.size() > limit || !wait_readable(m_fd, deadline)) {
      return false;
    }
    const size_t got = read_some(m_fd, buffer, sizeof buffer);
    if (got == 0) {
      return true;
    }
    data.append(buffer, got);
  }
}

bool Child::write_all(const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  int error = 0;
  {
    SigpipeBlock block;
    while (size > 0) {
      const ssize_t written = ::write(m_to, bytes, size);
      if (written < 0 && errno == EINTR) {
        continue;
      }
      if (written <= 0) {
        error = written < 0 ? errno : EPIPE;
        break;
      }
      bytes += written;
      size -= static_cast<size_t>(written);
    }
  }
  errno = error;  // the block's clean-up may have set it
  return error == 0;
}

void Child::close_pipe() {
  close_fd(m_fd);
  close_fd(m_to);
}

int Child::reap() {
  if (m_pid <= 0) {
    return 0;  // waitpid(-1) would take any child of this process
  }
  const int status = wait_for_exit(m_pid);
  m_pid = -1;
  return status;
}

std::optional<int> Child::reap_within(double seconds) {
  const Deadline deadline = deadline_in(seconds);
  while (m_pid > 0) {
    int status = 0;
    const pid_t done = ::waitpid(m_pid, &status, WNOHANG);
    if (done == m_pid) {
      m_pid = -1;
      return status;
    }
    if ((done < 0 && errno != EINTR) || std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    ::usleep(10000);
  }
  return std::nullopt;
}

int Child::kill_and_reap() {
  if (m_pid > 0) {
    ::kill(m_pid, SIGKILL);
  }
  return reap();
}

pid_t Child::release() { return std::exchange(m_pid, -1); }

}  // namespace driftgate

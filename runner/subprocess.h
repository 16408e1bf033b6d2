// A child process with a pipe from it to the parent: fork and the child's side (run a
// function, then _exit), or a program spawned with its stdin and stdout on pipes; reads
// with a deadline, writes, kill, reap, and the words for how the child ended.
//
// It exists because isolated checks (backend_run.cc), tier 2 localization
// (tier2_localize.cc) and file hashing (file_hashes.cc) each fork a child that sends
// its results back over a pipe, and the onnxruntime backends talk to a worker program
// over its stdin and stdout (onnx_worker.cc): each used to spell these mechanics out
// itself. The rule of backend_run.h holds for every fork: fork only from a process that
// never ran a multi-threaded OpenMP region (a spawn runs nothing of this process).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace driftgate {

using Deadline = std::chrono::steady_clock::time_point;

// `seconds` from now.
Deadline deadline_in(double seconds);

// For reads that wait as long as the child takes.
constexpr Deadline k_no_deadline = Deadline::max();

enum class ReadResult { k_ok, k_eof, k_timeout };

// How a child ended, from its waitpid status: "killed by signal 6 (Aborted)" or
// "exited with code 3".
std::string describe_exit(int status);

// Waits for child `pid` to end (retrying EINTR); its waitpid status.
int wait_for_exit(pid_t pid);

// Reaps child `pid` if it has ended, without waiting: false while it still runs.
bool reap_if_exited(pid_t pid);

class Child {
 public:
  // Why start() or spawn() failed: at pipe(), or at fork() or the spawn, and strerror of the error.
  struct StartFailure {
    bool at_pipe = false;
    std::string reason;
  };

  // Forks a child that runs `body(fd)`, fd being the pipe's write end, and _exits
  // with what it returns: no destructor or atexit handler runs there. An exception
  // escaping `body` ends the child through std::terminate (signal 6). Empty, with
  // `*failure` set, when pipe() or fork() fails.
  static std::optional<Child> start(const std::function<int(int fd)>& body, StartFailure* failure);

  // Starts the program at path `argv[0]` with `argv` and this process's environment
  // (posix_spawn: nothing of this process runs in the child), its stdout on the pipe the
  // read functions read and, with `to_stdin`, its stdin on a pipe write_all writes; its
  // stderr is this process's. Empty, with `*failure` set, when pipe() or the spawn fails
  // (a program that is not there, or not executable).
  static std::optional<Child> spawn(const std::vector<std::string>& argv, bool to_stdin, StartFailure* failure);

  Child(Child&& other) noexcept;
  // Ends this child as the destructor does, then takes `other`'s.
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // Closes the pipe, and kills and reaps a child neither reaped nor released.
  ~Child();

  pid_t pid() const { return m_pid; }

  // Reads exactly `size` bytes from the pipe before `deadline`.
  ReadResult read_exact(char* data, size_t size, Deadline deadline);

  // Appends what the child sends until it closes the pipe; false when `deadline`
  // comes first or `data` holds more than `limit` bytes (`data` then holds what came
  // before).
  bool read_to_end(std::string& data, Deadline deadline, size_t limit = SIZE_MAX);

  // Writes all of `data` to the child's stdin (spawn with `to_stdin`). False on an error
  // (errno says which): a child that is gone fails the write, SIGPIPE never ends this process.
  bool write_all(const void* data, size_t size);

  // Closes the pipes (to the child's stdin as well).
  void close_pipe();

  // Waits for the child to end; its waitpid status (0 when reaped or released already).
  int reap();

  // The child's waitpid status if it ends within `seconds` (it is then reaped), else
  // empty: it still runs.
  std::optional<int> reap_within(double seconds);

  // SIGKILL, then reap().
  int kill_and_reap();

  // Hands the child over unreaped (to wait_for_exit or reap_if_exited later); -1
  // when it was reaped already.
  pid_t release();

 private:
  Child(pid_t pid, int fd, int to = -1) : m_pid(pid), m_fd(fd), m_to(to) {}

  pid_t m_pid = -1;  // -1 once reaped or released
  int m_fd = -1;     // the pipe's read end; -1 once closed
  int m_to = -1;     // the write end of the pipe to a spawned child's stdin; -1 when none or closed
};

}  // namespace driftgate

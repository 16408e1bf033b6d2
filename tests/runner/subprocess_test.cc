// runner/subprocess.h driven by children that crash, hang, flood the pipe and exit
// with a code. In runner_isolation_test's binary: forking needs a process that never
// ran a multi-threaded OpenMP region.
#include "runner/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/file_util.h"

namespace driftgate {
namespace {

// An abort in a child leaves no core file behind.
void no_core_file() {
  rlimit none{0, 0};
  ::setrlimit(RLIMIT_CORE, &none);
}

Child start(const std::function<int(int fd)>& body) {
  Child::StartFailure failure;
  std::optional<Child> child = Child::start(body, &failure);
  if (!child) {
    throw std::runtime_error("cannot start a child: " + failure.reason);
  }
  return std::move(*child);
}

// True once `pid` is gone: killed and reaped (a zombie still answers signal 0).
bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

TEST(Subprocess, DescribesWaitStatusesAsLinuxEncodesThem) {
  EXPECT_EQ(describe_exit(3 << 8), "exited with code 3");
  EXPECT_EQ(describe_exit(0), "exited with code 0");
  EXPECT_EQ(describe_exit(6), "killed by signal 6 (Aborted)");
  EXPECT_EQ(describe_exit(9 | 0x80), "killed by signal 9 (Killed)");  // 0x80: a core was dumped
  EXPECT_EQ(describe_exit((19 << 8) | 0x7f), "stopped");              // stopped by SIGSTOP
}

TEST(Subprocess, ChildThatAbortsIsDescribedAsKilledBySignal6) {
  Child child = start([](int fd) {
    no_core_file();
    write_fully(fd, "before the crash", 16);
    std::abort();
    return 0;
  });
  std::string data;
  EXPECT_TRUE(child.read_to_end(data, deadline_in(60.0)));
  EXPECT_EQ(data, "before the crash");
  char byte = 0;
  EXPECT_EQ(child.read_exact(&byte, 1, deadline_in(60.0)), ReadResult::k_eof);
  const int status = child.reap();
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  EXPECT_EQ(describe_exit(status), "killed by signal 6 (Aborted)");
}

TEST(Subprocess, ExceptionEscapingTheChildEndsItWithSignal6) {
  Child child = start([](int) -> int {
    no_core_file();
    throw std::runtime_error("escapes the child's body");
  });
  std::string data;
  EXPECT_TRUE(child.read_to_end(data, deadline_in(60.0)));
  EXPECT_EQ(data, "");
  EXPECT_EQ(describe_exit(child.reap()), "killed by signal 6 (Aborted)");
}

TEST(Subprocess, HangingChildTimesOutAndIsKilledAndReaped) {
  std::optional<Child> child = start([](int fd) {
    write_fully(fd, "ab", 2);
    while (true) {
      ::pause();
    }
    return 0;
  });
  char two[2] = {0, 0};
  ASSERT_EQ(child->read_exact(two, 2, deadline_in(60.0)), ReadResult::k_ok);
  EXPECT_EQ(std::string(two, 2), "ab");
  const auto before = std::chrono::steady_clock::now();
  char byte = 0;
  EXPECT_EQ(child->read_exact(&byte, 1, deadline_in(0.3)), ReadResult::k_timeout);
  const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - before;
  EXPECT_GE(waited.count(), 0.25);
  EXPECT_LT(waited.count(), 10.0);
  std::string data;
  EXPECT_FALSE(child->read_to_end(data, deadline_in(0.2)));
  EXPECT_EQ(data, "");
  const pid_t pid = child->pid();
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(gone(pid));
  const int status = child->kill_and_reap();
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(describe_exit(status), "killed by signal 9 (Killed)");
  EXPECT_TRUE(gone(pid));
  EXPECT_EQ(child->release(), -1);  // reaped already
}

TEST(Subprocess, DestroyingAHangingChildKillsAndReapsIt) {
  pid_t pid = -1;
  {
    Child child = start([](int) {
      while (true) {
        ::pause();
      }
      return 0;
    });
    pid = child.pid();
    ASSERT_GT(pid, 0);
    EXPECT_FALSE(gone(pid));
  }
  EXPECT_TRUE(gone(pid));
}

// 4 MiB, 64 times a Linux pipe's default 64 KiB buffer: the child blocks in write
// until the parent reads.
std::vector<char> flood_bytes() {
  std::vector<char> bytes(size_t{4} << 20);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>((i * 131 + i / 65536) % 251);
  }
  return bytes;
}

TEST(Subprocess, FloodLargerThanThePipeBufferIsReadExactly) {
  const std::vector<char> sent = flood_bytes();
  Child child = start([&](int fd) { return write_fully(fd, sent.data(), sent.size()) ? 0 : 1; });
  std::vector<char> got(sent.size() + 1, '\0');
  ASSERT_EQ(child.read_exact(got.data(), sent.size(), deadline_in(60.0)), ReadResult::k_ok);
  EXPECT_EQ(child.read_exact(got.data() + sent.size(), 1, deadline_in(60.0)), ReadResult::k_eof);
  got.pop_back();
  EXPECT_TRUE(got == sent);
  EXPECT_EQ(describe_exit(child.reap()), "exited with code 0");
}

TEST(Subprocess, FloodIsReadToTheEnd) {
  const std::vector<char> sent = flood_bytes();
  Child child = start([&](int fd) { return write_fully(fd, sent.data(), sent.size()) ? 0 : 1; });
  std::string data;
  ASSERT_TRUE(child.read_to_end(data, deadline_in(60.0)));
  EXPECT_EQ(data.size(), size_t{4} << 20);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), sent.begin(), sent.end()));
  EXPECT_EQ(describe_exit(child.reap()), "exited with code 0");
}

TEST(Subprocess, ExitCodeIsWhatTheBodyReturns) {
  Child child = start([](int) { return 3; });
  std::string data;
  EXPECT_TRUE(child.read_to_end(data, deadline_in(60.0)));
  child.close_pipe();
  const int status = child.reap();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(describe_exit(status), "exited with code 3");
}

TEST(Subprocess, ReleasedChildIsReapedByPid) {
  Child child = start([](int) {
    while (true) {
      ::pause();
    }
    return 0;
  });
  const pid_t pid = child.release();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(child.release(), -1);
  EXPECT_FALSE(reap_if_exited(pid));  // still running
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  bool reaped = false;
  for (int i = 0; i < 1000 && !reaped; ++i) {
    reaped = reap_if_exited(pid);
    if (!reaped) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  EXPECT_TRUE(reaped);
  EXPECT_TRUE(gone(pid));
}

TEST(Subprocess, WaitForExitGivesTheStatusOfAReleasedChild) {
  Child child = start([](int) { return 7; });
  const pid_t pid = child.release();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(describe_exit(wait_for_exit(pid)), "exited with code 7");
  EXPECT_TRUE(gone(pid));
}

Child spawn(const std::vector<std::string>& argv, bool to_stdin) {
  Child::StartFailure failure;
  std::optional<Child> child = Child::spawn(argv, to_stdin, &failure);
  if (!child) {
    throw std::runtime_error("cannot spawn " + argv.front() + ": " + failure.reason);
  }
  return std::move(*child);
}

// A spawned program gets what is written to its stdin, and its stdout is read back.
TEST(Subprocess, SpawnedProgramTalksOverItsStdinAndStdout) {
  Child child = spawn({"/bin/sh", "-c", "read line; echo \"got $line\"; exit 4"}, true);
  const std::string request = "hello\n";
  ASSERT_TRUE(child.write_all(request.data(), request.size()));
  std::string line(10, '\0');
  ASSERT_EQ(child.read_exact(line.data(), line.size(), k_no_deadline), ReadResult::k_ok);
  EXPECT_EQ(line, "got hello\n");
  char more = 0;
  EXPECT_EQ(child.read_exact(&more, 1, k_no_deadline), ReadResult::k_eof);
  const std::optional<int> status = child.reap_within(60.0);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(describe_exit(*status), "exited with code 4");
}

// Writing to a program that has ended fails the write (EPIPE), never this process.
TEST(Subprocess, WritingToASpawnedProgramThatEndedFails) {
  Child child = spawn({"/bin/sh", "-c", "exit 0"}, true);
  ASSERT_TRUE(child.reap_within(60.0).has_value());
  const std::string chunk(1 << 16, 'x');
  bool written = true;
  for (int i = 0; i < 64 && written; ++i) {
    written = child.write_all(chunk.data(), chunk.size());
  }
  EXPECT_FALSE(written);
  EXPECT_EQ(errno, EPIPE);
}

TEST(Subprocess, SpawnOfAMissingProgramSaysWhy) {
  Child::StartFailure failure;
  EXPECT_FALSE(Child::spawn({"/nonexistent/driftgate-ort", "--version"}, false, &failure).has_value());
  EXPECT_FALSE(failure.at_pipe);
  EXPECT_EQ(failure.reason, "No such file or directory");
}

// read_to_end stops past its limit: a program that never stops writing is not read forever.
TEST(Subprocess, ReadToEndStopsPastItsLimit) {
  Child child = spawn({"/usr/bin/yes"}, false);
  std::string data;
  EXPECT_FALSE(child.read_to_end(data, k_no_deadline, 1024));
  EXPECT_GT(data.size(), 1024U);
  EXPECT_LE(data.size(), 1024U + 65536U);
}

// A spawned program that still runs is killed and reaped when its Child is destroyed.
TEST(Subprocess, DestroyingASpawnedProgramKillsAndReapsIt) {
  pid_t pid = -1;
  {
    Child child = spawn({"/bin/sleep", "600"}, true);
    pid = child.pid();
    EXPECT_FALSE(child.reap_within(0.05).has_value());
  }
  EXPECT_TRUE(gone(pid));
}

}  // namespace
}  // namespace driftgate

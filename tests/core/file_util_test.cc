#include "core/file_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "core/error.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

namespace fs = std::filesystem;

TEST(FileUtil, AtomicWriteCreatesParentsAndReplaces) {
  test::TempDir temp;  // removed with what the test wrote
  fs::path dir = temp.path();
  std::string path = (dir / "a" / "b.txt").string();
  write_file_atomic(path, "old");
  write_file_atomic(path, "new");
  EXPECT_EQ(read_file(path), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "a"), fs::directory_iterator()), 1);
}

TEST(FileUtil, FailedWriteLeavesOldFileAndNoTemporary) {
  if (::geteuid() == 0) {
    // root ignores directory permissions; use a path whose parent is a file instead.
    test::TempDir temp;  // removed with what the test wrote
    fs::path dir = temp.path();
    write_file_atomic((dir / "file").string(), "x");
    EXPECT_THROW(write_file_atomic((dir / "file" / "child").string(), "y"), Error);
    EXPECT_EQ(read_file((dir / "file").string()), "x");
    return;
  }
  test::TempDir temp;  // removed with what the test wrote
  fs::path dir = temp.path();
  std::string path = (dir / "b.txt").string();
  write_file_atomic(path, "old");
  ::chmod(dir.c_str(), 0555);
  EXPECT_THROW(write_file_atomic(path, "new"), Error);
  ::chmod(dir.c_str(), 0755);
  EXPECT_EQ(read_file(path), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(FileUtil, WritingToADeviceWritesIntoItAndLeavesTheNodeAlone) {
  write_file_atomic("/dev/null", "discarded");
  struct stat info {};
  ASSERT_EQ(::stat("/dev/null", &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode)) << "/dev/null was replaced by a regular file";
}

TEST(FileUtil, WritingThroughASymlinkReplacesTheTarget) {
  test::TempDir temp;  // removed with what the test wrote
  fs::path dir = temp.path();
  write_file_atomic((dir / "real").string(), "old");
  fs::create_symlink(dir / "real", dir / "link");
  write_file_atomic((dir / "link").string(), "new");
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read_file((dir / "real").string()), "new");
}

TEST(FileUtil, WritingOverADirectoryIsAnError) {
  test::TempDir temp;  // removed with what the test wrote
  fs::path dir = temp.path();
  EXPECT_THROW(write_file_atomic(dir.string(), "x"), Error);
}

TEST(FileUtil, HashMatchesGitHashObject) {
  test::TempDir temp;  // removed with what the test wrote
  fs::path dir = temp.path();
  std::string path = (dir / "hello").string();
  write_file_atomic(path, "hello\n");
  // `printf 'hello\n' | git hash-object --stdin`
  EXPECT_EQ(hash_file(path), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_THROW(hash_file((dir / "missing").string()), Error);
}

TEST(FileUtil, ResolvesRelativeToBase) {
  EXPECT_EQ(resolve_path("configs", "../models/a.pt"), "models/a.pt");
  EXPECT_EQ(resolve_path("configs", "/abs/a.pt"), "/abs/a.pt");
  EXPECT_EQ(parent_directory("a.yaml"), ".");
  EXPECT_EQ(parent_directory("configs/a.yaml"), "configs");
}

// A pipe holds 64 KiB here: a 1 MiB message crosses it in many short reads and writes.
TEST(FileUtil, FullReadsAndWritesCrossAPipeInPieces) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string message(1 << 20, '\0');
  for (std::size_t i = 0; i < message.size(); ++i) {
    message[i] = static_cast<char>(i * 131 % 251);
  }
  pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    ::close(fds[0]);
    ::_exit(write_fully(fds[1], message.data(), message.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string got(message.size(), 'x');
  EXPECT_TRUE(read_fully(fds[0], got.data(), got.size()));
  EXPECT_EQ(got, message);
  char extra = 0;
  EXPECT_FALSE(read_fully(fds[0], &extra, 1));  // the writer is done: the pipe ends
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(FileUtil, FullWriteToAPipeNobodyReadsFails) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  void (*previous)(int) = ::signal(SIGPIPE, SIG_IGN);
  const char byte = 'x';
  EXPECT_FALSE(write_fully(fds[1], &byte, 1));
  ::signal(SIGPIPE, previous);
  ::close(fds[1]);
}

}  // namespace
}  // namespace driftgate

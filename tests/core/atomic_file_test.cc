#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/file_util.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

size_t files_in(const std::string& dir) {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++count;
  }
  return count;
}

TEST(AtomicFile, PiecesBecomeTheFileOnlyAtCommit) {
  test::TempDir dir;
  write_file_atomic(dir / "out.jsonl", "old\n");
  {
    AtomicFile file(dir / "out.jsonl");
    file.write("first ");
    file.write("");
    file.write(std::string(100000, 'x'));
    EXPECT_EQ(read_file(dir / "out.jsonl"), "old\n");  // readers still see the old file
    file.commit();
  }
  EXPECT_EQ(read_file(dir / "out.jsonl"), "first " + std::string(100000, 'x'));
  EXPECT_EQ(files_in(dir.path()), 1u);  // no temporary file left
}

TEST(AtomicFile, AbandonedWriteLeavesTheOldFileAndNoTemporary) {
  test::TempDir dir;
  write_file_atomic(dir / "out.jsonl", "old\n");
  {
    AtomicFile file(dir / "out.jsonl");
    file.write("half");
  }
  EXPECT_EQ(read_file(dir / "out.jsonl"), "old\n");
  EXPECT_EQ(files_in(dir.path()), 1u);
}

TEST(AtomicFile, CreatesParentsAndRefusesADirectory) {
  test::TempDir dir;
  AtomicFile file(dir / "a/b/out.json");
  file.write("{}");
  file.commit();
  EXPECT_EQ(read_file(dir / "a/b/out.json"), "{}");
  try {
    AtomicFile directory(dir / "a");
    FAIL() << "a directory was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir / "a" + ": is a directory; name a file to write");
  }
}

TEST(AtomicFile, AFullDeviceIsAnErrorThatSaysSo) {
  if (!std::filesystem::exists("/dev/full")) {
    GTEST_SKIP() << "no /dev/full on this system";
  }
  AtomicFile file("/dev/full");
  try {
    file.write("bytes");
    FAIL() << "writing to /dev/full succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), std::string("/dev/full: cannot write (") + std::strerror(ENOSPC) + ")");
  }
  EXPECT_THROW(file.commit(), Error);  // nothing to finish after a failure
}

TEST(AtomicFile, ManyPiecesAreWrittenInOrderAsOneFile) {
  test::TempDir dir;
  // More pieces than one writev takes (1024), empty ones among them, and one large piece.
  std::vector<std::string> texts;
  std::string expected;
  for (int i = 0; i < 5000; ++i) {
    texts.push_back(i % 7 == 0 ? std::string()
                               : std::string(static_cast<size_t>(i % 300), static_cast<char>('a' + i % 26)));
  }
  texts.push_back(std::string(3 << 20, 'z'));
  std::vector<std::string_view> pieces;
  for (const auto& text : texts) {
    pieces.push_back(text);
    expected += text;
  }
  for (Durability durability : {Durability::k_durable, Durability::k_replace}) {
    AtomicFile file(dir / "out.jsonl", durability);
    file.write(pieces);
    file.write(std::vector<std::string_view>{});
    file.write(std::vector<std::string_view>{"", "", "end"});
    file.commit();
    EXPECT_EQ(read_file(dir / "out.jsonl"), expected + "end");
    EXPECT_EQ(files_in(dir.path()), 1u);  // no temporary file left
  }
}

TEST(AtomicFile, PiecesCutShortByAFullDiskLeaveNothing) {
  test::TempDir dir;
  std::string path = dir / "out.jsonl";
  // In a child: files limited to 100 kB, so a writev of 300 kB writes part and the next
  // one fails (EFBIG, as a full disk fails with ENOSPC).
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {};
    limit.rlim_cur = limit.rlim_max = 100000;
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::string text(1000, 'x');
    std::vector<std::string_view> pieces(300, text);
    try {
      AtomicFile file(path, Durability::k_replace);
      file.write(pieces);
      file.commit();
    } catch (const Error& e) {
      bool said = std::string(e.what()) == path + ": cannot write (" + std::strerror(EFBIG) + "); nothing was changed";
      ::_exit(said && !std::filesystem::exists(path) && files_in(dir.path()) == 0 ? 0 : 3);
    }
    ::_exit(4);  // the write succeeded
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: wrong message or a file left; 4: no error";
}

}  // namespace
}  // namespace driftgate

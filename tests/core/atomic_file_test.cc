#include "core/atomic_file.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

}  // namespace
}  // namespace driftgate

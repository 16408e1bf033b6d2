#include "runner/file_hashes.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_util.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

TEST(FileHashes, GivesHashFileResultsInOrder) {
  test::TempDir dir;
  write(dir / "a.yaml", "name: a\n");
  write(dir / "b.pt", std::string(3 << 20, '\x07'));  // larger than a pipe buffer's worth of work
  write(dir / "empty", "");
  std::vector<std::string> paths{dir / "b.pt", dir / "a.yaml", dir / "empty", dir / "a.yaml"};
  FileHashes hashes = FileHashes::start(paths);
  std::vector<std::string> got = hashes.wait();
  ASSERT_EQ(got.size(), paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(got[i], hash_file(paths[i])) << paths[i];
  }
  // git's blob id of "hello\n" (printf 'hello\n' | git hash-object --stdin): the format is pinned too.
  write(dir / "known", "hello\n");
  EXPECT_EQ(FileHashes::start({dir / "known"}).wait(),
            std::vector<std::string>{"ce013625030ba8dba906f756967f9e9ca394464a"});
}

TEST(FileHashes, NoPathsIsNoHashes) { EXPECT_TRUE(FileHashes::start({}).wait().empty()); }

TEST(FileHashes, AMissingFileThrowsHashFilesError) {
  test::TempDir dir;
  write(dir / "a.yaml", "name: a\n");
  const std::string missing = dir / "gone.pt";
  std::string expected;
  try {
    hash_file(missing);
  } catch (const Error& e) {
    expected = e.what();
  }
  ASSERT_FALSE(expected.empty());
  FileHashes hashes = FileHashes::start({dir / "a.yaml", missing});
  try {
    hashes.wait();
    FAIL() << "expected driftgate::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
}

TEST(FileHashes, NeverWaitedForIsReaped) {
  test::TempDir dir;
  write(dir / "big.pt", std::string(8 << 20, 'x'));
  { FileHashes hashes = FileHashes::start({dir / "big.pt", dir / "big.pt"}); }
  // The destructor killed and reaped the hasher: no child is left to wait for.
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
}

}  // namespace
}  // namespace driftgate

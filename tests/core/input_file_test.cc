// The bounded reader: regular files only, each other kind of file refused by name
// without blocking (a FIFO with no writer would hang a plain open), and the size cap
// checked before reading and again while reading a file that grows.
#include "core/input_file.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "core/error.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

constexpr InputKind k_small{"test input", 16, nullptr};

std::string error_of(const std::string& path, const InputKind& kind = k_small) {
  try {
    read_input_file(path, kind);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(InputFile, ReadsARegularFileWithinItsCap) {
  test::TempDir temp;
  std::ofstream(temp / "a.txt", std::ios::binary) << std::string("exactly 16 bytes", 16);
  EXPECT_EQ(read_input_file(temp / "a.txt", k_small), "exactly 16 bytes");
  std::ofstream(temp / "empty", std::ios::binary).close();
  EXPECT_EQ(read_input_file(temp / "empty", k_small), "");
}

TEST(InputFile, RefusesAFileOverItsCapNamingTheLimit) {
  test::TempDir temp;
  std::ofstream(temp / "big", std::ios::binary) << std::string(17, 'x');
  EXPECT_EQ(error_of(temp / "big"),
            temp / "big" + ": 17 bytes, over the limit of 16 bytes for a test input; is this the right file?");
  constexpr InputKind k_mib_cap{"labels file", k_mib, nullptr};
  std::ofstream(temp / "big", std::ios::binary) << std::string(k_mib + 512 * 1024, 'x');
  EXPECT_EQ(error_of(temp / "big", k_mib_cap),
            temp / "big" + ": 1.5 MiB, over the limit of 1 MiB for a labels file; is this the right file?");
}

TEST(InputFile, RefusesAFifoWithoutWaitingForAWriter) {
  test::TempDir temp;
  ASSERT_EQ(::mkfifo((temp / "fifo").c_str(), 0600), 0);
  // A plain open() would block here forever: nobody writes to the FIFO.
  EXPECT_EQ(error_of(temp / "fifo"), temp / "fifo" +
                                         ": a FIFO (named pipe), not a regular file; driftgate reads a test input only "
                                         "from a regular file (save the data to a file and pass that)");
}

TEST(InputFile, RefusesDevicesDirectoriesAndSocketsByName) {
  test::TempDir temp;
  EXPECT_EQ(error_of("/dev/zero").rfind("/dev/zero: a character device, not a regular file;", 0), 0U)
      << error_of("/dev/zero");
  EXPECT_EQ(error_of(temp.path()).rfind(temp.path() + ": a directory, not a regular file;", 0), 0U);
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string socket_path = temp / "sock";
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  std::strcpy(address.sun_path, socket_path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(error_of(socket_path).rfind(socket_path + ": a socket, not a regular file;", 0), 0U)
      << error_of(socket_path);
  ::close(fd);
}

TEST(InputFile, RefusesAPipeBehindDevStdinOrProcFd) {
  // /dev/stdin in a pipeline is /proc/self/fd/0, a pipe: named as the FIFO it is.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  EXPECT_EQ(error_of(path).rfind(path + ": a FIFO (named pipe), not a regular file;", 0), 0U) << error_of(path);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(InputFile, FollowsASymlinkToWhatItNames) {
  test::TempDir temp;
  ASSERT_EQ(::symlink("/dev/zero", (temp / "link").c_str()), 0);
  EXPECT_EQ(error_of(temp / "link").rfind(temp / "link" + ": a character device", 0), 0U);
  std::ofstream(temp / "real") << "text";
  ASSERT_EQ(::symlink((temp / "real").c_str(), (temp / "good").c_str()), 0);
  EXPECT_EQ(read_input_file(temp / "good", k_small), "text");
}

TEST(InputFile, NamesTheKindWhenTheFileCannotBeOpened) {
  test::TempDir temp;
  EXPECT_EQ(error_of(temp / "none"), temp / "none" + ": cannot open test input (No such file or directory)");
}

TEST(InputFile, AFileThatGrowsPastTheCapWhileReadIsRefused) {
  test::TempDir temp;
  std::ofstream(temp / "grows", std::ios::binary) << "12345678";
  InputFile file(temp / "grows", k_small);
  EXPECT_EQ(file.size(), 8U);
  std::ofstream(temp / "grows", std::ios::binary | std::ios::app) << std::string(100, 'y');
  try {
    file.read_all();
    FAIL() << "read past the cap";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              temp / "grows" +
                  ": grew while being read, over the limit of 16 bytes for a test input; is this the right file?");
  }
}

TEST(InputFile, StreamReadsLinesAndThrowsTheCapErrorInsteadOfFailing) {
  test::TempDir temp;
  std::ofstream(temp / "lines", std::ios::binary) << "a\nbb\n";
  {
    InputFile file(temp / "lines", k_small);
    std::string line;
    std::vector<std::string> lines;
    while (std::getline(file.stream(), line)) {
      lines.push_back(line);
    }
    EXPECT_EQ(lines, (std::vector<std::string>{"a", "bb"}));
  }
  InputFile file(temp / "lines", k_small);
  std::ofstream(temp / "lines", std::ios::binary | std::ios::app) << std::string(100, 'z');
  std::string line;
  EXPECT_THROW(
      {
        while (std::getline(file.stream(), line)) {
        }
      },
      Error);
}

TEST(InputFile, DescribesSizes) {
  EXPECT_EQ(describe_size(0), "0 bytes");
  EXPECT_EQ(describe_size(1), "1 byte");
  EXPECT_EQ(describe_size(1023), "1023 bytes");
  EXPECT_EQ(describe_size(1024), "1 KiB");
  EXPECT_EQ(describe_size(k_mib * 3 / 2), "1.5 MiB");
  EXPECT_EQ(describe_size(16 * k_gib), "16 GiB");
}

// Issue 24: the words above, for a path checked before it is opened (a config's model path).
TEST(InputFile, NamesWhatAPathIsWhenItIsNotARegularFile) {
  test::TempDir temp;
  EXPECT_EQ(non_regular_file_type("/dev/zero"), "a character device");
  EXPECT_EQ(non_regular_file_type(temp.path()), "a directory");
  ASSERT_EQ(::mkfifo((temp / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(non_regular_file_type(temp / "fifo"), "a FIFO (named pipe)");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_EQ(non_regular_file_type("/proc/self/fd/" + std::to_string(fds[0])), "a FIFO (named pipe)");
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_EQ(::symlink("/dev/null", (temp / "link").c_str()), 0);
  EXPECT_EQ(non_regular_file_type(temp / "link"), "a character device");
  std::ofstream(temp / "real") << "text";
  EXPECT_EQ(non_regular_file_type(temp / "real"), "");
  EXPECT_EQ(non_regular_file_type(temp / "none"), "");
}

}  // namespace
}  // namespace driftgate

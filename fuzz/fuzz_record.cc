// libFuzzer target: the JSONL record reader (core/record.h, parse_run) and the
// diff's digest reader (differ/run_digest.h) beside it.
//
// A run file either parses or throws driftgate::Error; a parsed file is written
// back and must parse again to the same lines (the reader accepts what the writer
// writes). The digest reader must agree: the same error message, or the same checks;
// and read again with its own digest as `like` (every line vouched for), the same again.
//
// The same bytes also reach read_run_file through the file system, and one input in
// eight names a special file instead (a FIFO nobody writes to, /dev/zero directly or
// through a symlink, a directory, a socket): those must be refused by name at once,
// never waited on or read without end (libFuzzer's -timeout and -rss_limit_mb catch
// either), and a regular file must read exactly as the bytes in memory do.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/record.h"
#include "differ/run_digest.h"

namespace {

// What a digest says of its checks, in id order.
std::string digest_text(const driftgate::RunDigest& digest) {
  std::string text = std::to_string(digest.checks.size()) + "\n";
  for (size_t i : digest.id_order) {
    const driftgate::CheckDigest& check = digest.checks[i];
    text += std::string(check.id) + "|" + std::string(check.experiment) + "|" + std::string(check.output) + "|" +
            std::string(check.message) + "|" + driftgate::to_string(check.status) + "|" +
            (check.has_stats ? std::to_string(check.max_abs) : "-") + "\n";
  }
  return text;
}

// The digest reader against the strict reader's verdict on the same bytes.
void check_digest(const std::string& bytes, const driftgate::RunFile* run, const std::string& error) {
  std::string digested;
  try {
    driftgate::RunDigest digest = driftgate::digest_run_text(bytes, "fuzz.jsonl");
    if (run == nullptr) {
      std::abort();  // the digest reader accepted what the strict reader refused
    }
    digested = digest_text(digest);
    if (digested != digest_text(driftgate::digest_view(*run))) {
      std::abort();  // other values than the strict reader's
    }
    if (digest_text(driftgate::digest_run_text(bytes, "fuzz.jsonl", &digest)) != digested) {
      std::abort();  // lines vouched for by their own digest read otherwise
    }
  } catch (const driftgate::Error& e) {
    if (run != nullptr || e.what() != error) {
      std::abort();  // refused what the strict reader accepted, or with another message
    }
  }
}

// A directory of this process's own, made once: the special files live there.
const std::string& scratch() {
  static const std::string dir = [] {
    std::string pattern = "/tmp/driftgate-fuzz-record-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::abort();
    }
    std::string fifo = pattern + "/fifo.jsonl";
    std::string directory = pattern + "/directory.jsonl";
    std::string link = pattern + "/zero.jsonl";
    std::string socket_path = pattern + "/socket.jsonl";
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
    if (::mkfifo(fifo.c_str(), 0600) != 0 || ::mkdir(directory.c_str(), 0700) != 0 ||
        ::symlink("/dev/zero", link.c_str()) != 0 || fd < 0 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      std::abort();
    }
    return pattern;
  }();
  return dir;
}

// read_run_file of the bytes written to a regular file (or of a special file): the
// strict reader's verdict on the same bytes, `error` or `run`.
void check_file(const std::string& bytes, const driftgate::RunFile* run, const std::string& error) {
  static const char* const k_special[] = {"/fifo.jsonl", "/zero.jsonl", "/directory.jsonl", "/socket.jsonl"};
  const unsigned selector = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]);
  if (selector % 8 == 7) {
    unsigned kind = selector / 8 % 5;
    std::string path = kind < 4 ? scratch() + k_special[kind] : std::string("/dev/zero");
    try {
      (void)driftgate::read_run_file(path);
      std::abort();  // a special file was read as a run
    } catch (const driftgate::Error& e) {
      if (std::string(e.what()).find(", not a regular file; driftgate reads a run file only from a regular file") ==
          std::string::npos) {
        std::abort();  // refused, but not by name
      }
    }
    return;
  }
  std::string path = scratch() + "/regular.jsonl";
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size() || std::fclose(file) != 0) {
    std::abort();
  }
  try {
    driftgate::RunFile read = driftgate::read_run_file(path);
    std::ostringstream a;
    std::ostringstream b;
    if (run == nullptr) {
      std::abort();  // the file reader accepted what the stream reader refused
    }
    driftgate::write_run(a, read);
    driftgate::write_run(b, *run);
    if (a.str() != b.str()) {
      std::abort();  // another run than the same bytes in memory
    }
  } catch (const driftgate::Error& e) {
    // The same message, but for the file's name in it.
    std::string expected = error;
    if (expected.rfind("fuzz.jsonl", 0) == 0) {
      expected = path + expected.substr(std::strlen("fuzz.jsonl"));
    }
    if (run != nullptr || e.what() != expected) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  std::istringstream in(bytes);
  driftgate::RunFile run;
  try {
    run = driftgate::parse_run(in, "fuzz.jsonl");
  } catch (const driftgate::Error& e) {
    check_digest(bytes, nullptr, e.what());
    check_file(bytes, nullptr, e.what());
    return 0;
  }
  check_digest(bytes, &run, "");
  check_file(bytes, &run, "");
  std::ostringstream written;
  driftgate::write_run(written, run);
  std::istringstream again(written.str());
  try {
    driftgate::RunFile reread = driftgate::parse_run(again, "fuzz-rewritten.jsonl");
    std::ostringstream rewritten;
    driftgate::write_run(rewritten, reread);
    if (rewritten.str() != written.str()) {
      std::abort();  // writing is not stable: the reader and writer disagree
    }
  } catch (const driftgate::Error&) {
    std::abort();  // the reader refuses what the writer wrote
  }
  return 0;
}

// The one bounded reader of every file driftgate takes as input.
//
// Configs, gate policies, labels, run files, baselines, proposals, event payloads
// and reports are read through here, never with a bare ifstream, so that:
//   - only regular files are read. A FIFO (which would block `open` until a writer
//     came), a character or block device (/dev/zero never ends), a directory or a
//     socket is refused by name, before a byte is read: `open` is non-blocking and
//     the kind is taken from the open descriptor, not from an earlier stat;
//   - every kind of input has a size cap (InputKind), checked against the file's
//     size before reading and again while reading (a file that grows), and the
//     message names the kind, the size and the limit.
// The API is deliberately small, and it is the runner's too (runner/ reads models,
// images and configs through it): an InputKind per kind of file, read_input_file
// for the whole file, InputFile for a reader that streams (an istream or the
// descriptor, e.g. to mmap it) and describe_size for messages about other limits
// (HTTP bodies: ci/httplib_transport.cc).
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>

namespace driftgate {

// What a file is, for messages ("run file"), the most bytes it may hold, and what to
// try when it is not a regular file (nullptr: "save the data to a file and pass that").
struct InputKind {
  const char* name;
  std::uint64_t max_bytes;
  const char* fix = nullptr;
};

inline constexpr std::uint64_t k_mib = std::uint64_t{1} << 20;
inline constexpr std::uint64_t k_gib = std::uint64_t{1} << 30;

// The caps, each far above any real file of its kind (a million-check run file is
// about a gigabyte; GitHub caps webhook payloads at 25 MB).
inline constexpr InputKind k_experiment_config{"experiment config", 16 * k_mib, nullptr};
inline constexpr InputKind k_gate_policy_file{"gate policy", 16 * k_mib, nullptr};
inline constexpr InputKind k_labels_file{"labels file", 64 * k_mib, nullptr};
inline constexpr InputKind k_run_file{"run file", 16 * k_gib, nullptr};
inline constexpr InputKind k_baseline_file{"baseline", 16 * k_gib,
                                           "remove it and store the baseline again with driftgate baseline update"};
inline constexpr InputKind k_proposal_file{"baseline proposal", 16 * k_gib, nullptr};
inline constexpr InputKind k_acceptance_log{"acceptance log", 256 * k_mib,
                                            "remove it; driftgate baseline accept writes it as a regular file"};
inline constexpr InputKind k_event_payload{"event payload", 64 * k_mib, nullptr};
// A report comes from the gate run, which a fork may control: ci/comment_body.h's k_report_max_bytes.
inline constexpr InputKind k_report_file{"report", 32 * k_mib, nullptr};
// Anything else (test helpers, small files driftgate wrote itself). A caller with
// a kind of its own declares its InputKind beside it.
inline constexpr InputKind k_any_file{"file", 4 * k_gib, nullptr};

// "12 bytes", "3.5 MiB", "16 GiB": a size for messages.
std::string describe_size(std::uint64_t bytes);

// An open regular file of a kind. Throws driftgate::Error naming the path when it
// cannot be opened, is not a regular file or is over the kind's cap.
class InputFile {
 public:
  InputFile(const std::string& path, const InputKind& kind);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const { return m_fd; }
  // The size when opened (the reads below still stop at the cap should it grow).
  std::uint64_t size() const { return m_size; }
  // The rest of the file. Throws driftgate::Error on a read error or past the cap.
  std::string read_all();
  // A stream over the file from its start; reading it throws driftgate::Error (not
  // a failbit) on a read error or past the cap. One per InputFile.
  std::istream& stream();

 private:
  class Buffer;
  std::string m_path;
  InputKind m_kind;
  int m_fd = -1;
  std::uint64_t m_size = 0;
  std::unique_ptr<Buffer> m_buffer;
  std::unique_ptr<std::istream> m_stream;
};

// The whole of a regular file of `kind` (InputFile's refusals).
std::string read_input_file(const std::string& path, const InputKind& kind);

// What `path` is when it is there but is not a regular file, in the words of
// InputFile's refusals: "a FIFO (named pipe)", "a character device", "a block device",
// "a directory", "a socket". "" for a regular file and for a path that stat() cannot
// follow (missing, a dangling link). Symbolic links are followed (/dev/stdin names what
// standard input is); stat() does not block on a FIFO. For paths checked before they
// are opened, e.g. the model and input files an experiment config names.
std::string non_regular_file_type(const std::string& path);

}  // namespace driftgate

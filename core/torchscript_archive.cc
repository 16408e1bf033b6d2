#include "core/torchscript_archive.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <vector>

namespace driftgate {
namespace {

const char k_local_signature[] = "PK\x03\x04";
const char k_central_signature[] = "PK\x01\x02";
const char k_end_signature[] = "PK\x05\x06";
constexpr size_t k_end_size = 22;                 // end-of-central-directory record without comment
constexpr size_t k_max_comment = 65535;           // the record's comment length is 16 bits
constexpr size_t k_central_header_size = 46;      // central directory header before its name
constexpr uint32_t k_zip64_marker = 0xFFFFFFFFu;  // offsets that live in the zip64 record instead

uint32_t read_le(const std::vector<char>& bytes, size_t at, int width) {
  uint32_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]);
  }
  return value;
}

bool has_signature(const std::vector<char>& bytes, size_t at, const char* signature) {
  return at + 4 <= bytes.size() && std::equal(signature, signature + 4, bytes.begin() + static_cast<long>(at));
}

// Entry names from the central directory, or nullopt-like empty with `problem` set.
std::vector<std::string> central_names(const std::vector<char>& bytes, size_t offset, size_t end, size_t entries,
                                       std::string& problem) {
  std::vector<std::string> names;
  size_t at = offset;
  for (size_t i = 0; i < entries; ++i) {
    if (at + k_central_header_size > end || !has_signature(bytes, at, k_central_signature)) {
      problem = "is damaged (its zip central directory is cut short at entry " + std::to_string(i + 1) + " of " +
                std::to_string(entries) + ")";
      return {};
    }
    size_t name_length = read_le(bytes, at + 28, 2);
    size_t extra_length = read_le(bytes, at + 30, 2);
    size_t comment_length = read_le(bytes, at + 32, 2);
    if (at + k_central_header_size + name_length > end) {
      problem = "is damaged (a zip entry name runs past the central directory)";
      return {};
    }
    names.emplace_back(bytes.data() + at + k_central_header_size, name_length);
    at += k_central_header_size + name_length + extra_length + comment_length;
  }
  return names;
}

std::string layout_problem(const std::vector<std::string>& names) {
  bool data = false;
  bool code = false;
  for (const auto& name : names) {
    size_t slash = name.find('/');
    if (slash == std::string::npos) {
      continue;
    }
    std::string rest = name.substr(slash + 1);
    data = data || rest == "data.pkl";
    code = code || rest.rfind("code/", 0) == 0;
  }
  if (!data) {
    return "is a zip archive but not a TorchScript one (no <name>/data.pkl); export the model with "
           "torch.jit.script(model).save(path) or torch.jit.trace(model, example).save(path)";
  }
  if (!code) {
    return "holds a pickled Python object (torch.save, e.g. a state_dict), not a TorchScript module (no code/); "
           "export it with torch.jit.script(model).save(path) or torch.jit.trace(model, example).save(path)";
  }
  return "";
}

}  // namespace

std::string torchscript_archive_problem(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return "cannot be read";
  }
  const size_t file_size = static_cast<size_t>(in.tellg());
  // Reads [from, from + count) of the file; short when the file is.
  auto read_range = [&in](size_t from, size_t count) {
    std::vector<char> bytes(count);
    in.clear();
    in.seekg(static_cast<std::streamoff>(from));
    in.read(bytes.data(), static_cast<std::streamsize>(count));
    bytes.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    return bytes;
  };
  if (!has_signature(read_range(0, 4), 0, k_local_signature)) {
    return "is not a TorchScript archive (it does not start with a zip signature; " + std::to_string(file_size) +
           " bytes); export the model with torch.jit.script(model).save(path)";
  }
  // The end record is the last thing in the file, followed only by its comment.
  const size_t tail_start = file_size > k_end_size + k_max_comment ? file_size - k_end_size - k_max_comment : 0;
  std::vector<char> tail = read_range(tail_start, file_size - tail_start);
  size_t end_record = std::string::npos;
  if (tail.size() >= k_end_size) {
    for (size_t at = tail.size() - k_end_size + 1; at-- > 0;) {
      if (has_signature(tail, at, k_end_signature) && at + k_end_size + read_le(tail, at + 20, 2) == tail.size()) {
        end_record = at;
        break;
      }
    }
  }
  if (end_record == std::string::npos) {
    return "is truncated or damaged (" + std::to_string(file_size) +
           " bytes and no zip end-of-central-directory record); copy or export it again";
  }
  size_t entries = read_le(tail, end_record + 10, 2);
  uint32_t size = read_le(tail, end_record + 12, 4);
  uint32_t offset = read_le(tail, end_record + 16, 4);
  if (size == k_zip64_marker || offset == k_zip64_marker || entries == 0xFFFF) {
    return "";  // a zip64 archive (over 4 GiB or 65,535 entries): left to LibTorch's reader
  }
  if (static_cast<size_t>(offset) + size > tail_start + end_record) {
    return "is truncated or damaged (its zip central directory points past the end of the file)";
  }
  std::vector<char> directory = read_range(offset, size);
  std::string problem;
  std::vector<std::string> names = central_names(directory, 0, directory.size(), entries, problem);
  if (!problem.empty()) {
    return problem;
  }
  return layout_problem(names);
}

}  // namespace driftgate

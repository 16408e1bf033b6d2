#include "runner/torchscript_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

namespace driftgate {
namespace {

const char k_local_signature[] = "PK\x03\x04";
const char k_central_signature[] = "PK\x01\x02";
const char k_end_signature[] = "PK\x05\x06";
constexpr size_t k_end_size = 22;                 // end-of-central-directory record without comment
constexpr size_t k_max_comment = 65535;           // the record's comment length is 16 bits
constexpr size_t k_central_header_size = 46;      // central directory header before its name
constexpr size_t k_local_header_size = 30;        // local file header before its name and extra field
constexpr uint32_t k_zip64_marker = 0xFFFFFFFFu;  // offsets that live in the zip64 record instead
constexpr uint32_t k_stored = 0;                  // compression method: none (tensors, data.pkl)
constexpr uint32_t k_deflated = 8;                // compression method: deflate (torch.jit.save's code/ files)
constexpr size_t k_pickle_prefix = 4096;          // enough of data.pkl for its first GLOBAL opcode
constexpr size_t k_max_code_file = 64u << 20;     // a larger code file is left to LibTorch

// One entry of the zip central directory.
struct ZipEntry {
  std::string name;
  uint32_t method = 0;
  uint32_t compressed_size = 0;
  uint32_t uncompressed_size = 0;
  uint32_t local_offset = 0;
};

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

// Reads byte ranges of one file; a range is short where the file is.
class FileBytes {
 public:
  explicit FileBytes(const std::string& path) : m_in(path, std::ios::binary | std::ios::ate) {
    if (m_in) {
      m_size = static_cast<size_t>(m_in.tellg());
    }
  }
  bool readable() const { return static_cast<bool>(m_in); }
  size_t size() const { return m_size; }
  std::vector<char> read(size_t from, size_t count) {
    if (from >= m_size) {
      return {};
    }
    std::vector<char> bytes(std::min(count, m_size - from));
    m_in.clear();
    m_in.seekg(static_cast<std::streamoff>(from));
    m_in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<size_t>(std::max<std::streamsize>(m_in.gcount(), 0)));
    return bytes;
  }

 private:
  std::ifstream m_in;
  size_t m_size = 0;
};

// The central directory's entries, or empty with `problem` set.
std::vector<ZipEntry> central_entries(const std::vector<char>& bytes, size_t entries, std::string& problem) {
  std::vector<ZipEntry> result;
  size_t at = 0;
  for (size_t i = 0; i < entries; ++i) {
    if (at + k_central_header_size > bytes.size() || !has_signature(bytes, at, k_central_signature)) {
      problem = "is damaged (its zip central directory is cut short at entry " + std::to_string(i + 1) + " of " +
                std::to_string(entries) + ")";
      return {};
    }
    size_t name_length = read_le(bytes, at + 28, 2);
    size_t extra_length = read_le(bytes, at + 30, 2);
    size_t comment_length = read_le(bytes, at + 32, 2);
    if (at + k_central_header_size + name_length > bytes.size()) {
      problem = "is damaged (a zip entry name runs past the central directory)";
      return {};
    }
    ZipEntry entry;
    entry.name.assign(bytes.data() + at + k_central_header_size, name_length);
    entry.method = read_le(bytes, at + 10, 2);
    entry.compressed_size = read_le(bytes, at + 20, 4);
    entry.uncompressed_size = read_le(bytes, at + 24, 4);
    entry.local_offset = read_le(bytes, at + 42, 4);
    result.push_back(std::move(entry));
    at += k_central_header_size + name_length + extra_length + comment_length;
  }
  return result;
}

// Inflates raw deflate data (zip method 8) into `size` bytes: all of the stream when
// `whole`, else its first `size` bytes; nullopt when it is damaged or of another size.
std::optional<std::string> inflate_raw(const std::vector<char>& input, size_t size, bool whole) {
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) {
    return std::nullopt;
  }
  std::string output(size, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.avail_in = static_cast<uInt>(input.size());
  stream.next_out = reinterpret_cast<Bytef*>(output.data());
  stream.avail_out = static_cast<uInt>(output.size());
  int status = inflate(&stream, Z_FINISH);
  const size_t produced = stream.total_out;
  inflateEnd(&stream);
  // Short of the stream's end: the output filled up (enough for a prefix), or the
  // input ended early (damaged).
  const bool ended = status == Z_STREAM_END;
  if (produced != size || (whole && !ended) || (!ended && status != Z_OK && status != Z_BUF_ERROR)) {
    return std::nullopt;
  }
  return output;
}

// The entry's bytes (stored or deflated): its first `limit` bytes, or with `whole` all
// of them (at most `limit`), when it lies within the file; nullopt otherwise (the
// caller then cannot tell, and says nothing).
std::optional<std::string> entry_bytes(FileBytes& file, const ZipEntry& entry, size_t limit, bool whole) {
  if ((entry.method != k_stored && entry.method != k_deflated) || entry.compressed_size == k_zip64_marker ||
      entry.uncompressed_size == k_zip64_marker || entry.local_offset == k_zip64_marker ||
      (whole && entry.uncompressed_size > limit)) {
    return std::nullopt;
  }
  std::vector<char> header = file.read(entry.local_offset, k_local_header_size);
  if (header.size() < k_local_header_size || !has_signature(header, 0, k_local_signature)) {
    return std::nullopt;
  }
  size_t start = size_t{entry.local_offset} + k_local_header_size + read_le(header, 26, 2) + read_le(header, 28, 2);
  const size_t size = std::min<size_t>(entry.uncompressed_size, limit);
  size_t count = entry.method == k_stored ? size : entry.compressed_size;
  std::vector<char> data = file.read(start, count);
  if (data.size() != count) {
    return std::nullopt;
  }
  if (entry.method == k_deflated) {
    return inflate_raw(data, size, whole);
  }
  return std::string(data.begin(), data.end());
}

const ZipEntry* find_entry(const std::vector<ZipEntry>& entries, const std::string& name) {
  auto found = std::find_if(entries.begin(), entries.end(), [&](const ZipEntry& entry) { return entry.name == name; });
  return found == entries.end() ? nullptr : &*found;
}

bool is_identifier(const std::string& text, bool dots) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [dots](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || (dots && c == '.');
  });
}

// The root module's class from data.pkl's first opcodes: PROTO 2, then GLOBAL
// "<module>\n<name>\n" (TorchScript's pickler always starts so); nullopt otherwise.
std::optional<std::pair<std::string, std::string>> root_class(const std::string& pickle) {
  size_t at = pickle.size() >= 2 && pickle[0] == '\x80' ? 2 : 0;
  if (at >= pickle.size() || pickle[at] != 'c') {
    return std::nullopt;
  }
  size_t module_end = pickle.find('\n', at + 1);
  size_t name_end = module_end == std::string::npos ? std::string::npos : pickle.find('\n', module_end + 1);
  if (name_end == std::string::npos) {
    return std::nullopt;
  }
  std::string module = pickle.substr(at + 1, module_end - at - 1);
  std::string name = pickle.substr(module_end + 1, name_end - module_end - 1);
  if ((module != "__torch__" && module.rfind("__torch__.", 0) != 0) || !is_identifier(module, true) ||
      !is_identifier(name, false)) {
    return std::nullopt;
  }
  return std::make_pair(module, name);
}

// The methods of `class <name>(` in serialized TorchScript code (methods are the
// lines "  def <method>(" up to the next top-level line); nullopt when the class is
// not there.
std::optional<std::vector<std::string>> class_methods(const std::string& code, const std::string& name) {
  const std::string opening = "class " + name + "(";
  size_t at = 0;
  while (at < code.size() && code.compare(at, opening.size(), opening) != 0) {
    size_t next = code.find('\n', at);
    at = next == std::string::npos ? code.size() : next + 1;
  }
  if (at >= code.size()) {
    return std::nullopt;
  }
  std::vector<std::string> methods;
  for (size_t line = code.find('\n', at); line != std::string::npos && line + 1 < code.size();
       line = code.find('\n', line + 1)) {
    size_t start = line + 1;
    if (code[start] != ' ' && code[start] != '\n') {
      break;  // the class body ends at the next top-level statement
    }
    if (code.compare(start, 6, "  def ") == 0) {
      size_t paren = code.find('(', start + 6);
      methods.push_back(code.substr(start + 6, paren == std::string::npos ? 0 : paren - start - 6));
    }
  }
  return methods;
}

// "" unless the archive's root module provably has no forward method: then what to do.
std::string forward_problem(FileBytes& file, const std::vector<ZipEntry>& entries) {
  const ZipEntry* data = nullptr;
  for (const auto& entry : entries) {
    size_t slash = entry.name.find('/');
    if (slash != std::string::npos && entry.name.compare(slash + 1, std::string::npos, "data.pkl") == 0) {
      data = &entry;
      break;
    }
  }
  std::optional<std::string> pickle = data ? entry_bytes(file, *data, k_pickle_prefix, /*whole=*/false) : std::nullopt;
  std::optional<std::pair<std::string, std::string>> root = pickle ? root_class(*pickle) : std::nullopt;
  if (!root) {
    return "";
  }
  std::string code_path = root->first;
  std::replace(code_path.begin(), code_path.end(), '.', '/');
  code_path = data->name.substr(0, data->name.find('/')) + "/code/" + code_path + ".py";
  const ZipEntry* code_entry = find_entry(entries, code_path);
  if (code_entry == nullptr) {
    return "";
  }
  std::optional<std::string> code = entry_bytes(file, *code_entry, k_max_code_file, /*whole=*/true);
  std::optional<std::vector<std::string>> methods = code ? class_methods(*code, root->second) : std::nullopt;
  if (!methods || std::find(methods->begin(), methods->end(), "forward") != methods->end()) {
    return "";
  }
  std::string listed;
  for (const auto& method : *methods) {
    listed += (listed.empty() ? "" : ", ") + method;
  }
  return "has no forward method (its TorchScript module " + root->second +
         (listed.empty() ? " has no methods" : " has only " + listed) +
         "); driftgate runs forward(input): give the module a forward (e.g. one that calls the method you mean) "
         "and export it again with torch.jit.script(model).save(path)";
}

std::string layout_problem(const std::vector<ZipEntry>& entries) {
  bool data = false;
  bool code = false;
  for (const auto& entry : entries) {
    size_t slash = entry.name.find('/');
    if (slash == std::string::npos) {
      continue;
    }
    std::string rest = entry.name.substr(slash + 1);
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
  FileBytes file(path);
  if (!file.readable()) {
    return "cannot be read";
  }
  const size_t file_size = file.size();
  if (!has_signature(file.read(0, 4), 0, k_local_signature)) {
    return "is not a TorchScript archive (it does not start with a zip signature; " + std::to_string(file_size) +
           " bytes); export the model with torch.jit.script(model).save(path)";
  }
  // The end record is the last thing in the file, followed only by its comment.
  const size_t tail_start = file_size > k_end_size + k_max_comment ? file_size - k_end_size - k_max_comment : 0;
  std::vector<char> tail = file.read(tail_start, file_size - tail_start);
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
  size_t count = read_le(tail, end_record + 10, 2);
  uint32_t size = read_le(tail, end_record + 12, 4);
  uint32_t offset = read_le(tail, end_record + 16, 4);
  if (size == k_zip64_marker || offset == k_zip64_marker || count == 0xFFFF) {
    return "";  // a zip64 archive (over 4 GiB or 65,535 entries): left to LibTorch's reader
  }
  if (static_cast<size_t>(offset) + size > tail_start + end_record) {
    return "is truncated or damaged (its zip central directory points past the end of the file)";
  }
  std::string problem;
  std::vector<ZipEntry> entries = central_entries(file.read(offset, size), count, problem);
  if (!problem.empty()) {
    return problem;
  }
  problem = layout_problem(entries);
  if (!problem.empty()) {
    return problem;
  }
  return forward_problem(file, entries);
}

}  // namespace driftgate

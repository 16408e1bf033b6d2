#include "core/npy_file.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/error.h"

namespace driftgate {
namespace {

constexpr char k_magic[] = "\x93NUMPY";
constexpr size_t k_magic_size = 6;
// NumPy itself refuses headers over 10000 bytes unless told otherwise; 64 KiB bounds the read.
constexpr uint32_t k_max_header = 65536;

[[noreturn]] void refuse(const std::string& file, const std::string& what) {
  throw Error("tensor file '" + file + "': " + what);
}

// A minimal reader of the header's dict literal: string keys, and values that are a quoted
// string, True/False, or a tuple of integers.
class HeaderParser {
 public:
  HeaderParser(const std::string& file, const std::string& text) : m_file(file), m_text(text) {}

  NpyHeader parse() {
    NpyHeader header;
    bool has_descr = false;
    bool has_order = false;
    bool has_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++m_pos;
        break;
      }
      std::string key = quoted();
      expect(':');
      if (key == "descr") {
        header.descr = quoted();
        has_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        header.shape = tuple();
        has_shape = true;
      } else {
        bad("unknown header key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++m_pos;
      } else if (peek() != '}') {
        bad("expected ',' or '}'");
      }
    }
    if (!has_descr || !has_order || !has_shape) {
      bad("the header lacks one of 'descr', 'fortran_order', 'shape'");
    }
    return header;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    refuse(m_file,
           "not a valid .npy header (" + what + " at byte " + std::to_string(m_pos) + "); write it with numpy.save");
  }
  char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }
  void skip_space() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) {
      ++m_pos;
    }
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) {
      bad(std::string("expected '") + c + "'");
    }
    ++m_pos;
  }
  std::string quoted() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') {
      bad("expected a quoted string");
    }
    size_t end = m_text.find(quote, m_pos + 1);
    if (end == std::string::npos) {
      bad("unterminated string");
    }
    std::string value = m_text.substr(m_pos + 1, end - m_pos - 1);
    m_pos = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair<const char*, bool>{"True", true}, {"False", false}}) {
      if (m_text.compare(m_pos, std::strlen(word), word) == 0) {
        m_pos += std::strlen(word);
        return value;
      }
    }
    bad("expected True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> values;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++m_pos;
        return values;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) {
        bad("expected a dimension");
      }
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) {
          bad("dimension too large");
        }
        value = value * 10 + (peek() - '0');
        ++m_pos;
      }
      values.push_back(value);
      skip_space();
      if (peek() == ',') {
        ++m_pos;
      } else if (peek() != ')') {
        bad("expected ',' or ')'");
      }
    }
  }

  const std::string& m_file;
  const std::string& m_text;
  size_t m_pos = 0;
};

// The NumPy type codes driftgate reads: a kind letter and a size ("i8"), and "b1", "u1",
// "i1" whose byte order is '|'.
struct TypeCode {
  const char* code;
  ElementType type;
};
constexpr TypeCode k_type_codes[] = {
    {"f2", ElementType::k_float16}, {"f4", ElementType::k_float32}, {"f8", ElementType::k_float64},
    {"i1", ElementType::k_int8},    {"i2", ElementType::k_int16},   {"i4", ElementType::k_int32},
    {"i8", ElementType::k_int64},   {"u1", ElementType::k_uint8},   {"b1", ElementType::k_bool}};

// What a refused descr holds and the NumPy call that converts it to a dtype driftgate reads.
std::string refused_type(const std::string& descr) {
  const std::string code = descr.size() > 1 ? descr.substr(1) : descr;
  const char kind = code.empty() ? '?' : code[0];
  std::string held = "'" + descr + "'";
  std::string target = "float32";
  if (kind == 'u') {
    held = "uint" + std::to_string(8 * std::atoi(code.c_str() + 1));
    target = "int64";
  } else if (kind == 'c') {
    return "holds complex" + std::to_string(8 * std::atoi(code.c_str() + 1)) +
           ", which driftgate does not feed; save the real part (numpy.save(path, "
           "numpy.real(array).astype(numpy.float32)))";
  } else if (kind == 'f') {
    held = "float" + std::to_string(8 * std::atoi(code.c_str() + 1));
  } else if (kind == 'i') {
    held = "int" + std::to_string(8 * std::atoi(code.c_str() + 1));
    target = "int64";
  } else if (kind == 'U' || kind == 'S' || kind == 'O') {
    held = kind == 'O' ? "Python objects" : "strings";
  }
  return "holds " + held + ", which driftgate does not feed (it reads float16, float32, float64, int8, int16, " +
         "int32, int64, uint8 and bool); convert it (numpy.save(path, array.astype(numpy." + target + ")))";
}

bool known_type(const std::string& descr, ElementType& type) {
  if (descr.size() != 3 || (descr[0] != '<' && descr[0] != '>' && descr[0] != '=' && descr[0] != '|')) {
    return false;
  }
  for (const TypeCode& entry : k_type_codes) {
    if (descr.compare(1, 2, entry.code) == 0) {
      type = entry.type;
      return true;
    }
  }
  return false;
}

}  // namespace

int element_size(ElementType type) {
  switch (type) {
    case ElementType::k_float16:
    case ElementType::k_int16:
      return 2;
    case ElementType::k_float32:
    case ElementType::k_int32:
      return 4;
    case ElementType::k_float64:
    case ElementType::k_int64:
      return 8;
    case ElementType::k_int8:
    case ElementType::k_uint8:
    case ElementType::k_bool:
      return 1;
  }
  return 1;
}

bool is_floating(ElementType type) {
  return type == ElementType::k_float16 || type == ElementType::k_float32 || type == ElementType::k_float64;
}

namespace {

NpyHeader parse_header(const std::string& file, std::ifstream& in, uint64_t file_size) {
  char prefix[k_magic_size + 2];
  if (!in.read(prefix, sizeof prefix) || std::memcmp(prefix, k_magic, k_magic_size) != 0) {
    refuse(file, "not a NumPy .npy file (no \\x93NUMPY magic); write the array with numpy.save(path, array)");
  }
  const auto major = static_cast<unsigned char>(prefix[k_magic_size]);
  uint32_t header_size = 0;
  uint64_t header_start = 0;
  if (major == 1) {
    unsigned char bytes[2];
    if (!in.read(reinterpret_cast<char*>(bytes), 2)) {
      refuse(file, "truncated header");
    }
    header_size = bytes[0] | (uint32_t{bytes[1]} << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    unsigned char bytes[4];
    if (!in.read(reinterpret_cast<char*>(bytes), 4)) {
      refuse(file, "truncated header");
    }
    header_size = bytes[0] | (uint32_t{bytes[1]} << 8) | (uint32_t{bytes[2]} << 16) | (uint32_t{bytes[3]} << 24);
    header_start = 12;
  } else {
    refuse(file, ".npy format version " + std::to_string(major) + " (driftgate reads 1.0, 2.0 and 3.0)");
  }
  if (header_size > k_max_header) {
    refuse(file, "header of " + std::to_string(header_size) + " bytes (at most " + std::to_string(k_max_header) +
                     "); write the array with numpy.save");
  }
  if (header_start + header_size > file_size) {
    refuse(file, "truncated header (" + std::to_string(header_size) + " bytes announced, the file has " +
                     std::to_string(file_size) + ")");
  }
  std::string text(header_size, '\0');
  if (!in.read(text.data(), header_size)) {
    refuse(file, "truncated header");
  }
  NpyHeader header = HeaderParser(file, text).parse();
  header.data_offset = header_start + header_size;

  if (!known_type(header.descr, header.type)) {
    refuse(file, refused_type(header.descr));
  }
  if (header.fortran_order) {
    refuse(file, "is in Fortran order; save a C-order array (numpy.save(path, numpy.ascontiguousarray(array)))");
  }
  if (header.shape.empty()) {
    refuse(file,
           "holds a 0-dimensional array; driftgate feeds tensors with a batch dimension, e.g. shape "
           "(1, 3, 224, 224)");
  }
  int64_t elements = 1;
  for (int64_t dimension : header.shape) {
    if (dimension == 0) {
      refuse(file, "has an empty shape " + shape_text(header.shape) + "; an input needs at least one element");
    }
    if (dimension > k_npy_max_elements || elements * dimension > k_npy_max_elements) {
      refuse(file, "shape " + shape_text(header.shape) + " has more than 2^28 elements; use a smaller input");
    }
    elements *= dimension;
  }
  const uint64_t expected = header.data_offset + static_cast<uint64_t>(elements) * element_size(header.type);
  if (file_size != expected) {
    refuse(file, "is " + std::to_string(file_size) + " bytes, but a " + to_string(header.type) + " array of shape " +
                     shape_text(header.shape) + " after the header makes " + std::to_string(expected) +
                     (file_size < expected ? " (truncated?)" : " (trailing bytes: several arrays? use one per file)"));
  }
  return header;
}

std::ifstream open(const std::string& file, uint64_t& size) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) {
    refuse(file, "cannot be opened; check that it exists and is readable");
  }
  size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  return in;
}

}  // namespace

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + "]";
}

NpyHeader read_npy_header(const std::string& file) {
  uint64_t size = 0;
  std::ifstream in = open(file, size);
  return parse_header(file, in, size);
}

NpyArray read_npy(const std::string& file) {
  uint64_t size = 0;
  std::ifstream in = open(file, size);
  NpyHeader header = parse_header(file, in, size);
  NpyArray array;
  array.shape = header.shape;
  array.type = header.type;
  array.bytes.resize(static_cast<size_t>(size - header.data_offset));
  in.seekg(static_cast<std::streamoff>(header.data_offset));
  if (!in.read(reinterpret_cast<char*>(array.bytes.data()), static_cast<std::streamsize>(array.bytes.size()))) {
    refuse(file, "could not read the array's bytes");
  }
  const uint16_t probe = 1;
  const bool little_host = *reinterpret_cast<const unsigned char*>(&probe) == 1;
  const bool swap = (header.descr[0] == '<' && !little_host) || (header.descr[0] == '>' && little_host);
  const size_t width = static_cast<size_t>(element_size(header.type));
  if (swap && width > 1) {
    for (size_t offset = 0; offset < array.bytes.size(); offset += width) {
      std::reverse(array.bytes.begin() + static_cast<std::ptrdiff_t>(offset),
                   array.bytes.begin() + static_cast<std::ptrdiff_t>(offset + width));
    }
  }
  if (header.type == ElementType::k_bool) {
    for (unsigned char byte : array.bytes) {
      if (byte > 1) {
        refuse(file, "holds a bool that is neither 0 nor 1 (byte " + std::to_string(byte) +
                         "); write it with numpy.save(path, array.astype(numpy.bool_))");
      }
    }
  }
  return array;
}

}  // namespace driftgate

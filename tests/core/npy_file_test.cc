// core/npy_file.h on files written byte by byte after numpy.lib.format's description
// (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html): the magic
// "\x93NUMPY", version bytes, a little-endian header length (uint16 in 1.0, uint32 in 2.0),
// the dict literal padded with spaces and ended by '\n'. Files written by NumPy itself are read
// in tests/runner/saved_inputs_test.cc.
#include "core/npy_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/error.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

// A .npy file as numpy.save writes it: the header padded so that the data starts at a
// multiple of 64 bytes.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) {
    header += ' ';
  }
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  const auto size = static_cast<uint32_t>(header.size());
  out += static_cast<char>(size & 0xff);
  out += static_cast<char>((size >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((size >> 16) & 0xff);
    out += static_cast<char>((size >> 24) & 0xff);
  }
  return out + header + data;
}

std::string floats_le(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());  // the test machines are little-endian (x86_64)
  return out;
}

// The bytes of `values` as a file holds them, and as NpyArray::bytes does (little-endian hosts).
template <typename T>
std::string raw(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}
template <typename T>
std::vector<unsigned char> bytes_of(const std::vector<T>& values) {
  const std::string text = raw(values);
  return std::vector<unsigned char>(text.begin(), text.end());
}

class NpyFileTest : public ::testing::Test {
 protected:
  std::string write(const std::string& bytes) {
    const std::string path = m_dir / "x.npy";
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string error_of(const std::string& bytes) {
    const std::string path = write(bytes);
    try {
      read_npy(path);
    } catch (const Error& e) {
      std::string message = e.what();
      return message.replace(message.find(path), path.size(), "X");
    }
    return "(no error)";
  }
  test::TempDir m_dir;
};

TEST_F(NpyFileTest, ReadsVersion1LittleEndianFloat32) {
  const std::vector<float> values = {1.5f, -2.0f, 0.25f, 3.0e-8f, 7.0f, -0.0f};
  const std::string path =
      write(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3), }", floats_le(values)));
  NpyHeader header = read_npy_header(path);
  EXPECT_EQ(header.descr, "<f4");
  EXPECT_EQ(header.data_offset % 64, 0u);
  NpyArray array = read_npy(path);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(array.type, ElementType::k_float32);
  EXPECT_EQ(array.bytes, bytes_of(values));
}

TEST_F(NpyFileTest, ReadsVersion2AndBigEndian) {
  std::string big;
  for (float value : {1.0f, -3.5f}) {
    std::string bytes = floats_le({value});
    big += std::string(bytes.rbegin(), bytes.rend());
  }
  NpyArray array =
      read_npy(write(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", big, /*major=*/2)));
  EXPECT_EQ(array.bytes, bytes_of(std::vector<float>{1.0f, -3.5f}));
}

TEST_F(NpyFileTest, ReadsEveryDtypeTorchSharesExactly) {
  const std::vector<int64_t> ids = {3, -1, int64_t{1} << 40};
  NpyArray array = read_npy(write(npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }", raw(ids))));
  EXPECT_EQ(array.type, ElementType::k_int64);
  EXPECT_EQ(array.bytes, bytes_of(ids));
  std::string big_ids;  // big-endian int64, swapped to the host's order
  for (int64_t id : ids) {
    std::string one = raw(std::vector<int64_t>{id});
    std::string reversed(one.rbegin(), one.rend());
    big_ids += reversed;
  }
  EXPECT_EQ(read_npy(write(npy_bytes("{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }", big_ids))).bytes,
            bytes_of(ids));
  const std::vector<std::pair<std::string, ElementType>> codes = {
      {"<f2", ElementType::k_float16}, {"<f8", ElementType::k_float64}, {"|i1", ElementType::k_int8},
      {"<i2", ElementType::k_int16},   {"<i4", ElementType::k_int32},   {"|u1", ElementType::k_uint8},
      {"|b1", ElementType::k_bool}};
  for (const auto& [descr, type] : codes) {
    const std::string data(static_cast<size_t>(element_size(type)) * 2, '\1');
    NpyArray read =
        read_npy(write(npy_bytes("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }", data)));
    EXPECT_EQ(read.type, type) << descr;
    EXPECT_EQ(read.bytes.size(), data.size()) << descr;
  }
  EXPECT_EQ(error_of(npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\1\2", 2))),
            "tensor file 'X': holds a bool that is neither 0 nor 1 (byte 2); write it with numpy.save(path, "
            "array.astype(numpy.bool_))");
}

TEST_F(NpyFileTest, RefusesWhatItCannotFeedWithTheFixingCall) {
  EXPECT_EQ(error_of("PK\x03\x04 not an npy"),
            "tensor file 'X': not a NumPy .npy file (no \\x93NUMPY magic); write the array with "
            "numpy.save(path, array)");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", std::string(4, '\0'))),
            "tensor file 'X': holds uint16, which driftgate does not feed (it reads float16, float32, float64, int8, "
            "int16, int32, int64, uint8 and bool); convert it (numpy.save(path, array.astype(numpy.int64)))");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\0'))),
            "tensor file 'X': holds complex64, which driftgate does not feed; save the real part (numpy.save(path, "
            "numpy.real(array).astype(numpy.float32)))");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", std::string(24, '\0'))),
            "tensor file 'X': holds strings, which driftgate does not feed (it reads float16, float32, float64, int8, "
            "int16, int32, int64, uint8 and bool); convert it (numpy.save(path, array.astype(numpy.float32)))");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }", floats_le({1, 2}))),
            "tensor file 'X': is in Fortran order; save a C-order array (numpy.save(path, "
            "numpy.ascontiguousarray(array)))");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", floats_le({1, 2}))),
            "tensor file 'X': is 136 bytes, but a float32 array of shape [3] after the header makes 140 (truncated?)");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", floats_le({1, 2}))),
            "tensor file 'X': is 136 bytes, but a float32 array of shape [1] after the header makes 132 (trailing "
            "bytes: several arrays? use one per file)");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", floats_le({1}))),
            "tensor file 'X': holds a 0-dimensional array; driftgate feeds tensors with a batch dimension, e.g. "
            "shape (1, 3, 224, 224)");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536), }", "")),
            "tensor file 'X': shape [65536, 65536] has more than 2^28 elements; use a smaller input");
  EXPECT_EQ(error_of(npy_bytes("{'descr': '<f4', 'shape': (1,), }", floats_le({1}))),
            "tensor file 'X': not a valid .npy header (the header lacks one of 'descr', 'fortran_order', 'shape' "
            "at byte 33); write it with numpy.save");
  EXPECT_EQ(error_of(std::string("\x93NUMPY\x01\x00\xff\xff", 10)),
            "tensor file 'X': truncated header (65535 bytes announced, the file has 10)");
  EXPECT_EQ(error_of(std::string("\x93NUMPY\x02\x00\x00\x00\x10\x00", 12)),
            "tensor file 'X': header of 1048576 bytes (at most 65536); write the array with numpy.save");
  EXPECT_EQ(error_of(std::string("\x93NUMPY\x07\x00", 8)),
            "tensor file 'X': .npy format version 7 (driftgate reads 1.0, 2.0 and 3.0)");
}

TEST_F(NpyFileTest, MissingFileSaysSo) { EXPECT_THROW(read_npy_header(m_dir / "absent.npy"), Error); }

}  // namespace
}  // namespace driftgate

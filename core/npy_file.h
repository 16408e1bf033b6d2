// NumPy .npy files: the tensor input kind (`tensor: x.npy` in a config), so users can feed
// the exact tensors of their pipeline (np.save, torch's .numpy(), every framework writes it).
//
// Format (numpy.lib.format, versions 1.0, 2.0 and 3.0): the magic "\x93NUMPY", a major and
// minor version byte, the header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0),
// then a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
// and the array's bytes. driftgate reads float32 arrays in C order, little- or big-endian:
// the runner feeds every backend one float32 tensor (runner/inputs.h). Everything else is
// refused with what the file holds and the NumPy call that converts it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace driftgate {

struct NpyHeader {
  std::string descr;  // "<f4"
  bool fortran_order = false;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;  // where the array's bytes start
};

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> values;  // C order, native byte order
};

// The largest element count driftgate reads (the same bound as a random input's shape).
constexpr int64_t k_npy_max_elements = int64_t{1} << 28;

// Parses `file`'s header and checks that it holds a float32 C-order array of at most
// k_npy_max_elements elements whose bytes fill the rest of the file exactly. Reads the
// header only (at most 64 KiB). Throws driftgate::Error naming the file.
NpyHeader read_npy_header(const std::string& file);

// Reads a whole float32 array (the header checked as read_npy_header does).
NpyArray read_npy_float32(const std::string& file);

// "[1, 3, 224, 224]"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace driftgate

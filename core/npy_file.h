// NumPy .npy files: the tensor input kind (`tensor: x.npy` in a config), so users can feed
// the exact tensors of their pipeline (np.save, torch's .numpy(), every framework writes it).
//
// Format (numpy.lib.format, versions 1.0, 2.0 and 3.0): the magic "\x93NUMPY", a major and
// minor version byte, the header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0),
// then a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
// and the array's bytes. driftgate reads C-order arrays, little- or big-endian, of the
// dtypes NumPy and torch share (ElementType): the runner feeds them as they are
// (runner/inputs.h). Everything else is refused with what the file holds and the NumPy call
// that converts it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"

namespace driftgate {

// The element types an input tensor may have: the ones NumPy and torch share.
enum class ElementType { k_float16, k_float32, k_float64, k_int8, k_int16, k_int32, k_int64, k_uint8, k_bool };

// Their names, NumPy's and torch's alike ("dtype: int64" in a config).
inline constexpr EnumName<ElementType> k_element_types[] = {
    {ElementType::k_float16, "float16"}, {ElementType::k_float32, "float32"}, {ElementType::k_float64, "float64"},
    {ElementType::k_int8, "int8"},       {ElementType::k_int16, "int16"},     {ElementType::k_int32, "int32"},
    {ElementType::k_int64, "int64"},     {ElementType::k_uint8, "uint8"},     {ElementType::k_bool, "bool"}};
inline const char* to_string(ElementType type) { return enum_name(k_element_types, type); }
// Bytes per element.
int element_size(ElementType type);
bool is_floating(ElementType type);

struct NpyHeader {
  std::string descr;  // "<f4"
  ElementType type = ElementType::k_float32;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;  // where the array's bytes start
};

struct NpyArray {
  std::vector<int64_t> shape;
  ElementType type = ElementType::k_float32;
  std::vector<unsigned char> bytes;  // C order, native byte order; element_size(type) per element
};

// The largest element count driftgate reads (the same bound as a random input's shape).
constexpr int64_t k_npy_max_elements = int64_t{1} << 28;

// Parses `file`'s header and checks that it holds a C-order array of an ElementType of at most
// k_npy_max_elements elements whose bytes fill the rest of the file exactly. Reads the
// header only (at most 64 KiB). Throws driftgate::Error naming the file.
NpyHeader read_npy_header(const std::string& file);

// Reads a whole array (the header checked as read_npy_header does).
NpyArray read_npy(const std::string& file);

// "[1, 3, 224, 224]"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace driftgate

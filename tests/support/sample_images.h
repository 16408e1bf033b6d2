// Image bytes shared by the image checker's tests (tests/core/image_check_test.cc, which
// builds its variants from them) and the runner's input tests (tests/runner/inputs_test.cc).
// Written by Python (zlib, struct) and decoded by stb_image.
#pragma once

#include <cstddef>
#include <string>

namespace driftgate::test {

inline std::string from_hex(const std::string& hex) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return bytes;
}

// A 2x2 RGB PNG (red, green / blue, white): chunks IHDR at byte 8, IDAT at 33 (18 bytes of
// data), IEND at 63.
inline const std::string k_png = from_hex(
    "89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000001249444154789c63f8cfc0c000c20cff8100001fee"
    "05fb0bd9688b0000000049454e44ae426082");

// An 8x8 baseline JPEG, three components, every block DC 0 and EOB coded with one-symbol
// Huffman tables (stb_image decodes it to grey 128). DQT at 2, SOF0 at 71, DHT at 90 and
// 112, SOS at 134, one byte of scan data at 148, EOI at 149.
inline const std::string k_jpeg = from_hex(
    "ffd8ffdb0043000101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101"
    "0101010101010101010101010101ffc00011080008000803011100021100031100ffc40014000100000000000000000000000000000000ffc4"
    "0014100100000000000000000000000000000000ffda000c03010002000300003f0003ffd9");

}  // namespace driftgate::test

// Image inputs (`image: cat.png` in a config), checked before the decoder sees them.
//
// The runner decodes images with stb_image, which is forgiving by design: it does not
// check PNG CRCs, decodes JPEG garbage into noise and stops quietly at a truncation,
// so a damaged file would become a wrong input with exit 0. Here the file is read
// once through the bounded reader (regular files only, at most k_image_file's cap)
// and its structure is walked:
//   - PNG: the signature, then every chunk: its length within the file, the CRC-32 of
//     its type and data, IHDR first with a sane size and a valid bit depth/colour
//     type, a PLTE before the data of a palette image, at least one IDAT, and IEND
//     last with nothing after it;
//   - JPEG: the markers from SOI to EOI: every segment's length within the file, a
//     frame header (SOF, baseline or progressive Huffman) before the first scan (SOS),
//     each scan's entropy-coded data up to the next marker with its restart markers in
//     sequence, and EOI (bytes after EOI are allowed: phones append data there);
//   - BMP and binary PNM (P5, P6): the header, the size and that the pixel data fit.
// Anything else is refused, naming the formats read. Every error names the file,
// what is wrong and, where there is one, the byte offset (from 0, as `xxd` shows it).
// The checked bytes are returned, so the decoder does not read the file again.
#pragma once

#include <cstdint>
#include <string>

#include "core/input_file.h"

namespace driftgate {

// Far above any real input image (a 24-megapixel PNG is ~70 MiB only when stored raw).
inline constexpr InputKind k_image_file{"image", 64 * k_mib, nullptr};

// The most pixels an image may have: the runner turns it into a float tensor of
// width x height x 3 values, bounded like a random input's shape (2^28 values).
inline constexpr std::uint64_t k_image_max_pixels = (std::uint64_t{1} << 28) / 3;
// The most pixels along one side (stb_image's own limit).
inline constexpr std::uint32_t k_image_max_side = std::uint32_t{1} << 24;

enum class ImageFormat { k_png, k_jpeg, k_bmp, k_pnm };

// "PNG", "JPEG", "BMP", "PNM".
const char* image_format_name(ImageFormat format);

struct ImageInfo {
  ImageFormat format = ImageFormat::k_png;
  std::uint32_t width = 0;
  std::uint32_t height = 0;
};

// Checks that `bytes`, the content of the file `path`, hold one whole, undamaged
// image of a format the decoder reads. Throws driftgate::Error ("image 'path': ...").
ImageInfo check_image_bytes(const std::string& path, const std::string& bytes);

struct CheckedImage {
  ImageInfo info;
  std::string bytes;  // the whole file, for stbi_load_from_memory
};

// Reads `path` (read_input_file with k_image_file) and checks it (check_image_bytes).
CheckedImage read_checked_image(const std::string& path);

}  // namespace driftgate

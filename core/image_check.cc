#include "core/image_check.h"

#include <zlib.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"

namespace driftgate {
namespace {

constexpr const char* k_corrupt = "; the file is corrupt, re-export it";
constexpr const char* k_truncated = "; the file is truncated, copy or re-export it again";

[[noreturn]] void refuse(const std::string& path, const std::string& what, const char* fix) {
  throw Error("image '" + path + "': " + what + fix);
}

std::string hex8(unsigned value) {
  std::array<char, 8> text{};
  std::snprintf(text.data(), text.size(), "0x%02x", value & 0xffu);
  return text.data();
}

std::string hex32(std::uint32_t value) {
  std::array<char, 16> text{};
  std::snprintf(text.data(), text.size(), "0x%08x", static_cast<unsigned>(value));
  return text.data();
}

// "89 50 4e 47": up to `count` bytes from `at`.
std::string hex_bytes(const std::string& bytes, std::size_t at, std::size_t count) {
  std::string text;
  for (std::size_t i = at; i < bytes.size() && i < at + count; ++i) {
    std::array<char, 4> one{};
    std::snprintf(one.data(), one.size(), "%02x", static_cast<unsigned char>(bytes[i]));
    text += (text.empty() ? "" : " ") + std::string(one.data());
  }
  return text;
}

std::string at_byte(std::size_t offset) { return "at byte " + std::to_string(offset); }

unsigned byte_at(const std::string& bytes, std::size_t at) { return static_cast<unsigned char>(bytes[at]); }

std::uint32_t be32(const std::string& bytes, std::size_t at) {
  return (std::uint32_t{byte_at(bytes, at)} << 24) | (std::uint32_t{byte_at(bytes, at + 1)} << 16) |
         (std::uint32_t{byte_at(bytes, at + 2)} << 8) | std::uint32_t{byte_at(bytes, at + 3)};
}

std::uint32_t be16(const std::string& bytes, std::size_t at) {
  return (std::uint32_t{byte_at(bytes, at)} << 8) | std::uint32_t{byte_at(bytes, at + 1)};
}

std::uint32_t le16(const std::string& bytes, std::size_t at) {
  return std::uint32_t{byte_at(bytes, at)} | (std::uint32_t{byte_at(bytes, at + 1)} << 8);
}

std::uint32_t le32(const std::string& bytes, std::size_t at) { return le16(bytes, at) | (le16(bytes, at + 2) << 16); }

bool starts_with(const std::string& bytes, const char* magic, std::size_t size) {
  return bytes.size() >= size && bytes.compare(0, size, magic, size) == 0;
}

// A size the decoder and the runner can hold; `where` says where it was read.
void check_size(const std::string& path, std::uint64_t width, std::uint64_t height, const std::string& where) {
  std::string size = std::to_string(width) + " x " + std::to_string(height) + " pixels";
  if (width == 0 || height == 0) {
    refuse(path, where + " gives a size of " + size, k_corrupt);
  }
  if (width > k_image_max_side || height > k_image_max_side || width * height > k_image_max_pixels) {
    throw Error("image '" + path + "': " + where + " gives a size of " + size + ", over driftgate's limit of " +
                std::to_string(k_image_max_pixels) + " pixels (" + std::to_string(k_image_max_side) +
                " along a side); is this the right file? Resize it or use a random input");
  }
}

// ---------------------------------------------------------------------------------- PNG

constexpr char k_png_signature[] = "\x89PNG\r\n\x1a\n";
constexpr std::size_t k_png_signature_size = 8;
constexpr std::uint32_t k_png_max_length = 0x7fffffffu;  // PNG's limit on a chunk's length

struct PngHeader {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  unsigned bit_depth = 0;
  unsigned colour_type = 0;
  unsigned interlace = 0;
};

unsigned png_channels(unsigned colour_type) {
  switch (colour_type) {
    case 0:
      return 1;
    case 2:
      return 3;
    case 3:
      return 1;
    case 4:
      return 2;
    default:
      return 4;
  }
}

bool png_depth_allowed(unsigned colour_type, unsigned depth) {
  switch (colour_type) {
    case 0:
      return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
    case 3:
      return depth == 1 || depth == 2 || depth == 4 || depth == 8;
    case 2:
    case 4:
    case 6:
      return depth == 8 || depth == 16;
    default:
      return false;
  }
}

PngHeader parse_ihdr(const std::string& path, const std::string& bytes, std::size_t chunk, std::uint32_t length) {
  std::string where = "chunk IHDR " + at_byte(chunk);
  if (length != 13) {
    refuse(path, where + " has " + std::to_string(length) + " bytes of data, not 13", k_corrupt);
  }
  std::size_t data = chunk + 8;
  PngHeader header;
  header.width = be32(bytes, data);
  header.height = be32(bytes, data + 4);
  header.bit_depth = byte_at(bytes, data + 8);
  header.colour_type = byte_at(bytes, data + 9);
  header.interlace = byte_at(bytes, data + 12);
  if (header.width > k_png_max_length || header.height > k_png_max_length) {
    refuse(path,
           where + " gives a size of " + std::to_string(header.width) + " x " + std::to_string(header.height) +
               " pixels, over PNG's limit of 2^31-1",
           k_corrupt);
  }
  check_size(path, header.width, header.height, where);
  if (!png_depth_allowed(header.colour_type, header.bit_depth)) {
    refuse(path,
           where + " gives colour type " + std::to_string(header.colour_type) + " with bit depth " +
               std::to_string(header.bit_depth) + ", which PNG does not define",
           k_corrupt);
  }
  if (byte_at(bytes, data + 10) != 0 || byte_at(bytes, data + 11) != 0 || header.interlace > 1) {
    refuse(path,
           where + " gives compression method " + std::to_string(byte_at(bytes, data + 10)) + ", filter method " +
               std::to_string(byte_at(bytes, data + 11)) + " and interlace method " + std::to_string(header.interlace) +
               " (PNG defines 0, 0 and 0 or 1)",
           k_corrupt);
  }
  return header;
}

// The bytes of filtered rows (a filter-type byte, then the packed pixels) the pixel
// data must inflate to.
std::uint64_t png_raw_size(const PngHeader& header) {
  std::uint64_t bits = std::uint64_t{header.bit_depth} * png_channels(header.colour_type);
  auto pass_size = [&](std::uint64_t width, std::uint64_t height) -> std::uint64_t {
    if (width == 0 || height == 0) {
      return 0;
    }
    return height * (1 + (width * bits + 7) / 8);
  };
  if (header.interlace == 0) {
    return pass_size(header.width, header.height);
  }
  // Adam7: the seven passes' origins and steps.
  const unsigned x0[] = {0, 4, 0, 2, 0, 1, 0};
  const unsigned y0[] = {0, 0, 4, 0, 2, 0, 1};
  const unsigned dx[] = {8, 8, 4, 4, 2, 2, 1};
  const unsigned dy[] = {8, 8, 8, 4, 4, 2, 2};
  std::uint64_t total = 0;
  for (int pass = 0; pass < 7; ++pass) {
    std::uint64_t width = header.width > x0[pass] ? (header.width - x0[pass] + dx[pass] - 1) / dx[pass] : 0;
    std::uint64_t height = header.height > y0[pass] ? (header.height - y0[pass] + dy[pass] - 1) / dy[pass] : 0;
    total += pass_size(width, height);
  }
  return total;
}

struct Span {
  std::size_t at;
  std::size_t size;
};

// Inflates the IDAT chunks' data (a zlib stream, its Adler-32 checked by zlib) into
// nothing, checking that it holds exactly the rows the header's size needs.
void check_png_pixels(const std::string& path, const std::string& bytes, const PngHeader& header,
                      const std::vector<Span>& idat, std::size_t first_idat) {
  std::uint64_t expected = png_raw_size(header);
  std::string where = "the pixel data (IDAT chunks from byte " + std::to_string(first_idat) + ")";
  z_stream stream{};
  if (inflateInit(&stream) != Z_OK) {
    throw Error("image '" + path + "': cannot start zlib to check the pixel data");
  }
  std::array<unsigned char, 1 << 16> out{};
  std::uint64_t produced = 0;
  int result = Z_OK;
  auto step = [&]() -> std::size_t {
    stream.next_out = out.data();
    stream.avail_out = static_cast<uInt>(out.size());
    result = inflate(&stream, Z_NO_FLUSH);
    std::size_t got = out.size() - stream.avail_out;
    produced += got;
    return got;
  };
  bool stop = false;
  for (const Span& span : idat) {
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + span.at));
    stream.avail_in = static_cast<uInt>(span.size);
    while (stream.avail_in > 0 && !stop) {
      step();
      if (result == Z_BUF_ERROR) {
        break;  // no progress possible: the next chunk's data may bring it
      }
      stop = result != Z_OK || produced > expected;
    }
    if (stop) {
      break;  // an error, too much output, or the end of the stream (what follows it is ignored, as stb_image does)
    }
  }
  // The input is all in: what zlib still holds back.
  while (!stop && result == Z_OK) {
    std::size_t got = step();
    stop = got == 0 || produced > expected;
  }
  std::string message = stream.msg != nullptr ? stream.msg : "";
  inflateEnd(&stream);
  std::string need = std::to_string(expected) + " bytes that " + std::to_string(header.width) + " x " +
                     std::to_string(header.height) + " pixels need";
  if (produced > expected) {
    refuse(path, where + " inflates to more than the " + need, k_corrupt);
  }
  if (result != Z_STREAM_END && result != Z_OK && result != Z_BUF_ERROR) {  // Z_DATA_ERROR: a bad Adler-32 too
    refuse(path, where + " cannot be inflated (zlib: " + (message.empty() ? "error" : message) + ")", k_corrupt);
  }
  if (result != Z_STREAM_END) {
    refuse(path, where + " ends early (" + std::to_string(produced) + " of the " + need + ")", k_truncated);
  }
  if (produced != expected) {
    refuse(path, where + " holds " + std::to_string(produced) + " bytes, not the " + need, k_corrupt);
  }
}

ImageInfo check_png(const std::string& path, const std::string& bytes) {
  if (!starts_with(bytes, k_png_signature, k_png_signature_size)) {
    refuse(path,
           "the PNG signature is damaged (bytes 0-7 are " + hex_bytes(bytes, 0, 8) +
               ", not 89 50 4e 47 0d 0a 1a 0a; a transfer in text mode changes line endings)",
           k_corrupt);
  }
  std::size_t at = k_png_signature_size;
  bool has_header = false;
  bool has_palette = false;
  PngHeader header;
  std::vector<Span> idat;
  std::size_t first_idat = 0;
  std::string previous;
  for (;;) {
    if (at == bytes.size()) {
      refuse(path, "the file ends " + at_byte(at) + " without an IEND chunk", k_truncated);
    }
    if (bytes.size() - at < 12) {
      refuse(path,
             "the file ends " + at_byte(bytes.size()) + " inside the chunk that starts " + at_byte(at) + " (" +
                 std::to_string(bytes.size() - at) + " bytes, under the 12 of a chunk's length, type and CRC)",
             k_truncated);
    }
    std::uint32_t length = be32(bytes, at);
    std::string type = bytes.substr(at + 4, 4);
    for (char c : type) {
      if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) {
        refuse(path,
               "the chunk " + at_byte(at) + " has an invalid type (bytes " + hex_bytes(bytes, at + 4, 4) +
                   ", not four ASCII letters)" +
                   (previous.empty() ? std::string()
                                     : "; the length of the chunk " + previous + " before it may be wrong"),
               k_corrupt);
      }
    }
    std::string where = "chunk " + type + " " + at_byte(at);
    if (length > k_png_max_length) {
      refuse(path, where + " declares " + std::to_string(length) + " bytes of data, over PNG's limit of 2^31-1",
             k_corrupt);
    }
    std::size_t left = bytes.size() - at - 12;
    if (length > left) {
      refuse(path,
             where + " declares " + std::to_string(length) + " bytes of data but the file has only " +
                 std::to_string(left) + " more",
             k_truncated);
    }
    std::uint32_t stored = be32(bytes, at + 8 + length);
    auto computed = static_cast<std::uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(bytes.data() + at + 4), static_cast<uInt>(length + 4)));
    if (stored != computed) {
      refuse(path, where + " has a bad CRC (stored " + hex32(stored) + ", computed " + hex32(computed) + ")",
             k_corrupt);
    }
    if (!has_header && type != "IHDR") {
      refuse(path, "the first chunk is " + type + " " + at_byte(at) + ", not IHDR", k_corrupt);
    }
    if (type == "IHDR") {
      if (has_header) {
        refuse(path, "a second IHDR chunk " + at_byte(at), k_corrupt);
      }
      header = parse_ihdr(path, bytes, at, length);
      has_header = true;
    } else if (type == "PLTE") {
      has_palette = true;
    } else if (type == "IDAT") {
      if (header.colour_type == 3 && !has_palette) {
        refuse(path, where + " comes before the palette (PLTE) that its colour type 3 needs", k_corrupt);
      }
      if (idat.empty()) {
        first_idat = at;
      }
      idat.push_back(Span{at + 8, length});
    } else if (type == "IEND") {
      std::size_t end = at + 12 + length;
      if (idat.empty()) {
        refuse(path, "no IDAT chunk before IEND " + at_byte(at) + ": the file holds no pixel data", k_corrupt);
      }
      if (end != bytes.size()) {
        refuse(path,
               std::to_string(bytes.size() - end) + " bytes follow the IEND chunk " + at_byte(at) +
                   " (the end of the image)",
               "; the file is corrupt or has data appended, re-export it");
      }
      check_png_pixels(path, bytes, header, idat, first_idat);
      return ImageInfo{ImageFormat::k_png, header.width, header.height};
    }
    previous = type + " " + at_byte(at);
    at += 12 + length;
  }
}

// --------------------------------------------------------------------------------- JPEG

// "SOF0", "DHT", "APP1", "0xff02": a marker's name for messages.
std::string marker_name(unsigned code) {
  if (code >= 0xc0 && code <= 0xcf && code != 0xc4 && code != 0xc8 && code != 0xcc) {
    return "SOF" + std::to_string(code - 0xc0);
  }
  if (code >= 0xd0 && code <= 0xd7) {
    return "RST" + std::to_string(code - 0xd0);
  }
  if (code >= 0xe0 && code <= 0xef) {
    return "APP" + std::to_string(code - 0xe0);
  }
  if (code >= 0xf0 && code <= 0xfd) {
    return "JPG" + std::to_string(code - 0xf0);
  }
  switch (code) {
    case 0x01:
      return "TEM";
    case 0xc4:
      return "DHT";
    case 0xc8:
      return "JPG";
    case 0xcc:
      return "DAC";
    case 0xd8:
      return "SOI";
    case 0xd9:
      return "EOI";
    case 0xda:
      return "SOS";
    case 0xdb:
      return "DQT";
    case 0xdc:
      return "DNL";
    case 0xdd:
      return "DRI";
    case 0xde:
      return "DHP";
    case 0xdf:
      return "EXP";
    case 0xfe:
      return "COM";
    default:
      return "0xff" + hex8(code).substr(2);
  }
}

bool is_sof(unsigned code) { return code >= 0xc0 && code <= 0xcf && code != 0xc4 && code != 0xc8 && code != 0xcc; }

// The entropy-coded data of the scan whose SOS is at `sos`, from `at` (after its header) up
// to the next marker: 0xff followed by a byte that is not 0x00 (a stuffed 0xff), not 0xff
// (a fill byte) and not RST0-7. Checks the restart markers' sequence; returns where the
// marker's 0xff is.
std::size_t skip_scan(const std::string& path, const std::string& bytes, std::size_t sos, std::size_t at,
                      unsigned restart_interval) {
  unsigned next_restart = 0;
  while (at < bytes.size()) {
    if (byte_at(bytes, at) != 0xff) {
      ++at;
      continue;
    }
    if (at + 1 == bytes.size()) {
      break;
    }
    unsigned code = byte_at(bytes, at + 1);
    if (code == 0x00) {
      at += 2;
    } else if (code == 0xff) {
      ++at;  // a fill byte before a marker
    } else if (code >= 0xd0 && code <= 0xd7) {
      if (restart_interval == 0) {
        refuse(path,
               "restart marker " + marker_name(code) + " " + at_byte(at) + " in the scan that starts " + at_byte(sos) +
                   ", which has no restart interval (DRI)",
               k_corrupt);
      }
      if (code != 0xd0 + next_restart) {
        refuse(path,
               "restart marker " + marker_name(code) + " " + at_byte(at) + " is out of sequence (expected " +
                   marker_name(0xd0 + next_restart) + ")",
               k_corrupt);
      }
      next_restart = (next_restart + 1) % 8;
      at += 2;
    } else {
      return at;
    }
  }
  refuse(path,
         "the file ends " + at_byte(bytes.size()) + " inside the scan data of SOS " + at_byte(sos) +
             ", without an EOI marker",
         k_truncated);
}

ImageInfo check_jpeg(const std::string& path, const std::string& bytes) {
  std::size_t at = 2;  // after SOI
  bool has_frame = false;
  bool has_scan = false;
  unsigned restart_interval = 0;
  ImageInfo info{ImageFormat::k_jpeg, 0, 0};
  for (;;) {
    if (at >= bytes.size()) {
      refuse(path, "the file ends " + at_byte(bytes.size()) + " without an EOI marker (the end of the image)",
             k_truncated);
    }
    if (byte_at(bytes, at) != 0xff) {
      refuse(path, "expected a marker " + at_byte(at) + ", found " + hex8(byte_at(bytes, at)) + " (not 0xff)",
             k_corrupt);
    }
    std::size_t marker = at;
    while (at < bytes.size() && byte_at(bytes, at) == 0xff) {
      ++at;  // fill bytes may precede a marker
    }
    if (at == bytes.size()) {
      refuse(path, "the file ends " + at_byte(bytes.size()) + " inside the marker " + at_byte(marker), k_truncated);
    }
    marker = at - 1;
    unsigned code = byte_at(bytes, at);
    ++at;
    std::string where = marker_name(code) + " " + at_byte(marker);
    if (code == 0xd9) {
      if (!has_scan) {
        refuse(path, "EOI " + at_byte(marker) + " ends the image before any scan (SOS): it holds no pixel data",
               k_corrupt);
      }
      return info;  // bytes after EOI are allowed (thumbnails, phones' appended data)
    }
    if (code == 0x01) {
      continue;  // TEM: no segment
    }
    if (code == 0x00 || code == 0xd8 || (code >= 0xd0 && code <= 0xd7) || (code >= 0x02 && code <= 0xbf)) {
      refuse(path,
             "unexpected marker " + where +
                 (code == 0xd8                   ? " (a second start of image)"
                  : code >= 0xd0 && code <= 0xd7 ? " (a restart marker outside scan data)"
                                                 : ""),
             k_corrupt);
    }
    if (bytes.size() - at < 2) {
      refuse(path, "the file ends " + at_byte(bytes.size()) + " inside the length of " + where, k_truncated);
    }
    std::uint32_t length = be16(bytes, at);
    if (length < 2) {
      refuse(path, where + " declares a segment length of " + std::to_string(length) + " (at least 2)", k_corrupt);
    }
    if (length > bytes.size() - at) {
      refuse(path,
             where + " declares a segment of " + std::to_string(length) + " bytes but the file has only " +
                 std::to_string(bytes.size() - at) + " more",
             k_truncated);
    }
    std::size_t data = at + 2;
    std::size_t data_size = length - 2;
    at += length;
    if (is_sof(code)) {
      if (has_frame) {
        refuse(path, "a second frame header " + where, k_corrupt);
      }
      if (code != 0xc0 && code != 0xc1 && code != 0xc2) {
        const char* kind = code == 0xc3                   ? "lossless"
                           : code >= 0xc9 && code != 0xcc ? "arithmetic-coded"
                                                          : "hierarchical";
        throw Error("image '" + path + "': the frame header " + where + " is " + kind +
                    ", which driftgate's decoder does not read; re-export it as a baseline or progressive JPEG "
                    "(or a PNG)");
      }
      if (data_size < 6) {
        refuse(path, "the frame header " + where + " has " + std::to_string(data_size) + " bytes, under 6", k_corrupt);
      }
      unsigned precision = byte_at(bytes, data);
      info.height = be16(bytes, data + 1);
      info.width = be16(bytes, data + 3);
      unsigned components = byte_at(bytes, data + 5);
      if (components < 1 || components > 4 || data_size != 6 + 3 * std::size_t{components}) {
        refuse(path,
               "the frame header " + where + " declares " + std::to_string(components) + " components in " +
                   std::to_string(data_size) + " bytes (1 to 4 components, 3 bytes each after 6)",
               k_corrupt);
      }
      if (precision != 8) {
        throw Error("image '" + path + "': the frame header " + where + " declares " + std::to_string(precision) +
                    "-bit samples, which driftgate's decoder does not read (8-bit only); re-export it as a PNG");
      }
      check_size(path, info.width, info.height, "the frame header " + where);
      has_frame = true;
    } else if (code == 0xdd) {
      if (data_size != 2) {
        refuse(path, where + " has " + std::to_string(data_size) + " bytes of data, not 2", k_corrupt);
      }
      restart_interval = be16(bytes, data);
    } else if (code == 0xda) {
      if (!has_frame) {
        refuse(path, "the scan " + where + " comes before any frame header (SOF)", k_corrupt);
      }
      unsigned components = data_size > 0 ? byte_at(bytes, data) : 0;
      if (components < 1 || components > 4 || data_size != 4 + 2 * std::size_t{components}) {
        refuse(path,
               "the scan header " + where + " declares " + std::to_string(components) + " components in " +
                   std::to_string(data_size) + " bytes (1 to 4 components, 2 bytes each after 4)",
               k_corrupt);
      }
      has_scan = true;
      at = skip_scan(path, bytes, marker, at, restart_interval);
    }
  }
}

// ---------------------------------------------------------------------------------- BMP

ImageInfo check_bmp(const std::string& path, const std::string& bytes) {
  if (bytes.size() < 26) {
    refuse(path, "the BMP headers end early (the file has " + std::to_string(bytes.size()) + " bytes)", k_truncated);
  }
  std::uint32_t pixels_at = le32(bytes, 10);
  std::uint32_t header_size = le32(bytes, 14);
  if (header_size != 12 && header_size != 40 && header_size != 52 && header_size != 56 && header_size != 108 &&
      header_size != 124) {
    refuse(path, "the BMP info header " + at_byte(14) + " has an unknown size of " + std::to_string(header_size),
           k_corrupt);
  }
  if (bytes.size() < 14 + std::size_t{header_size}) {
    refuse(path,
           "the BMP info header " + at_byte(14) + " of " + std::to_string(header_size) + " bytes ends past the file (" +
               std::to_string(bytes.size()) + " bytes)",
           k_truncated);
  }
  std::int64_t width = 0;
  std::int64_t height = 0;
  unsigned bits = 0;
  std::uint32_t compression = 0;
  if (header_size == 12) {
    width = le16(bytes, 18);
    height = le16(bytes, 20);
    bits = le16(bytes, 24);
  } else {
    width = static_cast<std::int32_t>(le32(bytes, 18));
    height = static_cast<std::int32_t>(le32(bytes, 22));
    bits = le16(bytes, 28);
    compression = le32(bytes, 30);
  }
  if (width < 0) {
    refuse(path, "the BMP info header gives a negative width (" + std::to_string(width) + ")", k_corrupt);
  }
  std::uint64_t rows = static_cast<std::uint64_t>(height < 0 ? -height : height);  // negative: top-down
  check_size(path, static_cast<std::uint64_t>(width), rows, "the BMP info header");
  if (pixels_at >= bytes.size()) {
    refuse(path,
           "the BMP pixel data offset (" + std::to_string(pixels_at) + ") is past the end of the file (" +
               std::to_string(bytes.size()) + " bytes)",
           k_truncated);
  }
  if ((compression == 0 || compression == 3) &&
      (bits == 1 || bits == 4 || bits == 8 || bits == 16 || bits == 24 || bits == 32)) {
    std::uint64_t row_bytes = (static_cast<std::uint64_t>(width) * bits + 31) / 32 * 4;
    std::uint64_t need = row_bytes * rows;
    if (need > bytes.size() - pixels_at) {
      refuse(path,
             "the pixel data " + at_byte(pixels_at) + " has " + std::to_string(bytes.size() - pixels_at) +
                 " bytes, under the " + std::to_string(need) + " that " + std::to_string(width) + " x " +
                 std::to_string(rows) + " pixels of " + std::to_string(bits) + " bits need",
             k_truncated);
    }
  }
  return ImageInfo{ImageFormat::k_bmp, static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(rows)};
}

// ---------------------------------------------------------------------------------- PNM

ImageInfo check_pnm(const std::string& path, const std::string& bytes) {
  char kind = bytes[1];
  if (kind != '5' && kind != '6') {
    throw Error("image '" + path + "': a PNM of type P" + std::string(1, kind) +
                ", which driftgate's decoder does not read (binary P5 and P6 only); convert it (e.g. `convert in.pnm "
                "out.png`)");
  }
  std::size_t at = 2;
  // The header's three numbers: whitespace and #-comments between them.
  auto number = [&](const char* what) -> std::uint64_t {
    for (;;) {
      while (at < bytes.size() && std::strchr(" \t\r\n\v\f", bytes[at]) != nullptr) {
        ++at;
      }
      if (at < bytes.size() && bytes[at] == '#') {
        while (at < bytes.size() && bytes[at] != '\n' && bytes[at] != '\r') {
          ++at;
        }
        continue;
      }
      break;
    }
    if (at == bytes.size()) {
      refuse(path, "the PNM header ends " + at_byte(at) + " before its " + what, k_truncated);
    }
    std::size_t start = at;
    std::uint64_t value = 0;
    while (at < bytes.size() && bytes[at] >= '0' && bytes[at] <= '9' && at - start < 10) {
      value = value * 10 + static_cast<std::uint64_t>(bytes[at] - '0');
      ++at;
    }
    if (at == start || (at < bytes.size() && bytes[at] >= '0' && bytes[at] <= '9')) {
      refuse(path, "the PNM header has no valid " + std::string(what) + " " + at_byte(start), k_corrupt);
    }
    return value;
  };
  std::uint64_t width = number("width");
  std::uint64_t height = number("height");
  std::uint64_t max_value = number("maximum value");
  if (at == bytes.size() || std::strchr(" \t\r\n\v\f", bytes[at]) == nullptr) {
    refuse(path, "the PNM header does not end with a whitespace " + at_byte(at),
           at == bytes.size() ? k_truncated : k_corrupt);
  }
  ++at;
  check_size(path, width, height, "the PNM header");
  if (max_value == 0 || max_value > 65535) {
    refuse(path, "the PNM header gives a maximum value of " + std::to_string(max_value) + " (1 to 65535)", k_corrupt);
  }
  std::uint64_t need = width * height * (kind == '6' ? 3 : 1) * (max_value > 255 ? 2 : 1);
  if (need > bytes.size() - at) {
    refuse(path,
           "the pixel data " + at_byte(at) + " has " + std::to_string(bytes.size() - at) + " bytes, under the " +
               std::to_string(need) + " that " + std::to_string(width) + " x " + std::to_string(height) +
               " pixels need",
           k_truncated);
  }
  return ImageInfo{ImageFormat::k_pnm, static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(height)};
}

// "it looks like a GIF image": formats the decoder could be asked for but is not given.
std::string known_other_format(const std::string& bytes) {
  if (starts_with(bytes, "GIF8", 4)) {
    return "GIF";
  }
  if (bytes.size() >= 12 && starts_with(bytes, "RIFF", 4) && bytes.compare(8, 4, "WEBP") == 0) {
    return "WebP";
  }
  if (starts_with(bytes, "II*\0", 4) || starts_with(bytes, "MM\0*", 4)) {
    return "TIFF";
  }
  if (starts_with(bytes, "8BPS", 4)) {
    return "Photoshop (PSD)";
  }
  if (bytes.size() >= 12 && bytes.compare(4, 4, "ftyp") == 0) {
    return "HEIF/AVIF";
  }
  return "";
}

}  // namespace

const char* image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::k_png:
      return "PNG";
    case ImageFormat::k_jpeg:
      return "JPEG";
    case ImageFormat::k_bmp:
      return "BMP";
    case ImageFormat::k_pnm:
      return "PNM";
  }
  return "image";
}

ImageInfo check_image_bytes(const std::string& path, const std::string& bytes) {
  if (bytes.empty()) {
    throw Error("image '" + path + "' is empty (0 bytes); check the path, or re-export the image");
  }
  if (starts_with(bytes, "\x89PNG", 4)) {
    return check_png(path, bytes);
  }
  if (starts_with(bytes, "\xff\xd8", 2)) {
    return check_jpeg(path, bytes);
  }
  if (starts_with(bytes, "BM", 2)) {
    return check_bmp(path, bytes);
  }
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '6') {
    return check_pnm(path, bytes);
  }
  std::string other = known_other_format(bytes);
  throw Error(
      "image '" + path + "' is not a PNG, JPEG, BMP or PNM image (" +
      (other.empty() ? "it starts with the bytes " + hex_bytes(bytes, 0, 8) : "it looks like a " + other + " image") +
      "); driftgate reads those four formats: convert it (e.g. `convert in.webp out.png`)");
}

CheckedImage read_checked_image(const std::string& path) {
  CheckedImage image;
  image.bytes = read_input_file(path, k_image_file);
  image.info = check_image_bytes(path, image.bytes);
  return image;
}

}  // namespace driftgate

// The image checker: PNG chunks and CRCs, JPEG markers, BMP/PNM headers, read through
// the bounded reader. The images are bytes built here: the reference PNG and JPEG were
// written by Python (zlib, struct) and decode with stb_image; the CRCs of the variants
// come from a bitwise CRC-32 written below, not from zlib, and the expected offsets and
// CRC values in the messages were computed with Python's zlib.crc32.
#include "core/image_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/support/sample_images.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

using test::from_hex;
using test::k_jpeg;
using test::k_png;

// CRC-32 (ISO-HDLC, as PNG uses it), bit by bit.
std::uint32_t crc32_bitwise(const std::string& bytes) {
  std::uint32_t crc = 0xffffffffu;
  for (char c : bytes) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1u) ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
    }
  }
  return crc ^ 0xffffffffu;
}

std::string be32(std::uint32_t value) {
  return std::string{static_cast<char>(value >> 24), static_cast<char>(value >> 16), static_cast<char>(value >> 8),
                     static_cast<char>(value)};
}

std::string chunk(const std::string& type, const std::string& data) {
  return be32(static_cast<std::uint32_t>(data.size())) + type + data + be32(crc32_bitwise(type + data));
}

const std::string k_signature = "\x89PNG\r\n\x1a\n";

std::string ihdr(std::uint32_t width, std::uint32_t height, int depth, int colour, int interlace = 0) {
  return chunk(
      "IHDR", be32(width) + be32(height) +
                  std::string{static_cast<char>(depth), static_cast<char>(colour), 0, 0, static_cast<char>(interlace)});
}

// 2x2 RGB, 8 bits: red, green / blue, white. zlib.compress of the filtered rows.
const std::string k_rows_2x2 = from_hex("789c63f8cfc0c000c20cff8100001fee05fb");
// The same pixels in Adam7 order (passes 1, 6 and 7).
const std::string k_rows_2x2_interlaced = from_hex("789c63f8cf00041002080020ee05fb");
// Only the first row.
const std::string k_rows_2x1 = from_hex("789c63f8cfc0c0f09f010007ff01ff");
// k_rows_2x2 with its Adler-32 changed (the last byte).
const std::string k_rows_2x2_bad_adler = from_hex("789c63f8cfc0c000c20cff8100001fee05fa");

// k_png and k_jpeg (tests/support/sample_images.h) are the references the variants start from.

std::string error_of(const std::string& bytes, const std::string& path = "x.png") {
  try {
    check_image_bytes(path, bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string k_corrupt = "; the file is corrupt, re-export it";
const std::string k_truncated = "; the file is truncated, copy or re-export it again";

// ------------------------------------------------------------------------------- PNG

TEST(ImageCheck, AValidPngPasses) {
  // The test's own chunk builder agrees with Python's bytes.
  ASSERT_EQ(k_signature + ihdr(2, 2, 8, 2) + chunk("IDAT", k_rows_2x2) + chunk("IEND", ""), k_png);
  ASSERT_EQ(crc32_bitwise("IEND"), 0xae426082u);  // the CRC every PNG ends with
  ImageInfo info = check_image_bytes("x.png", k_png);
  EXPECT_EQ(info.format, ImageFormat::k_png);
  EXPECT_EQ(info.width, 2u);
  EXPECT_EQ(info.height, 2u);
  // Pixel data split over several IDAT chunks, an ancillary chunk, and interlacing.
  std::string split = k_signature + ihdr(2, 2, 8, 2) + chunk("tEXt", std::string("Comment\0hi", 10)) +
                      chunk("IDAT", k_rows_2x2.substr(0, 5)) + chunk("IDAT", k_rows_2x2.substr(5)) + chunk("IEND", "");
  EXPECT_EQ(error_of(split), "(no error)");
  std::string interlaced = k_signature + ihdr(2, 2, 8, 2, 1) + chunk("IDAT", k_rows_2x2_interlaced) + chunk("IEND", "");
  EXPECT_EQ(error_of(interlaced), "(no error)");
  // A palette image: 2x2 indices 0 1 / 1 0.
  std::string palette = k_signature + ihdr(2, 2, 8, 3) + chunk("PLTE", from_hex("ff000000ff00")) +
                        chunk("IDAT", from_hex("789c636060044200000c0003")) + chunk("IEND", "");
  EXPECT_EQ(error_of(palette), "(no error)");
}

TEST(ImageCheck, PngWithABadCrcNamesTheChunkAndItsOffset) {
  std::string bytes = k_png;
  bytes[45] = static_cast<char>(bytes[45] ^ 1);  // a bit of the IDAT data
  EXPECT_EQ(error_of(bytes),
            "image 'x.png': chunk IDAT at byte 33 has a bad CRC (stored 0x0bd9688b, computed 0x96d689fd)" + k_corrupt);
  bytes = k_png;
  bytes[74] = 0;  // IEND's stored CRC
  EXPECT_EQ(error_of(bytes),
            "image 'x.png': chunk IEND at byte 63 has a bad CRC (stored 0xae426000, computed 0xae426082)" + k_corrupt);
}

TEST(ImageCheck, TruncatedPngIsRefused) {
  EXPECT_EQ(
      error_of(k_png.substr(0, 50)),
      "image 'x.png': chunk IDAT at byte 33 declares 18 bytes of data but the file has only 5 more" + k_truncated);
  EXPECT_EQ(error_of(k_png.substr(0, 40)),
            "image 'x.png': the file ends at byte 40 inside the chunk that starts at byte 33 (7 bytes, under the 12 of "
            "a chunk's length, type and CRC)" +
                k_truncated);
  EXPECT_EQ(error_of(k_png.substr(0, 8)), "image 'x.png': the file ends at byte 8 without an IEND chunk" + k_truncated);
}

TEST(ImageCheck, PngWithoutIendIsRefused) {
  EXPECT_EQ(error_of(k_png.substr(0, 63)),
            "image 'x.png': the file ends at byte 63 without an IEND chunk" + k_truncated);
}

TEST(ImageCheck, PngWithAWrongChunkLengthIsRefused) {
  std::string shorter = k_png;
  shorter[36] = 17;  // IDAT declares 17 bytes, not 18: the CRC is read one byte early
  EXPECT_EQ(error_of(shorter),
            "image 'x.png': chunk IDAT at byte 33 has a bad CRC (stored 0xfb0bd968, computed 0x0dddda12)" + k_corrupt);
  std::string longer = k_png;
  longer[36] = 31;
  EXPECT_EQ(
      error_of(longer),
      "image 'x.png': chunk IDAT at byte 33 declares 31 bytes of data but the file has only 30 more" + k_truncated);
  std::string huge = k_png;
  huge[33] = static_cast<char>(0x80);
  EXPECT_EQ(
      error_of(huge),
      "image 'x.png': chunk IDAT at byte 33 declares 2147483666 bytes of data, over PNG's limit of 2^31-1" + k_corrupt);
  // A chunk whose length skips into the next one's data: the "type" there is not a type.
  std::string skewed = k_signature + ihdr(2, 2, 8, 2) + chunk("tEXt", std::string("a\0b", 3)) + "\x01\x02\x03\x04" +
                       chunk("IDAT", k_rows_2x2) + chunk("IEND", "");
  EXPECT_EQ(error_of(skewed),
            "image 'x.png': the chunk at byte 48 has an invalid type (bytes 00 00 00 12, not four ASCII letters); the "
            "length of the chunk tEXt at byte 33 before it may be wrong" +
                k_corrupt);
}

TEST(ImageCheck, PngStructureIsChecked) {
  std::string tail = chunk("IDAT", k_rows_2x2) + chunk("IEND", "");
  EXPECT_EQ(error_of(k_signature + chunk("tEXt", "a") + ihdr(2, 2, 8, 2) + tail),
            "image 'x.png': the first chunk is tEXt at byte 8, not IHDR" + k_corrupt);
  EXPECT_EQ(error_of(k_signature + ihdr(2, 2, 8, 2) + ihdr(2, 2, 8, 2) + tail),
            "image 'x.png': a second IHDR chunk at byte 33" + k_corrupt);
  EXPECT_EQ(error_of(k_signature + ihdr(0, 2, 8, 2) + tail),
            "image 'x.png': chunk IHDR at byte 8 gives a size of 0 x 2 pixels" + k_corrupt);
  EXPECT_EQ(error_of(k_signature + ihdr(2, 2, 4, 2) + tail),
            "image 'x.png': chunk IHDR at byte 8 gives colour type 2 with bit depth 4, which PNG does not define" +
                k_corrupt);
  EXPECT_EQ(error_of(k_signature + ihdr(100000, 100000, 8, 2) + tail),
            "image 'x.png': chunk IHDR at byte 8 gives a size of 100000 x 100000 pixels, over driftgate's limit of "
            "89478485 pixels (16777216 along a side); is this the right file? Resize it or use a random input");
  EXPECT_EQ(error_of(k_signature + ihdr(2, 2, 8, 2) + chunk("IEND", "")),
            "image 'x.png': no IDAT chunk before IEND at byte 33: the file holds no pixel data" + k_corrupt);
  EXPECT_EQ(
      error_of(k_signature + ihdr(2, 2, 8, 3) + tail),
      "image 'x.png': chunk IDAT at byte 33 comes before the palette (PLTE) that its colour type 3 needs" + k_corrupt);
  EXPECT_EQ(error_of(k_png + "junk"),
            "image 'x.png': 4 bytes follow the IEND chunk at byte 63 (the end of the image); the file is corrupt or "
            "has data appended, re-export it");
  // Line endings converted by a text-mode transfer.
  std::string converted = k_png;
  converted.erase(4, 1);  // \r\n -> \n
  EXPECT_EQ(error_of(converted),
            "image 'x.png': the PNG signature is damaged (bytes 0-7 are 89 50 4e 47 0a 1a 0a 00, not 89 50 4e 47 0d 0a "
            "1a 0a; a transfer in text mode changes line endings)" +
                k_corrupt);
}

TEST(ImageCheck, PngPixelDataIsInflatedAndCounted) {
  // Every CRC right, but the zlib stream's own checksum wrong.
  EXPECT_EQ(error_of(k_signature + ihdr(2, 2, 8, 2) + chunk("IDAT", k_rows_2x2_bad_adler) + chunk("IEND", "")),
            "image 'x.png': the pixel data (IDAT chunks from byte 33) cannot be inflated (zlib: incorrect data check)" +
                k_corrupt);
  // One row of two.
  EXPECT_EQ(error_of(k_signature + ihdr(2, 2, 8, 2) + chunk("IDAT", k_rows_2x1) + chunk("IEND", "")),
            "image 'x.png': the pixel data (IDAT chunks from byte 33) holds 7 bytes, not the 14 bytes that 2 x 2 "
            "pixels need" +
                k_corrupt);
  // The zlib stream cut short (its CRC recomputed, as a careless tool would).
  EXPECT_EQ(error_of(k_signature + ihdr(2, 2, 8, 2) + chunk("IDAT", k_rows_2x2.substr(0, 10)) + chunk("IEND", "")),
            "image 'x.png': the pixel data (IDAT chunks from byte 33) ends early (10 of the 14 bytes that 2 x 2 pixels "
            "need)" +
                k_truncated);
  // Two rows where the header says one: too much data.
  EXPECT_EQ(error_of(k_signature + ihdr(2, 1, 8, 2) + chunk("IDAT", k_rows_2x2) + chunk("IEND", "")),
            "image 'x.png': the pixel data (IDAT chunks from byte 33) inflates to more than the 7 bytes that 2 x 1 "
            "pixels need" +
                k_corrupt);
  // Interlaced pixels under a header that says not interlaced (15 bytes, not 14).
  EXPECT_EQ(error_of(k_signature + ihdr(2, 2, 8, 2) + chunk("IDAT", k_rows_2x2_interlaced) + chunk("IEND", "")),
            "image 'x.png': the pixel data (IDAT chunks from byte 33) inflates to more than the 14 bytes that 2 x 2 "
            "pixels need" +
                k_corrupt);
}

// ------------------------------------------------------------------------------ JPEG

TEST(ImageCheck, AValidJpegPasses) {
  ImageInfo info = check_image_bytes("x.jpg", k_jpeg);
  EXPECT_EQ(info.format, ImageFormat::k_jpeg);
  EXPECT_EQ(info.width, 8u);
  EXPECT_EQ(info.height, 8u);
  // Data after EOI (phones append some) and fill bytes before a marker are allowed.
  EXPECT_EQ(error_of(k_jpeg + "appended", "x.jpg"), "(no error)");
  std::string filled = k_jpeg;
  filled.insert(71, "\xff\xff");
  EXPECT_EQ(error_of(filled, "x.jpg"), "(no error)");
}

TEST(ImageCheck, JpegWithoutEoiIsRefused) {
  EXPECT_EQ(error_of(k_jpeg.substr(0, 149), "x.jpg"),
            "image 'x.jpg': the file ends at byte 149 inside the scan data of SOS at byte 134, without an EOI marker" +
                k_truncated);
  // A file that ends between segments.
  std::string no_scan = k_jpeg.substr(0, 134);
  EXPECT_EQ(error_of(no_scan, "x.jpg"),
            "image 'x.jpg': the file ends at byte 134 without an EOI marker (the end of the image)" + k_truncated);
  EXPECT_EQ(error_of(no_scan + "\xff\xd9", "x.jpg"),
            "image 'x.jpg': EOI at byte 134 ends the image before any scan (SOS): it holds no pixel data" + k_corrupt);
}

TEST(ImageCheck, GarbageInAJpegIsRefusedWithItsOffset) {
  EXPECT_EQ(error_of(k_jpeg.substr(0, 2) + "garbage, not a marker", "x.jpg"),
            "image 'x.jpg': expected a marker at byte 2, found 0x67 (not 0xff)" + k_corrupt);
  std::string inside = k_jpeg;
  inside.replace(90, 4, "zzzz");  // where the first DHT was
  EXPECT_EQ(error_of(inside, "x.jpg"),
            "image 'x.jpg': expected a marker at byte 90, found 0x7a (not 0xff)" + k_corrupt);
  std::string reserved = k_jpeg;
  reserved[91] = 0x10;
  EXPECT_EQ(error_of(reserved, "x.jpg"), "image 'x.jpg': unexpected marker 0xff10 at byte 90" + k_corrupt);
  EXPECT_EQ(error_of(k_jpeg.substr(0, 2) + k_jpeg, "x.jpg"),
            "image 'x.jpg': unexpected marker SOI at byte 2 (a second start of image)" + k_corrupt);
}

TEST(ImageCheck, JpegSegmentsAreChecked) {
  EXPECT_EQ(error_of(k_jpeg.substr(0, 100), "x.jpg"),
            "image 'x.jpg': DHT at byte 90 declares a segment of 20 bytes but the file has only 8 more" + k_truncated);
  std::string tiny = k_jpeg;
  tiny[5] = 1;  // DQT's length
  EXPECT_EQ(error_of(tiny, "x.jpg"),
            "image 'x.jpg': DQT at byte 2 declares a segment length of 1 (at least 2)" + k_corrupt);
  // SOS with no frame header before it (SOF0 removed).
  std::string no_frame = k_jpeg.substr(0, 71) + k_jpeg.substr(90);
  EXPECT_EQ(error_of(no_frame, "x.jpg"),
            "image 'x.jpg': the scan SOS at byte 115 comes before any frame header (SOF)" + k_corrupt);
  std::string arithmetic = k_jpeg;
  arithmetic[72] = static_cast<char>(0xc9);
  EXPECT_EQ(error_of(arithmetic, "x.jpg"),
            "image 'x.jpg': the frame header SOF9 at byte 71 is arithmetic-coded, which driftgate's decoder does not "
            "read; re-export it as a baseline or progressive JPEG (or a PNG)");
  std::string zero_height = k_jpeg;
  zero_height[77] = 0;  // the frame's height, 8 -> 0
  EXPECT_EQ(error_of(zero_height, "x.jpg"),
            "image 'x.jpg': the frame header SOF0 at byte 71 gives a size of 8 x 0 pixels" + k_corrupt);
  std::string components = k_jpeg;
  components[80] = 5;
  EXPECT_EQ(error_of(components, "x.jpg"),
            "image 'x.jpg': the frame header SOF0 at byte 71 declares 5 components in 15 bytes (1 to 4 components, 3 "
            "bytes each after 6)" +
                k_corrupt);
}

TEST(ImageCheck, JpegRestartMarkersMustBeInSequence) {
  const std::string dri("\xff\xdd\x00\x04\x00\x01", 6);  // a restart every MCU
  std::string scan_end = k_jpeg.substr(0, 149);          // up to the scan's byte
  EXPECT_EQ(error_of(k_jpeg.substr(0, 2) + dri + k_jpeg.substr(2, 147) + "\xff\xd0\x03\xff\xd1\x03\xff\xd9", "x.jpg"),
            "(no error)");
  EXPECT_EQ(error_of(k_jpeg.substr(0, 2) + dri + k_jpeg.substr(2, 147) + "\xff\xd0\x03\xff\xd3\x03\xff\xd9", "x.jpg"),
            "image 'x.jpg': restart marker RST3 at byte 158 is out of sequence (expected RST1)" + k_corrupt);
  EXPECT_EQ(error_of(scan_end + "\xff\xd0\x03\xff\xd9", "x.jpg"),
            "image 'x.jpg': restart marker RST0 at byte 149 in the scan that starts at byte 134, which has no restart "
            "interval (DRI)" +
                k_corrupt);
  // Stuffed bytes (0xff 0x00) are scan data, not markers.
  EXPECT_EQ(error_of(scan_end + std::string("\xff\x00\x12", 3) + "\xff\xd9", "x.jpg"), "(no error)");
}

// ---------------------------------------------------------------------- BMP, PNM, others

TEST(ImageCheck, BmpAndPnmHeadersAreChecked) {
  // BMP, 2x1, 24 bits: 14 + 40 header bytes, one row of 6 bytes padded to 8.
  std::string bmp = from_hex(
      "424d3e0000000000000036000000280000000200000001000000010018000000000008000000000000000000000000000000000000000000"
      "ff00ff000000");
  ImageInfo info = check_image_bytes("x.bmp", bmp);
  EXPECT_EQ(info.format, ImageFormat::k_bmp);
  EXPECT_EQ(info.width, 2u);
  EXPECT_EQ(info.height, 1u);
  EXPECT_EQ(error_of(bmp.substr(0, 60), "x.bmp"),
            "image 'x.bmp': the pixel data at byte 54 has 6 bytes, under the 8 that 2 x 1 pixels of 24 bits need" +
                k_truncated);
  EXPECT_EQ(error_of(bmp.substr(0, 20), "x.bmp"),
            "image 'x.bmp': the BMP headers end early (the file has 20 bytes)" + k_truncated);

  std::string ppm = std::string("P6\n# a comment\n2 1\n255\n") + std::string(6, '\x7f');
  info = check_image_bytes("x.ppm", ppm);
  EXPECT_EQ(info.format, ImageFormat::k_pnm);
  EXPECT_EQ(info.width, 2u);
  EXPECT_EQ(info.height, 1u);
  EXPECT_EQ(error_of(ppm.substr(0, 28), "x.ppm"),
            "image 'x.ppm': the pixel data at byte 23 has 5 bytes, under the 6 that 2 x 1 pixels need" + k_truncated);
  EXPECT_EQ(error_of("P6\n2 x\n255\n", "x.ppm"),
            "image 'x.ppm': the PNM header has no valid height at byte 5" + k_corrupt);
  EXPECT_EQ(error_of("P3\n1 1\n255\n0 0 0\n", "x.ppm"),
            "image 'x.ppm': a PNM of type P3, which driftgate's decoder does not read (binary P5 and P6 only); convert "
            "it (e.g. `convert in.pnm out.png`)");
}

TEST(ImageCheck, OtherFormatsAndEmptyFilesAreRefused) {
  EXPECT_EQ(error_of(""), "image 'x.png' is empty (0 bytes); check the path, or re-export the image");
  EXPECT_EQ(error_of("this is a text file named like an image\n"),
            "image 'x.png' is not a PNG, JPEG, BMP or PNM image (it starts with the bytes 74 68 69 73 20 69 73 20); "
            "driftgate reads those four formats: convert it (e.g. `convert in.webp out.png`)");
  EXPECT_EQ(
      error_of("GIF89a\x01\x00\x01\x00"),
      "image 'x.png' is not a PNG, JPEG, BMP or PNM image (it looks like a GIF image); driftgate reads those four "
      "formats: convert it (e.g. `convert in.webp out.png`)");
}

// -------------------------------------------------------------------------- the reader

TEST(ImageCheck, ReadsThroughTheBoundedReader) {
  test::TempDir temp;
  std::ofstream(temp / "ok.png", std::ios::binary) << k_png;
  CheckedImage image = read_checked_image(temp / "ok.png");
  EXPECT_EQ(image.bytes, k_png);
  EXPECT_EQ(image.info.width, 2u);

  ASSERT_EQ(::mkfifo((temp / "fifo.png").c_str(), 0600), 0);
  try {
    read_checked_image(temp / "fifo.png");  // must not wait for a writer
    ADD_FAILURE() << "no error for a FIFO";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), temp / "fifo.png" +
                                         ": a FIFO (named pipe), not a regular file; driftgate reads an image only "
                                         "from a regular file (save the data to a file and pass that)");
  }
  // 64 MiB and one byte, sparse: refused by its size, before a byte is read.
  { std::ofstream(temp / "big.png", std::ios::binary) << k_png; }
  ASSERT_EQ(::truncate((temp / "big.png").c_str(), 64 * k_mib + 1), 0);
  try {
    read_checked_image(temp / "big.png");
    ADD_FAILURE() << "no error for a 64 MiB file";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              temp / "big.png" + ": 64.0 MiB, over the limit of 64 MiB for an image; is this the right file?");
  }
  try {
    read_checked_image(temp / "missing.png");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), temp / "missing.png" + ": cannot open image (No such file or directory)");
  }
}

}  // namespace
}  // namespace driftgate

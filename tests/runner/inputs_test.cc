#include "runner/inputs.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "test_models.h"
#include "tests/support/sample_images.h"

namespace driftgate {
namespace {

// Writes a binary PNM (P6 colour or P5 grayscale) image.
std::string write_pnm(const std::string& path, const std::string& magic, int width, int height,
                      const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << magic << "\n" << width << " " << height << "\n255\n";
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

using test::from_hex;
using test::k_jpeg;
using test::k_png;

std::string error_of(const ImageInput& image) {
  try {
    load_image_input(image);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RandomInput, DeterministicPerSeedAndShaped) {
  RandomInput spec{{1, 3, 4, 5}, 7, Distribution::k_normal};
  at::Tensor first = make_random_input(spec);
  EXPECT_EQ(first.sizes().vec(), (std::vector<int64_t>{1, 3, 4, 5}));
  EXPECT_EQ(first.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(first, make_random_input(spec)));
  spec.seed = 8;
  EXPECT_FALSE(at::equal(first, make_random_input(spec)));
}

TEST(RandomInput, UniformIsInUnitInterval) {
  at::Tensor uniform = make_random_input(RandomInput{{1000}, 3, Distribution::k_uniform});
  EXPECT_GE(uniform.min().item<float>(), 0.0f);
  EXPECT_LT(uniform.max().item<float>(), 1.0f);
  at::Tensor normal = make_random_input(RandomInput{{1000}, 3, Distribution::k_normal});
  EXPECT_LT(normal.min().item<float>(), 0.0f);
  EXPECT_THROW(make_random_input(RandomInput{{}, 3, Distribution::k_normal}), Error);
}

TEST(ImageInput, ScalesNormalizesAndLaysOutNchw) {
  std::string dir = testing::fresh_dir("inputs");
  // 2x1 image: a red pixel, then a pixel (0, 51, 255).
  ImageInput image;
  image.path = write_pnm(dir + "/two.ppm", "P6", 2, 1, {255, 0, 0, 0, 51, 255});
  image.mean = {0.5, 0.0, 0.0};
  image.std = {0.25, 1.0, 2.0};
  at::Tensor tensor = load_image_input(image);
  ASSERT_EQ(tensor.sizes().vec(), (std::vector<int64_t>{1, 3, 1, 2}));
  EXPECT_FLOAT_EQ(tensor[0][0][0][0].item<float>(), 2.0f);   // (1 - 0.5) / 0.25
  EXPECT_FLOAT_EQ(tensor[0][0][0][1].item<float>(), -2.0f);  // (0 - 0.5) / 0.25
  EXPECT_FLOAT_EQ(tensor[0][1][0][1].item<float>(), 0.2f);   // 51 / 255
  EXPECT_FLOAT_EQ(tensor[0][2][0][1].item<float>(), 0.5f);   // 1 / 2
  EXPECT_TRUE(tensor.is_contiguous());
}

TEST(ImageInput, ResizesBilinearly) {
  std::string dir = testing::fresh_dir("inputs_resize");
  ImageInput image;
  std::vector<unsigned char> gray(2 * 2 * 3, 102);  // 0.4 everywhere
  image.path = write_pnm(dir + "/flat.ppm", "P6", 2, 2, gray);
  image.width = 5;
  image.height = 3;
  at::Tensor tensor = load_image_input(image);
  ASSERT_EQ(tensor.sizes().vec(), (std::vector<int64_t>{1, 3, 3, 5}));
  EXPECT_TRUE(at::allclose(tensor, at::full({1, 3, 3, 5}, 0.4f)));
}

TEST(ImageInput, ErrorsNameTheFileAndSayWhatToDo) {
  std::string dir = testing::fresh_dir("inputs_errors");
  ImageInput image;
  image.path = write_pnm(dir + "/gray.pgm", "P5", 2, 2, {1, 2, 3, 4});
  std::string gray = error_of(image);
  EXPECT_NE(gray.find("image '" + image.path + "' has 1 channel (grayscale)"), std::string::npos) << gray;
  EXPECT_NE(gray.find("convert it"), std::string::npos) << gray;

  // Damaged files are refused by core/image_check.h before the decoder sees them.
  image.path = dir + "/corrupt.png";
  std::ofstream(image.path) << "\x89PNG but not really";
  std::string corrupt = error_of(image);
  EXPECT_EQ(corrupt.rfind("image '" + image.path + "': the PNG signature is damaged", 0), 0u) << corrupt;

  image.path = dir + "/bad_crc.png";
  std::string png = k_png;
  png[45] = static_cast<char>(png[45] ^ 1);
  std::ofstream(image.path, std::ios::binary) << png;
  EXPECT_EQ(error_of(image), "image '" + image.path +
                                 "': chunk IDAT at byte 33 has a bad CRC (stored 0x0bd9688b, computed 0x96d689fd); the "
                                 "file is corrupt, re-export it");

  // What passes the checker but not the decoder: a row filter type of 5 (valid CRCs and zlib).
  image.path = dir + "/bad_filter.png";
  std::ofstream(image.path, std::ios::binary) << from_hex(
      "89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000001249444154789c63fdcfc0c000c20cff8100"
      "0020340600114af6460000000049454e44ae426082");
  EXPECT_EQ(error_of(image), "image '" + image.path +
                                 "' (PNG) cannot be decoded: invalid filter; the file is damaged or uses a feature the "
                                 "decoder lacks: re-export it as an 8-bit PNG");

  image.path = dir + "/missing.png";
  EXPECT_EQ(error_of(image), image.path + ": cannot open image (No such file or directory)");
}

// The checked bytes reach the decoder: PNG and JPEG pixels as Python wrote them.
TEST(ImageInput, DecodesPngAndJpegFromTheCheckedBytes) {
  std::string dir = testing::fresh_dir("inputs_formats");
  ImageInput image;
  image.path = dir + "/rgbw.png";
  std::ofstream(image.path, std::ios::binary) << k_png;
  at::Tensor png = load_image_input(image);
  ASSERT_EQ(png.sizes().vec(), (std::vector<int64_t>{1, 3, 2, 2}));
  // Red, green / blue, white: channel c of pixel (y, x).
  EXPECT_EQ(png[0][0][0][0].item<float>(), 1.0f);
  EXPECT_EQ(png[0][1][0][0].item<float>(), 0.0f);
  EXPECT_EQ(png[0][1][0][1].item<float>(), 1.0f);
  EXPECT_EQ(png[0][2][1][0].item<float>(), 1.0f);
  EXPECT_EQ(png[0][0][1][0].item<float>(), 0.0f);
  EXPECT_EQ(png.select(2, 1).select(2, 1).min().item<float>(), 1.0f);

  image.path = dir + "/grey.jpg";
  std::ofstream(image.path, std::ios::binary) << k_jpeg;
  at::Tensor jpeg = load_image_input(image);
  ASSERT_EQ(jpeg.sizes().vec(), (std::vector<int64_t>{1, 3, 8, 8}));
  EXPECT_EQ(jpeg.min().item<float>(), 128.0f / 255.0f);
  EXPECT_EQ(jpeg.max().item<float>(), 128.0f / 255.0f);

  std::ofstream(image.path, std::ios::binary) << k_jpeg.substr(0, 2) << "garbage";
  EXPECT_EQ(error_of(image), "image '" + image.path +
                                 "': expected a marker at byte 2, found 0x67 (not 0xff); the file is corrupt, "
                                 "re-export it");
}

TEST(MakeInput, ErrorsNameTheInput) {
  InputSpec spec;
  spec.name = "cat";
  spec.kind = InputSpec::Kind::k_image;
  spec.image.path = "/nonexistent/cat.png";
  try {
    make_input(spec);
    FAIL() << "no error for a missing image";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "input 'cat': /nonexistent/cat.png: cannot open image (No such file or directory)");
  }
}

}  // namespace
}  // namespace driftgate

#include "runner/inputs.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/api/module.h>

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
  InputArgument argument;
  argument.tensor.kind = TensorSource::Kind::k_image;
  argument.tensor.image.path = "/nonexistent/cat.png";
  spec.args.push_back(argument);
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

namespace driftgate {
namespace {

// Values from Debian's torch 1.13 in Python:
//   torch.randint(0, 512, (1, 8), generator=torch.Generator().manual_seed(3))
//   torch.randint(-5, 5, (6,), generator=torch.Generator().manual_seed(0), dtype=torch.int32)
//   torch.randn(4, generator=torch.Generator().manual_seed(2)).to(torch.float64)
TEST(MakeInput, RandomIntAndRandomWithADtypeEqualTorchBitForBit) {
  RandomIntInput ids{{1, 8}, 0, 512, 3, ElementType::k_int64};
  at::Tensor made = make_random_int_input(ids);
  EXPECT_EQ(made.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(made, at::tensor({362, 152, 249, 131, 440, 456, 256, 277}, at::kLong).view({1, 8})));
  at::Tensor small = make_random_int_input(RandomIntInput{{6}, -5, 5, 0, ElementType::k_int32});
  EXPECT_EQ(small.scalar_type(), at::kInt);
  EXPECT_TRUE(at::equal(small, at::tensor({-1, 4, -2, -5, -2, 4}, at::kInt)));
  RandomInput wide;
  wide.shape = {4};
  wide.seed = 2;
  wide.dtype = ElementType::k_float64;
  at::Tensor values = make_random_input(wide);
  EXPECT_EQ(values.scalar_type(), at::kDouble);
  EXPECT_TRUE(at::equal(
      values,
      at::tensor({0.39229682087898254, -0.223564013838768, -0.31950026750564575, -1.2050371170043945}, at::kDouble)));
  at::Tensor mask = make_fill_input(FillInput{{2, 3}, 1.0, ElementType::k_bool});
  EXPECT_EQ(mask.scalar_type(), at::kBool);
  EXPECT_TRUE(mask.all().item<bool>());
  EXPECT_TRUE(at::equal(make_fill_input(FillInput{{2}, 7.0, ElementType::k_int64}), at::full({2}, 7, at::kLong)));
}

// A forward(ids, mask, x, scale, n, flag) module: binds by name whatever the config order,
// fills an Optional left out, and refuses what the schema does not take.
TEST(MakeInput, NamedArgumentsBindToForwardsSchema) {
  torch::jit::Module module("Named");
  module.define(R"(
def forward(self, ids, x, scale: float, n: int, flag: bool, extra: Optional[Tensor] = None, items: List[Tensor] = []):
    return x
)");
  const c10::FunctionSchema& schema = module.get_method("forward").function().getSchema();
  auto tensor_arg = [](const std::string& name, ElementType type) {
    InputArgument argument;
    argument.name = name;
    argument.tensor.kind = TensorSource::Kind::k_fill;
    argument.tensor.fill = FillInput{{1, 2}, 3.0, type};
    return argument;
  };
  InputSpec spec;
  spec.name = "p";
  spec.named = true;
  InputArgument scale;
  scale.name = "scale";
  scale.kind = InputArgument::Kind::k_int;  // an int where a float is wanted: Python's rule
  scale.int_value = 2;
  InputArgument n;
  n.name = "n";
  n.kind = InputArgument::Kind::k_int;
  n.int_value = 5;
  InputArgument flag;
  flag.name = "flag";
  flag.kind = InputArgument::Kind::k_bool;
  flag.bool_value = true;
  spec.args = {flag, tensor_arg("x", ElementType::k_float32), n, scale, tensor_arg("ids", ElementType::k_int64)};
  ModelInput bound = make_input(spec, schema);
  ASSERT_EQ(bound.size(), 5u);  // up to the last argument given; the defaults after it are forward's own
  EXPECT_EQ(bound[0].toTensor().scalar_type(), at::kLong);
  EXPECT_EQ(bound[1].toTensor().scalar_type(), at::kFloat);
  EXPECT_EQ(bound[2].toDouble(), 2.0);
  EXPECT_EQ(bound[3].toInt(), 5);
  EXPECT_TRUE(bound[4].toBool());

  auto error_of = [&](const InputSpec& bad) {
    try {
      make_input(bad, schema);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string forward =
      " [schema: forward(Tensor ids, Tensor x, float scale, int n, bool flag, Optional[Tensor] extra=None, "
      "List[Tensor] items=[]) -> Tensor]";
  InputSpec misspelt = spec;
  misspelt.args[1].name = "xx";
  EXPECT_EQ(error_of(misspelt), "input 'p': forward has no argument 'xx'; did you mean 'x'?" + forward);
  InputSpec missing = spec;
  missing.args.erase(missing.args.begin() + 1);
  EXPECT_EQ(error_of(missing), "input 'p': the config lacks forward's argument 'x' (Tensor)" + forward);
  InputSpec wrong = spec;
  wrong.args[2].kind = InputArgument::Kind::k_float;
  EXPECT_EQ(error_of(wrong),
            "input 'p': forward's argument 'n' is int, the config gives a float (driftgate feeds Tensor, "
            "List[Tensor], int, float and bool arguments)" +
                forward);
  InputSpec listed = spec;
  InputArgument items;
  items.name = "items";
  items.kind = InputArgument::Kind::k_tensor_list;
  items.list = {tensor_arg("", ElementType::k_float32).tensor, tensor_arg("", ElementType::k_uint8).tensor};
  listed.args.push_back(items);
  ModelInput with_list = make_input(listed, schema);
  ASSERT_EQ(with_list.size(), 7u);
  EXPECT_TRUE(with_list[5].isNone());  // the Optional left out: its default
  EXPECT_EQ(with_list[6].toTensorVector().at(1).scalar_type(), at::kByte);
}

}  // namespace
}  // namespace driftgate

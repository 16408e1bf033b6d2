// core/input_spec.h: inputs with several named arguments (`args:`), every tensor source
// and its dtype, scalars and List[Tensor], and the errors of each, read through the one
// YamlReader as an experiment config is.
#include "core/input_spec.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "core/yaml_reader.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

// An int64 .npy file of shape (1, 3) as numpy.save writes it.
void write_int64_npy(const std::string& path) {
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }";
  while ((10 + header.size() + 1) % 64 != 0) {
    header += ' ';
  }
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>(header.size()) << '\0' << header
      << std::string(24, '\0');
}

class InputSpecTest : public ::testing::Test {
 protected:
  void SetUp() override { write_int64_npy(m_dir / "ids.npy"); }

  InputSpec parse(const std::string& text) {
    YamlReader reader(m_dir / "x.yaml");
    return parse_input(reader, reader.load(text), m_dir.path());
  }
  std::string error_of(const std::string& text) {
    try {
      parse(text);
    } catch (const Error& e) {
      std::string message = e.what();
      const std::string dir = m_dir.path();
      for (size_t at = message.find(dir); at != std::string::npos; at = message.find(dir)) {
        message.replace(at, dir.size(), "DIR");
      }
      return message;
    }
    return "(no error)";
  }
  test::TempDir m_dir;
};

TEST_F(InputSpecTest, OneArgumentFormsStayOneUnnamedTensor) {
  InputSpec random = parse("{name: r, random: {shape: [1, 3], seed: 2}}");
  EXPECT_FALSE(random.named);
  ASSERT_EQ(random.args.size(), 1u);
  EXPECT_EQ(random.args[0].name, "");
  EXPECT_EQ(random.args[0].tensor.kind, TensorSource::Kind::k_random);
  EXPECT_TRUE(random.single_float32_tensor());
  InputSpec ids = parse("{name: t, tensor: ids.npy}");
  EXPECT_EQ(ids.args[0].tensor.dtype(), ElementType::k_int64);
  EXPECT_EQ(ids.args[0].tensor.tensor.shape, (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(ids.single_float32_tensor());  // int64: fed as int64 now
}

TEST_F(InputSpecTest, ReadsNamedArgumentsOfEveryKindInConfigOrder) {
  InputSpec input = parse(R"(
name: prompt
args:
  ids: {tensor: ids.npy}
  attention_mask: {fill: {shape: [1, 3], value: 1, dtype: int64}}
  noise: {random: {shape: [2], seed: 4, dtype: float64, distribution: uniform}}
  tokens: {random_int: {shape: [1, 3], low: 5, high: 9, seed: 3, dtype: int32}}
  max_len: 16
  temperature: 0.5
  flag: true
  images: [{random: {shape: [3, 4, 4]}}, {fill: {shape: [3, 4, 4], value: 0.25}}]
)");
  EXPECT_TRUE(input.named);
  EXPECT_FALSE(input.single_float32_tensor());
  ASSERT_EQ(input.args.size(), 8u);
  EXPECT_EQ(input.args[0].name, "ids");
  EXPECT_EQ(input.args[0].tensor.dtype(), ElementType::k_int64);
  EXPECT_EQ(input.args[1].tensor.kind, TensorSource::Kind::k_fill);
  EXPECT_EQ(input.args[1].tensor.fill.value, 1.0);
  EXPECT_EQ(input.args[1].tensor.dtype(), ElementType::k_int64);
  EXPECT_EQ(input.args[2].tensor.random.dtype, ElementType::k_float64);
  EXPECT_EQ(input.args[2].tensor.random.distribution, Distribution::k_uniform);
  const RandomIntInput& tokens = input.args[3].tensor.random_int;
  EXPECT_EQ(tokens.low, 5);
  EXPECT_EQ(tokens.high, 9);
  EXPECT_EQ(tokens.seed, 3u);
  EXPECT_EQ(tokens.dtype, ElementType::k_int32);
  EXPECT_EQ(input.args[4].kind, InputArgument::Kind::k_int);
  EXPECT_EQ(input.args[4].int_value, 16);
  EXPECT_EQ(input.args[5].kind, InputArgument::Kind::k_float);
  EXPECT_EQ(input.args[5].float_value, 0.5);
  EXPECT_EQ(input.args[6].kind, InputArgument::Kind::k_bool);
  EXPECT_TRUE(input.args[6].bool_value);
  EXPECT_EQ(input.args[7].kind, InputArgument::Kind::k_tensor_list);
  ASSERT_EQ(input.args[7].list.size(), 2u);
  EXPECT_EQ(input.args[7].list[1].fill.value, 0.25);
  EXPECT_EQ(parse("{name: p, args: {ids: {random_int: {shape: [2], high: 3}}}}").args[0].tensor.random_int.dtype,
            ElementType::k_int64);
}

TEST_F(InputSpecTest, RefusesBadArgumentsWithWhereWhatAndWhatToTry) {
  EXPECT_EQ(error_of("{name: p, args: {ids: {tensr: ids.npy}}}"),
            "DIR/x.yaml:1:24: unknown key 'tensr' in argument 'ids' of input 'p'; did you mean 'tensor'? (allowed: "
            "image, resize, mean, std, random, random_int, fill, tensor, shape)");
  EXPECT_EQ(error_of("{name: p, args: {ids: {random_int: {shape: [2], low: 4, high: 4}}}}"),
            "DIR/x.yaml:1:63: high (4) must be greater than low (4): values are low <= v < high");
  EXPECT_EQ(error_of("{name: p, args: {ids: {random_int: {shape: [2], high: 300, dtype: uint8}}}}"),
            "DIR/x.yaml:1:55: high must be between 1 and 256, got 300");
  EXPECT_EQ(error_of("{name: p, args: {ids: {random: {shape: [2], dtype: int64}}}}"),
            "DIR/x.yaml:1:52: random values are floating-point: dtype must be float16, float32 or float64, got "
            "int64; use random_int for integers");
  EXPECT_EQ(error_of("{name: p, args: {ids: {fill: {shape: [2], value: 1.5, dtype: int32}}}}"),
            "DIR/x.yaml:1:50: value must be a whole number a int32 holds, got 1.5");
  EXPECT_EQ(error_of("{name: p, args: {ids: {fill: {shape: [2], value: 1, dtype: int128}}}}"),
            "DIR/x.yaml:1:60: unknown dtype 'int128'; did you mean 'int8'? (one of: float16, float32, float64, "
            "int8, int16, int32, int64, uint8, bool)");
  EXPECT_EQ(error_of("{name: p, args: {mode: fast}}"),
            "DIR/x.yaml:1:24: argument 'mode' of input 'p' must be a tensor source ({tensor: x.npy}, {random: ...}, "
            "{random_int: ...}, {fill: ...}, {image: ...}), a list of them (a List[Tensor]), a number or "
            "true/false, got 'fast'");
  EXPECT_EQ(error_of("{name: p, tensor: ids.npy, args: {ids: 1}}"),
            "DIR/x.yaml:1:19: input 'p' has 'args': 'tensor' goes under the argument it feeds (args: {x: {tensor: "
            "...}})");
  EXPECT_EQ(error_of("{name: p, args: {}}"),
            "DIR/x.yaml:1:17: 'args' of input 'p' must map forward's argument names to values, e.g. args: {ids: "
            "{tensor: ids.npy}}");
  EXPECT_EQ(error_of("{name: p, args: {ids: {tensor: ids.npy, random: {shape: [1]}}}}"),
            "DIR/x.yaml:1:23: argument 'ids' of input 'p' needs exactly one of 'image' (a file), 'random' (a seeded "
            "tensor), 'random_int' (seeded integers), 'fill' (a constant) or 'tensor' (a NumPy .npy file), got "
            "random, tensor");
}

}  // namespace
}  // namespace driftgate

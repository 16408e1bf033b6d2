// An experiment's inputs: what each sample fed to forward() is, and the reader of one entry
// of `inputs:`. An input is forward's arguments: one unnamed tensor (`image:`, `random:`,
// `tensor:` directly under the input: forward's first argument), or under `args:` named
// arguments, each a tensor source (an image file and its preprocessing, seeded random
// values, a constant, a saved NumPy tensor), a scalar or a list of tensor sources. A new
// kind of source, or a new key of one, goes here: its type below, its keys beside the
// reader and its reading in input_spec.cc. The runner makes the tensors and binds the
// names to forward's schema (runner/inputs.h). Torch-free: any driftgate build validates
// configs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/npy_file.h"

namespace YAML {
class Node;
}

namespace driftgate {

class YamlReader;

struct ImageInput {
  std::string path;  // resolved relative to the config file's directory
  int width = 0;     // resize target (bilinear); 0 keeps the file's size
  int height = 0;
  std::array<double, 3> mean{0.0, 0.0, 0.0};  // applied after scaling pixels to [0, 1]
  std::array<double, 3> std{1.0, 1.0, 1.0};
};

enum class Distribution { k_normal, k_uniform };

// torch.randn (normal) or torch.rand (uniform) with a generator seeded with `seed`, in
// float32; another floating `dtype` is that float32 tensor cast.
struct RandomInput {
  std::vector<int64_t> shape;
  uint64_t seed = 0;
  Distribution distribution = Distribution::k_normal;
  ElementType dtype = ElementType::k_float32;
};

// torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed), dtype=dtype).
struct RandomIntInput {
  std::vector<int64_t> shape;
  int64_t low = 0;
  int64_t high = 0;  // exclusive
  uint64_t seed = 0;
  ElementType dtype = ElementType::k_int64;
};

// torch.full(shape, value, dtype=dtype).
struct FillInput {
  std::vector<int64_t> shape;
  double value = 0.0;
  ElementType dtype = ElementType::k_float32;
};

// A saved tensor: a NumPy .npy file in C order (core/npy_file.h), fed as it is, in its dtype.
struct TensorInput {
  std::string path;                            // resolved relative to the config file's directory
  std::vector<int64_t> shape;                  // the file's, read and checked when the config is loaded
  ElementType dtype = ElementType::k_float32;  // the file's
};

// Where one tensor comes from.
struct TensorSource {
  enum class Kind { k_image, k_random, k_random_int, k_fill, k_tensor };
  Kind kind = Kind::k_random;
  ImageInput image;
  RandomInput random;
  RandomIntInput random_int;
  FillInput fill;
  TensorInput tensor;

  // The tensor's dtype (an image is float32).
  ElementType dtype() const;
};

// One argument of forward.
struct InputArgument {
  enum class Kind { k_tensor, k_int, k_float, k_bool, k_tensor_list };
  std::string name;  // "" for the one tensor of an input without `args:`: forward's first argument
  Kind kind = Kind::k_tensor;
  TensorSource tensor;             // k_tensor
  std::vector<TensorSource> list;  // k_tensor_list: a List[Tensor]
  int64_t int_value = 0;           // k_int
  double float_value = 0.0;        // k_float
  bool bool_value = false;         // k_bool
};

// One sample fed to forward(), batch dimension included.
struct InputSpec {
  std::string name;
  // An input without `args:`: one unnamed tensor argument. With `args:`: named
  // arguments in the config's order (forward's schema gives the positional order).
  std::vector<InputArgument> args;
  bool named = false;  // written with `args:`

  // The one float32 tensor every feature takes (an input without `args:` whose tensor is
  // float32): what tier 2, `--mitigate`, aoti and onnxruntime take in this version.
  bool single_float32_tensor() const;
};

// Every tensor source of `input`, in argument order (a list's items in order).
std::vector<const TensorSource*> tensor_sources(const InputSpec& input);

// "float16, float32, ..., bool": the dtypes an input tensor may have.
std::string element_type_list();

// Reads one entry of an experiment's `inputs:`; files resolve against `base_dir` and must
// be there (a tensor file's header is read: its shape). Throws driftgate::Error
// "<path>:<line>:<col>: <message>".
InputSpec parse_input(const YamlReader& reader, const YAML::Node& node, const std::string& base_dir);

}  // namespace driftgate

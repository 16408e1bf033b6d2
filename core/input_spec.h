// An experiment's inputs: what each sample fed to forward() is (an image file and its
// preprocessing, a seeded random tensor, a saved NumPy tensor) and the reader of one entry
// of `inputs:`. A new kind of input, or a new key of one, goes here: its type below, its
// key in k_input_keys and its reading in input_spec.cc. The runner makes the tensors
// (runner/inputs.h). Torch-free: any driftgate build validates configs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

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

struct RandomInput {
  std::vector<int64_t> shape;
  uint64_t seed = 0;
  Distribution distribution = Distribution::k_normal;
};

// A saved tensor: a NumPy .npy file of float32 in C order (core/npy_file.h), fed as it is.
struct TensorInput {
  std::string path;            // resolved relative to the config file's directory
  std::vector<int64_t> shape;  // the file's, read and checked when the config is loaded
};

// One sample fed to forward() as its single argument, batch dimension included.
struct InputSpec {
  enum class Kind { k_image, k_random, k_tensor };
  std::string name;
  Kind kind = Kind::k_random;
  ImageInput image;
  RandomInput random;
  TensorInput tensor;
};

// Reads one entry of an experiment's `inputs:`; files resolve against `base_dir` and must
// be there (a tensor file's header is read: its shape). Throws driftgate::Error
// "<path>:<line>:<col>: <message>".
InputSpec parse_input(const YamlReader& reader, const YAML::Node& node, const std::string& base_dir);

}  // namespace driftgate

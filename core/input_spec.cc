#include "core/input_spec.h"

#include <yaml-cpp/yaml.h>

#include <limits>

#include "core/error.h"
#include "core/file_util.h"
#include "core/npy_file.h"
#include "core/yaml_reader.h"

namespace driftgate {

namespace {

constexpr EnumName<Distribution> k_distributions[] = {{Distribution::k_normal, "normal"},
                                                      {Distribution::k_uniform, "uniform"}};

const std::vector<std::string> k_input_keys = {"name", "image", "resize", "mean", "std", "random", "tensor", "shape"};
const std::vector<std::string> k_random_keys = {"shape", "seed", "distribution"};

// One value per RGB channel.
std::array<double, 3> rgb_triple(const YamlReader& reader, const YAML::Node& node, const std::string& what) {
  reader.sequence(node, what, 1);
  if (node.size() != 3) {
    reader.fail(node.Mark(),
                what + " must have exactly 3 values (one per RGB channel), got " + std::to_string(node.size()));
  }
  return {reader.number(node[0], what), reader.number(node[1], what), reader.number(node[2], what)};
}

}  // namespace

InputSpec parse_input(const YamlReader& reader, const YAML::Node& node, const std::string& base_dir) {
  reader.expect_map(node, "an input", k_input_keys);
  InputSpec input;
  input.name = reader.name(reader.required(node, "name", "an input"), "input name");
  const int kinds = static_cast<int>(static_cast<bool>(node["image"])) +
                    static_cast<int>(static_cast<bool>(node["random"])) +
                    static_cast<int>(static_cast<bool>(node["tensor"]));
  if (kinds != 1) {
    reader.fail(node.Mark(), "input '" + input.name +
                                 "' needs exactly one of 'image' (a file), 'random' (a seeded tensor) or 'tensor' "
                                 "(a NumPy .npy file)");
  }
  if (node["shape"] && !node["tensor"]) {
    reader.fail(node["shape"].Mark(),
                "'shape' applies to tensor inputs only (a random input's shape goes under 'random')");
  }
  if (node["tensor"]) {
    for (const char* key : {"resize", "mean", "std"}) {
      if (node[key]) {
        reader.fail(node[key].Mark(), std::string("'") + key + "' applies to image inputs only");
      }
    }
    input.kind = InputSpec::Kind::k_tensor;
    const YAML::Node tensor = node["tensor"];
    input.tensor.path = resolve_path(base_dir, reader.scalar(tensor, "tensor"));
    reader.require_file(tensor, "tensor file", input.tensor.path, "");
    try {
      input.tensor.shape = read_npy_header(input.tensor.path).shape;
    } catch (const Error& e) {
      reader.fail(tensor.Mark(), e.what());
    }
    if (const YAML::Node shape = node["shape"]) {
      reader.sequence(shape, "shape", 1);
      std::vector<int64_t> expected;
      for (const auto& dim : shape) {
        expected.push_back(reader.integer(dim, "a shape dimension", 1, 1 << 20));
      }
      if (expected != input.tensor.shape) {
        reader.fail(shape.Mark(), "tensor file '" + tensor.Scalar() + "' has shape " + shape_text(input.tensor.shape) +
                                      ", the config expects " + shape_text(expected) +
                                      "; save the array the model takes or fix 'shape'");
      }
    }
    return input;
  }
  if (node["random"]) {
    for (const char* key : {"resize", "mean", "std"}) {
      if (node[key]) {
        reader.fail(node[key].Mark(), std::string("'") + key + "' applies to image inputs only");
      }
    }
    const YAML::Node random = node["random"];
    reader.expect_map(random, "random input '" + input.name + "'", k_random_keys);
    input.kind = InputSpec::Kind::k_random;
    const YAML::Node shape = reader.sequence(reader.required(random, "shape", "a random input"), "shape", 1);
    int64_t numel = 1;
    for (const auto& dim : shape) {
      int64_t size = reader.integer(dim, "a shape dimension", 1, 1 << 20);
      numel *= size;
      if (numel > (int64_t{1} << 28)) {
        reader.fail(shape.Mark(), "shape has more than 2^28 elements; use a smaller input");
      }
      input.random.shape.push_back(size);
    }
    if (random["seed"]) {
      input.random.seed =
          static_cast<uint64_t>(reader.integer(random["seed"], "seed", 0, std::numeric_limits<int64_t>::max()));
    }
    if (random["distribution"]) {
      input.random.distribution = reader.choice(random["distribution"], "distribution", k_distributions);
    }
    return input;
  }
  input.kind = InputSpec::Kind::k_image;
  const YAML::Node image = node["image"];
  input.image.path = resolve_path(base_dir, reader.scalar(image, "image"));
  reader.require_file(image, "image", input.image.path, "");
  if (const YAML::Node resize = node["resize"]) {
    if (resize.IsScalar()) {
      input.image.height = input.image.width = static_cast<int>(reader.integer(resize, "resize", 1, 8192));
    } else {
      reader.sequence(resize, "resize", 2);
      if (resize.size() != 2) {
        reader.fail(resize.Mark(), "resize must be one size or [height, width]");
      }
      input.image.height = static_cast<int>(reader.integer(resize[0], "resize height", 1, 8192));
      input.image.width = static_cast<int>(reader.integer(resize[1], "resize width", 1, 8192));
    }
  }
  if (node["mean"]) {
    input.image.mean = rgb_triple(reader, node["mean"], "mean");
  }
  if (node["std"]) {
    input.image.std = rgb_triple(reader, node["std"], "std");
    for (double value : input.image.std) {
      if (value <= 0.0) {
        reader.fail(node["std"].Mark(), "std values must be positive");
      }
    }
  }
  return input;
}

}  // namespace driftgate

#include "core/input_spec.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/file_util.h"
#include "core/npy_file.h"
#include "core/yaml_reader.h"

namespace driftgate {

namespace {

constexpr EnumName<Distribution> k_distributions[] = {{Distribution::k_normal, "normal"},
                                                      {Distribution::k_uniform, "uniform"}};

// The keys of one tensor source: its kind (exactly one) and the kind's options beside it.
const std::vector<std::string> k_source_kinds = {"image", "random", "random_int", "fill", "tensor"};
const std::vector<std::string> k_source_keys = {"image",      "resize", "mean",   "std",  "random",
                                                "random_int", "fill",   "tensor", "shape"};
const std::vector<std::string> k_input_keys = {"name",   "image", "resize", "mean",       "std", "random",
                                               "tensor", "shape", "args",   "random_int", "fill"};
const std::vector<std::string> k_random_keys = {"shape", "seed", "distribution", "dtype"};
const std::vector<std::string> k_random_int_keys = {"shape", "low", "high", "seed", "dtype"};
const std::vector<std::string> k_fill_keys = {"shape", "value", "dtype"};

// One value per RGB channel.
std::array<double, 3> rgb_triple(const YamlReader& reader, const YAML::Node& node, const std::string& what) {
  reader.sequence(node, what, 1);
  if (node.size() != 3) {
    reader.fail(node.Mark(),
                what + " must have exactly 3 values (one per RGB channel), got " + std::to_string(node.size()));
  }
  return {reader.number(node[0], what), reader.number(node[1], what), reader.number(node[2], what)};
}

std::vector<int64_t> read_shape(const YamlReader& reader, const YAML::Node& map, const std::string& what) {
  const YAML::Node shape = reader.sequence(reader.required(map, "shape", what), "shape", 1);
  std::vector<int64_t> dims;
  int64_t numel = 1;
  for (const auto& dim : shape) {
    int64_t size = reader.integer(dim, "a shape dimension", 1, 1 << 20);
    numel *= size;
    if (numel > k_npy_max_elements) {
      reader.fail(shape.Mark(), "shape has more than 2^28 elements; use a smaller input");
    }
    dims.push_back(size);
  }
  return dims;
}

uint64_t read_seed(const YamlReader& reader, const YAML::Node& map) {
  if (!map["seed"]) {
    return 0;
  }
  return static_cast<uint64_t>(reader.integer(map["seed"], "seed", 0, std::numeric_limits<int64_t>::max()));
}

ElementType read_dtype(const YamlReader& reader, const YAML::Node& map, ElementType fallback, bool floating_only,
                       bool allow_bool) {
  const YAML::Node node = map["dtype"];
  if (!node) {
    return fallback;
  }
  const ElementType type = reader.choice(node, "dtype", k_element_types);
  if (floating_only && !is_floating(type)) {
    reader.fail(node.Mark(), std::string("random values are floating-point: dtype must be float16, float32 or "
                                         "float64, got ") +
                                 to_string(type) + "; use random_int for integers");
  }
  if (!floating_only && !allow_bool && (is_floating(type) || type == ElementType::k_bool)) {
    reader.fail(node.Mark(), std::string("random_int makes integers: dtype must be int8, int16, int32, int64 or "
                                         "uint8, got ") +
                                 to_string(type) + "; use random for floating-point values");
  }
  return type;
}

// The range of values an integer dtype holds.
std::pair<double, double> integer_range(ElementType type) {
  switch (type) {
    case ElementType::k_int8:
      return {-128.0, 127.0};
    case ElementType::k_int16:
      return {-32768.0, 32767.0};
    case ElementType::k_int32:
      return {-2147483648.0, 2147483647.0};
    case ElementType::k_uint8:
      return {0.0, 255.0};
    case ElementType::k_bool:
      return {0.0, 1.0};
    default:
      return {-9.2e18, 9.2e18};
  }
}

void refuse_image_options(const YamlReader& reader, const YAML::Node& node) {
  for (const char* key : {"resize", "mean", "std"}) {
    if (node[key]) {
      reader.fail(node[key].Mark(), std::string("'") + key + "' applies to image inputs only");
    }
  }
}

void read_tensor_file(const YamlReader& reader, const YAML::Node& node, const std::string& base_dir,
                      TensorInput& tensor_input) {
  const YAML::Node tensor = node["tensor"];
  tensor_input.path = resolve_path(base_dir, reader.scalar(tensor, "tensor"));
  reader.require_file(tensor, "tensor file", tensor_input.path, "");
  try {
    NpyHeader header = read_npy_header(tensor_input.path);
    tensor_input.shape = header.shape;
    tensor_input.dtype = header.type;
  } catch (const Error& e) {
    reader.fail(tensor.Mark(), e.what());
  }
  if (const YAML::Node shape = node["shape"]) {
    reader.sequence(shape, "shape", 1);
    std::vector<int64_t> expected;
    for (const auto& dim : shape) {
      expected.push_back(reader.integer(dim, "a shape dimension", 1, 1 << 20));
    }
    if (expected != tensor_input.shape) {
      reader.fail(shape.Mark(), "tensor file '" + tensor.Scalar() + "' has shape " + shape_text(tensor_input.shape) +
                                    ", the config expects " + shape_text(expected) +
                                    "; save the array the model takes or fix 'shape'");
    }
  }
}

void read_image(const YamlReader& reader, const YAML::Node& node, const std::string& base_dir, ImageInput& image) {
  const YAML::Node file = node["image"];
  image.path = resolve_path(base_dir, reader.scalar(file, "image"));
  reader.require_file(file, "image", image.path, "");
  if (const YAML::Node resize = node["resize"]) {
    if (resize.IsScalar()) {
      image.height = image.width = static_cast<int>(reader.integer(resize, "resize", 1, 8192));
    } else {
      reader.sequence(resize, "resize", 2);
      if (resize.size() != 2) {
        reader.fail(resize.Mark(), "resize must be one size or [height, width]");
      }
      image.height = static_cast<int>(reader.integer(resize[0], "resize height", 1, 8192));
      image.width = static_cast<int>(reader.integer(resize[1], "resize width", 1, 8192));
    }
  }
  if (node["mean"]) {
    image.mean = rgb_triple(reader, node["mean"], "mean");
  }
  if (node["std"]) {
    image.std = rgb_triple(reader, node["std"], "std");
    for (double value : image.std) {
      if (value <= 0.0) {
        reader.fail(node["std"].Mark(), "std values must be positive");
      }
    }
  }
}

void read_random_int(const YamlReader& reader, const YAML::Node& node, RandomIntInput& random) {
  random.shape = read_shape(reader, node, "a random_int input");
  random.seed = read_seed(reader, node);
  random.dtype = read_dtype(reader, node, ElementType::k_int64, /*floating_only=*/false, /*allow_bool=*/false);
  const auto [lowest, highest] = integer_range(random.dtype);
  const YAML::Node low = node["low"];
  random.low = low ? reader.integer(low, "low", static_cast<int64_t>(lowest), static_cast<int64_t>(highest)) : 0;
  const YAML::Node high = reader.required(node, "high", "a random_int input (values are low <= v < high)");
  random.high = reader.integer(high, "high", static_cast<int64_t>(lowest) + 1, static_cast<int64_t>(highest) + 1);
  if (random.high <= random.low) {
    reader.fail(high.Mark(), "high (" + std::to_string(random.high) + ") must be greater than low (" +
                                 std::to_string(random.low) + "): values are low <= v < high");
  }
}

void read_fill(const YamlReader& reader, const YAML::Node& node, FillInput& fill) {
  fill.shape = read_shape(reader, node, "a fill input");
  fill.dtype = read_dtype(reader, node, ElementType::k_float32, /*floating_only=*/false, /*allow_bool=*/true);
  const YAML::Node value = reader.required(node, "value", "a fill input");
  if (fill.dtype == ElementType::k_bool && (value.Scalar() == "true" || value.Scalar() == "false")) {
    fill.value = reader.boolean(value, "value") ? 1.0 : 0.0;
    return;
  }
  fill.value = reader.number(value, "value");
  if (!is_floating(fill.dtype)) {
    const auto [lowest, highest] = integer_range(fill.dtype);
    if (fill.value != std::floor(fill.value) || fill.value < lowest || fill.value > highest) {
      reader.fail(value.Mark(), std::string("value must be a whole number a ") + to_string(fill.dtype) +
                                    " holds, got " + value.Scalar());
    }
  }
}

// One tensor source: exactly one of k_source_kinds in `node`, with its options.
TensorSource read_source(const YamlReader& reader, const YAML::Node& node, const std::string& base_dir,
                         const std::string& what) {
  std::vector<std::string> present;
  for (const std::string& kind : k_source_kinds) {
    if (node[kind]) {
      present.push_back(kind);
    }
  }
  if (present.size() != 1) {
    reader.fail(node.Mark(), what +
                                 " needs exactly one of 'image' (a file), 'random' (a seeded tensor), 'random_int' "
                                 "(seeded integers), 'fill' (a constant) or 'tensor' (a NumPy .npy file)" +
                                 (present.empty() ? "" : ", got " + YamlReader::join(present)));
  }
  TensorSource source;
  const std::string& kind = present[0];
  if (node["shape"] && kind != "tensor") {
    reader.fail(node["shape"].Mark(),
                "'shape' applies to tensor inputs only (a " + kind + " input's shape goes under '" + kind + "')");
  }
  if (kind != "image") {
    refuse_image_options(reader, node);
  }
  if (kind == "tensor") {
    source.kind = TensorSource::Kind::k_tensor;
    read_tensor_file(reader, node, base_dir, source.tensor);
  } else if (kind == "random") {
    source.kind = TensorSource::Kind::k_random;
    const YAML::Node random = node["random"];
    reader.expect_map(random, "random " + what, k_random_keys);
    source.random.shape = read_shape(reader, random, "a random input");
    source.random.seed = read_seed(reader, random);
    if (random["distribution"]) {
      source.random.distribution = reader.choice(random["distribution"], "distribution", k_distributions);
    }
    source.random.dtype = read_dtype(reader, random, ElementType::k_float32, /*floating_only=*/true, false);
  } else if (kind == "random_int") {
    source.kind = TensorSource::Kind::k_random_int;
    reader.expect_map(node["random_int"], "random_int " + what, k_random_int_keys);
    read_random_int(reader, node["random_int"], source.random_int);
  } else if (kind == "fill") {
    source.kind = TensorSource::Kind::k_fill;
    reader.expect_map(node["fill"], "fill " + what, k_fill_keys);
    read_fill(reader, node["fill"], source.fill);
  } else {
    source.kind = TensorSource::Kind::k_image;
    read_image(reader, node, base_dir, source.image);
  }
  return source;
}

bool is_bool_word(const std::string& text) {
  return text == "true" || text == "false" || text == "True" || text == "False" || text == "TRUE" || text == "FALSE";
}

bool is_integer_word(const std::string& text) {
  size_t start = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  if (start >= text.size()) {
    return false;
  }
  for (size_t i = start; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') {
      return false;
    }
  }
  return true;
}

InputArgument read_argument(const YamlReader& reader, const std::string& name, const YAML::Node& value,
                            const std::string& base_dir, const std::string& input) {
  InputArgument argument;
  argument.name = name;
  const std::string what = "argument '" + name + "' of input '" + input + "'";
  if (value.IsMap()) {
    reader.expect_map(value, what, k_source_keys);
    argument.kind = InputArgument::Kind::k_tensor;
    argument.tensor = read_source(reader, value, base_dir, what);
    return argument;
  }
  if (value.IsSequence()) {
    reader.sequence(value, what + " (a List[Tensor])", 1);
    argument.kind = InputArgument::Kind::k_tensor_list;
    size_t index = 0;
    for (const auto& item : value) {
      const std::string item_what = what + " item " + std::to_string(index++);
      reader.expect_map(item, item_what, k_source_keys);
      argument.list.push_back(read_source(reader, item, base_dir, item_what));
    }
    return argument;
  }
  const std::string text = value.IsScalar() ? value.Scalar() : "";
  if (value.IsScalar() && is_bool_word(text)) {
    argument.kind = InputArgument::Kind::k_bool;
    argument.bool_value = reader.boolean(value, what);
    return argument;
  }
  if (value.IsScalar() && is_integer_word(text)) {
    argument.kind = InputArgument::Kind::k_int;
    argument.int_value =
        reader.integer(value, what, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    return argument;
  }
  if (value.IsScalar() && value.Tag() != "!") {
    try {
      argument.float_value = value.as<double>();
      argument.kind = InputArgument::Kind::k_float;
      return argument;
    } catch (const YAML::Exception&) {
    }
  }
  reader.fail(value.Mark(), what +
                                " must be a tensor source ({tensor: x.npy}, {random: ...}, {random_int: ...}, "
                                "{fill: ...}, {image: ...}), a list of them (a List[Tensor]), a number or "
                                "true/false, got '" +
                                text + "'");
}

}  // namespace

ElementType TensorSource::dtype() const {
  switch (kind) {
    case Kind::k_image:
      return ElementType::k_float32;
    case Kind::k_random:
      return random.dtype;
    case Kind::k_random_int:
      return random_int.dtype;
    case Kind::k_fill:
      return fill.dtype;
    case Kind::k_tensor:
      return tensor.dtype;
  }
  return ElementType::k_float32;
}

bool InputSpec::single_float32_tensor() const {
  return !named && args.size() == 1 && args[0].kind == InputArgument::Kind::k_tensor &&
         args[0].tensor.dtype() == ElementType::k_float32;
}

std::vector<const TensorSource*> tensor_sources(const InputSpec& input) {
  std::vector<const TensorSource*> sources;
  for (const InputArgument& argument : input.args) {
    if (argument.kind == InputArgument::Kind::k_tensor) {
      sources.push_back(&argument.tensor);
    }
    for (const TensorSource& item : argument.list) {
      sources.push_back(&item);
    }
  }
  return sources;
}

std::string element_type_list() { return YamlReader::join(enum_names(k_element_types)); }

InputSpec parse_input(const YamlReader& reader, const YAML::Node& node, const std::string& base_dir) {
  reader.expect_map(node, "an input", k_input_keys);
  InputSpec input;
  input.name = reader.name(reader.required(node, "name", "an input"), "input name");
  const YAML::Node args = node["args"];
  if (!args) {
    InputArgument argument;
    argument.tensor = read_source(reader, node, base_dir, "input '" + input.name + "'");
    input.args.push_back(std::move(argument));
    return input;
  }
  for (const std::string& key : k_source_keys) {
    if (node[key]) {
      reader.fail(node[key].Mark(), "input '" + input.name + "' has 'args': '" + key +
                                        "' goes under the argument it feeds (args: {x: {" + key + ": ...}})");
    }
  }
  if (!args.IsMap() || args.size() == 0) {
    reader.fail(args.Mark(), "'args' of input '" + input.name +
                                 "' must map forward's argument names to values, e.g. args: {ids: {tensor: ids.npy}}");
  }
  input.named = true;
  std::set<std::string> seen;
  for (const auto& pair : args) {
    const std::string name = reader.name(pair.first, "an argument name");
    if (!seen.insert(name).second) {
      reader.fail(pair.first.Mark(), "duplicate argument '" + name + "' in input '" + input.name + "'");
    }
    input.args.push_back(read_argument(reader, name, pair.second, base_dir, input.name));
  }
  return input;
}

}  // namespace driftgate

#include "runner/inputs.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <stb/stb_image.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/image_check.h"
#include "core/npy_file.h"
#include "core/suggest.h"

namespace driftgate {
namespace {

std::string channel_description(int channels) {
  switch (channels) {
    case 1:
      return "1 channel (grayscale)";
    case 2:
      return "2 channels (grayscale + alpha)";
    case 4:
      return "4 channels (RGBA)";
    default:
      return std::to_string(channels) + " channels";
  }
}

at::ScalarType scalar_type_of(ElementType type) {
  switch (type) {
    case ElementType::k_float16:
      return at::kHalf;
    case ElementType::k_float32:
      return at::kFloat;
    case ElementType::k_float64:
      return at::kDouble;
    case ElementType::k_int8:
      return at::kChar;
    case ElementType::k_int16:
      return at::kShort;
    case ElementType::k_int32:
      return at::kInt;
    case ElementType::k_int64:
      return at::kLong;
    case ElementType::k_uint8:
      return at::kByte;
    case ElementType::k_bool:
      return at::kBool;
  }
  return at::kFloat;
}

void check_shape(const std::vector<int64_t>& shape, const char* what) {
  if (shape.empty()) {
    throw Error(std::string(what) + " input needs a shape, e.g. [1, 3, 224, 224]");
  }
  for (int64_t dimension : shape) {
    if (dimension < 0) {
      throw Error(std::string(what) + " input shape has a negative dimension (" + std::to_string(dimension) + ")");
    }
  }
}

// The argument's type without Optional, and whether it was Optional.
c10::TypePtr unwrap_optional(const c10::TypePtr& type, bool& optional) {
  if (const auto inner = type->cast<c10::OptionalType>()) {
    optional = true;
    return inner->getElementType();
  }
  optional = false;
  return type;
}

const char* kind_text(InputArgument::Kind kind) {
  switch (kind) {
    case InputArgument::Kind::k_tensor:
      return "a tensor";
    case InputArgument::Kind::k_int:
      return "an int";
    case InputArgument::Kind::k_float:
      return "a float";
    case InputArgument::Kind::k_bool:
      return "a bool";
    case InputArgument::Kind::k_tensor_list:
      return "a list of tensors";
  }
  return "a value";
}

// `argument` as forward's argument of `type` takes it; "" in `problem` when it cannot.
c10::IValue bind_value(const InputArgument& argument, const c10::TypePtr& type, std::string& problem) {
  const c10::TypeKind kind = type->kind();
  if (kind == c10::TypeKind::TensorType && argument.kind == InputArgument::Kind::k_tensor) {
    return make_tensor(argument.tensor);
  }
  if (const auto list = type->cast<c10::ListType>()) {
    if (list->getElementType()->kind() == c10::TypeKind::TensorType &&
        argument.kind == InputArgument::Kind::k_tensor_list) {
      c10::List<at::Tensor> tensors;
      for (const TensorSource& item : argument.list) {
        tensors.push_back(make_tensor(item));
      }
      return tensors;
    }
  }
  if (kind == c10::TypeKind::IntType && argument.kind == InputArgument::Kind::k_int) {
    return argument.int_value;
  }
  if (kind == c10::TypeKind::FloatType && argument.kind == InputArgument::Kind::k_float) {
    return argument.float_value;
  }
  if (kind == c10::TypeKind::FloatType && argument.kind == InputArgument::Kind::k_int) {
    return static_cast<double>(argument.int_value);  // Python passes an int for a float too
  }
  if (kind == c10::TypeKind::BoolType && argument.kind == InputArgument::Kind::k_bool) {
    return argument.bool_value;
  }
  problem = std::string("forward's argument '") + argument.name + "' is " + type->annotation_str() +
            ", the config gives " + kind_text(argument.kind) +
            " (driftgate feeds Tensor, List[Tensor], int, float and bool arguments)";
  return {};
}

ModelInput bind_named(const InputSpec& spec, const c10::FunctionSchema& schema) {
  const auto& arguments = schema.arguments();
  std::vector<std::string> names;
  for (size_t i = 1; i < arguments.size(); ++i) {
    names.push_back(arguments[i].name());
  }
  for (const InputArgument& argument : spec.args) {
    if (std::find(names.begin(), names.end(), argument.name) == names.end()) {
      throw Error("forward has no argument '" + argument.name + "'" + did_you_mean(argument.name, names));
    }
  }
  ModelInput values;
  size_t given = 0;
  for (size_t i = 1; i < arguments.size() && given < spec.args.size(); ++i) {
    const c10::Argument& formal = arguments[i];
    const auto found = std::find_if(spec.args.begin(), spec.args.end(),
                                    [&](const InputArgument& argument) { return argument.name == formal.name(); });
    bool optional = false;
    const c10::TypePtr type = unwrap_optional(formal.type(), optional);
    if (found == spec.args.end()) {
      if (formal.default_value()) {
        values.push_back(*formal.default_value());
        continue;
      }
      if (optional) {
        values.emplace_back();  // None
        continue;
      }
      throw Error("the config lacks forward's argument '" + formal.name() + "' (" + formal.type()->annotation_str() +
                  ")");
    }
    std::string problem;
    c10::IValue value = bind_value(*found, type, problem);
    if (!problem.empty()) {
      throw Error(problem);
    }
    values.push_back(std::move(value));
    ++given;
  }
  // Required arguments after the last one given.
  for (size_t i = values.size() + 1; i < arguments.size(); ++i) {
    bool optional = false;
    unwrap_optional(arguments[i].type(), optional);
    if (!arguments[i].default_value() && !optional) {
      throw Error("the config lacks forward's argument '" + arguments[i].name() + "' (" +
                  arguments[i].type()->annotation_str() + ")");
    }
  }
  return values;
}

}  // namespace

std::string schema_text(const c10::FunctionSchema& forward_schema) {
  const auto& arguments = forward_schema.arguments();
  std::string text = "forward(";
  for (size_t i = 1; i < arguments.size(); ++i) {
    text += (i > 1 ? ", " : "") + arguments[i].type()->annotation_str() + " " + arguments[i].name();
    if (arguments[i].default_value()) {
      std::ostringstream value;
      value << *arguments[i].default_value();
      text += "=" + value.str();
    }
  }
  text += ")";
  const auto& returns = forward_schema.returns();
  if (returns.size() == 1) {
    text += " -> " + returns[0].type()->annotation_str();
  }
  return text;
}

at::Tensor load_image_input(const ImageInput& image) {
  // Read once through the bounded reader and checked (CRCs, markers, truncation): stb_image
  // would decode a damaged file into noise.
  CheckedImage file = read_checked_image(image.path);
  int width = 0;
  int height = 0;
  int channels = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(file.bytes.data()), static_cast<int>(file.bytes.size()),
                            &width, &height, &channels, 0),
      stbi_image_free);
  if (!pixels) {
    const char* reason = stbi_failure_reason();
    throw Error("image '" + image.path + "' (" + image_format_name(file.info.format) +
                ") cannot be decoded: " + (reason ? reason : "unknown reason") +
                "; the file is damaged or uses a feature the decoder lacks: re-export it as an 8-bit PNG");
  }
  if (channels != 3) {
    throw Error("image '" + image.path + "' has " + channel_description(channels) +
                "; driftgate feeds 3-channel RGB images: convert it (e.g. `convert in.png -alpha off "
                "-colorspace sRGB -type TrueColor out.png`) or use a random input");
  }
  if ((image.width > 0) != (image.height > 0)) {
    throw Error("image '" + image.path + "': resize needs both width and height (got " + std::to_string(image.width) +
                " x " + std::to_string(image.height) + ")");
  }
  for (double deviation : image.std) {
    if (deviation == 0.0) {
      throw Error("image '" + image.path + "': std must not be 0 (it divides the pixel values)");
    }
  }
  // HWC bytes -> NCHW float in [0, 1]. Scaling before resizing keeps full
  // precision (no rounding back to 8 bits); both steps are linear.
  at::Tensor tensor = at::from_blob(pixels.get(), {height, width, 3}, at::kByte)
                          .to(at::kFloat)
                          .div_(255.0)
                          .permute({2, 0, 1})
                          .unsqueeze(0)
                          .contiguous();
  if (image.width > 0 && (image.width != width || image.height != height)) {
    tensor = at::upsample_bilinear2d(tensor, {image.height, image.width}, /*align_corners=*/false);
  }
  at::Tensor mean =
      at::tensor({image.mean[0], image.mean[1], image.mean[2]}, at::kDouble).to(at::kFloat).view({1, 3, 1, 1});
  at::Tensor deviation =
      at::tensor({image.std[0], image.std[1], image.std[2]}, at::kDouble).to(at::kFloat).view({1, 3, 1, 1});
  return tensor.sub(mean).div(deviation).contiguous();
}

at::Tensor make_random_input(const RandomInput& random) {
  check_shape(random.shape, "random");
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(random.seed);
  auto options = at::TensorOptions().dtype(at::kFloat).device(at::kCPU);
  at::Tensor values = random.distribution == Distribution::k_uniform ? at::rand(random.shape, generator, options)
                                                                     : at::randn(random.shape, generator, options);
  if (random.dtype == ElementType::k_float32) {
    return values;
  }
  return values.to(scalar_type_of(random.dtype));
}

at::Tensor make_random_int_input(const RandomIntInput& random) {
  check_shape(random.shape, "random_int");
  if (random.high <= random.low) {
    throw Error("random_int input needs low < high (got " + std::to_string(random.low) + ", " +
                std::to_string(random.high) + ")");
  }
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(random.seed);
  return at::randint(random.low, random.high, random.shape, generator,
                     at::TensorOptions().dtype(scalar_type_of(random.dtype)).device(at::kCPU));
}

at::Tensor make_fill_input(const FillInput& fill) {
  check_shape(fill.shape, "fill");
  const auto options = at::TensorOptions().dtype(scalar_type_of(fill.dtype)).device(at::kCPU);
  if (fill.dtype == ElementType::k_bool) {
    return at::full(fill.shape, at::Scalar(fill.value != 0.0), options);
  }
  if (!is_floating(fill.dtype)) {
    return at::full(fill.shape, at::Scalar(static_cast<int64_t>(fill.value)), options);
  }
  return at::full(fill.shape, at::Scalar(fill.value), options);
}

at::Tensor load_tensor_input(const TensorInput& tensor) {
  NpyArray array = read_npy(tensor.path);
  if (!tensor.shape.empty() && (array.shape != tensor.shape || array.type != tensor.dtype)) {
    throw Error("tensor file '" + tensor.path + "' changed since the config was loaded: " + to_string(array.type) +
                " " + shape_text(array.shape) + ", was " + to_string(tensor.dtype) + " " + shape_text(tensor.shape));
  }
  return at::from_blob(array.bytes.data(), array.shape, scalar_type_of(array.type)).clone();
}

at::Tensor make_tensor(const TensorSource& source) {
  switch (source.kind) {
    case TensorSource::Kind::k_image:
      return load_image_input(source.image);
    case TensorSource::Kind::k_tensor:
      return load_tensor_input(source.tensor);
    case TensorSource::Kind::k_random_int:
      return make_random_int_input(source.random_int);
    case TensorSource::Kind::k_fill:
      return make_fill_input(source.fill);
    case TensorSource::Kind::k_random:
      break;
  }
  return make_random_input(source.random);
}

at::Tensor make_input(const InputSpec& spec) {
  if (spec.named || spec.args.size() != 1 || spec.args[0].kind != InputArgument::Kind::k_tensor) {
    throw Error("input '" + spec.name + "' names forward's arguments under 'args'; one tensor is needed here");
  }
  try {
    return make_tensor(spec.args[0].tensor);
  } catch (const Error& e) {
    throw Error("input '" + spec.name + "': " + e.what());
  }
}

ModelInput make_input(const InputSpec& spec, const c10::FunctionSchema& forward_schema) {
  if (!spec.named) {
    const auto& arguments = forward_schema.arguments();
    std::vector<std::string> required;
    for (size_t i = 2; i < arguments.size(); ++i) {
      if (!arguments[i].default_value()) {
        required.push_back(arguments[i].name());
      }
    }
    if (arguments.size() < 2 || !required.empty()) {
      throw Error("input '" + spec.name + "' is one tensor, and " + schema_text(forward_schema) +
                  " takes more; name forward's arguments under the input's 'args'");
    }
    return {make_input(spec)};
  }
  try {
    return bind_named(spec, forward_schema);
  } catch (const Error& e) {
    throw Error("input '" + spec.name + "': " + e.what() + " [schema: " + schema_text(forward_schema) + "]");
  }
}

bool forward_takes_tensor_list(const c10::FunctionSchema& forward_schema) {
  const auto& arguments = forward_schema.arguments();
  // arguments[0] is `self`.
  if (arguments.size() < 2) {
    return false;
  }
  const c10::TypePtr& type = arguments[1].type();
  const auto list = type->cast<c10::ListType>();
  return list && list->getElementType()->kind() == c10::TypeKind::TensorType;
}

c10::IValue forward_argument(const at::Tensor& input, bool as_list) {
  if (!as_list) {
    return input;
  }
  c10::List<at::Tensor> images;
  for (const at::Tensor& image : input.unbind(0)) {
    images.push_back(image);
  }
  return images;
}

}  // namespace driftgate

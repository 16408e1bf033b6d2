#include "runner/inputs.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <stb/stb_image.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "core/image_check.h"
#include "core/npy_file.h"

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

}  // namespace

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
  if (random.shape.empty()) {
    throw Error("random input needs a shape, e.g. [1, 3, 224, 224]");
  }
  for (int64_t dimension : random.shape) {
    if (dimension < 0) {
      throw Error("random input shape has a negative dimension (" + std::to_string(dimension) + ")");
    }
  }
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(random.seed);
  auto options = at::TensorOptions().dtype(at::kFloat).device(at::kCPU);
  if (random.distribution == Distribution::k_uniform) {
    return at::rand(random.shape, generator, options);
  }
  return at::randn(random.shape, generator, options);
}

at::Tensor load_tensor_input(const TensorInput& tensor) {
  NpyArray array = read_npy_float32(tensor.path);
  if (!tensor.shape.empty() && array.shape != tensor.shape) {
    throw Error("tensor file '" + tensor.path + "' changed since the config was loaded: shape " +
                shape_text(array.shape) + ", was " + shape_text(tensor.shape));
  }
  return at::from_blob(array.values.data(), array.shape, at::kFloat).clone();
}

at::Tensor make_input(const InputSpec& spec) {
  try {
    if (spec.kind == InputSpec::Kind::k_image) {
      return load_image_input(spec.image);
    }
    if (spec.kind == InputSpec::Kind::k_tensor) {
      return load_tensor_input(spec.tensor);
    }
    return make_random_input(spec.random);
  } catch (const Error& e) {
    throw Error("input '" + spec.name + "': " + e.what());
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

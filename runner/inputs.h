// Input tensors: what an experiment's InputSpec feeds to forward().
//
// Every backend gets the same float32 NCHW tensor (batch 1 for images), made
// once per input and then converted per backend (dtype, memory format), so
// that a difference between backends can never come from the input. Making an
// input is deterministic: the same spec gives the same bytes on every run.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

#include "core/experiment.h"

namespace driftgate {

// Decodes an image file (PNG, JPEG, BMP, PPM, ... via stb_image), resizes it
// bilinearly (align_corners=false) to width x height when both are set, scales
// pixels to [0, 1], normalizes per channel with mean and std, and returns a
// contiguous float32 tensor of shape [1, 3, H, W]. Throws driftgate::Error
// naming the file when it cannot be read or decoded, or has other than 3 channels.
at::Tensor load_image_input(const ImageInput& image);

// A float32 tensor of `random.shape` from a CPU generator seeded with
// `random.seed`: standard normal or uniform on [0, 1). Throws driftgate::Error
// on an empty shape or a negative dimension.
at::Tensor make_random_input(const RandomInput& random);

// A saved tensor's float32 values and shape, as the .npy file holds them (core/npy_file.h).
// Throws driftgate::Error naming the file when it is not a float32 C-order .npy file, or
// when its shape is no longer the one read when the config was loaded.
at::Tensor load_tensor_input(const TensorInput& tensor);

// Dispatches on the spec's kind. Errors name the input.
at::Tensor make_input(const InputSpec& spec);

// Whether forward's first argument is a List[Tensor] (torchvision detection models
// take a list of [C, H, W] images), read from `forward_schema`'s argument types.
bool forward_takes_tensor_list(const c10::FunctionSchema& forward_schema);

// The argument forward() receives: `input` itself, or with `as_list` its batch
// unbound into a list of [C, H, W] tensors (each keeps the backend's dtype and layout).
c10::IValue forward_argument(const at::Tensor& input, bool as_list);

}  // namespace driftgate

// Input arguments: what an experiment's InputSpec feeds to forward().
//
// Every backend gets the same arguments (tensors of any dtype ElementType names, scalars,
// lists of tensors), made once per input and then converted per backend, floating-point
// tensors only (dtype, memory format: BackendInstance::prepare_input), so that a difference
// between backends can never come from the input. Making an input is deterministic: the same
// spec gives the same bytes on every run.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

#include <vector>

#include "core/experiment.h"

namespace driftgate {

// One input as forward() receives it: its arguments in forward's positional order (self
// left out). An input without `args:` is its one tensor (BackendInstance::forward unbinds
// it for a forward that takes List[Tensor]); an input with `args:` has every argument up
// to forward's last, defaults filled in for the Optional ones the config leaves out.
using ModelInput = std::vector<c10::IValue>;

// Decodes an image file (PNG, JPEG, BMP, PPM, ... via stb_image), resizes it
// bilinearly (align_corners=false) to width x height when both are set, scales
// pixels to [0, 1], normalizes per channel with mean and std, and returns a
// contiguous float32 tensor of shape [1, 3, H, W]. Throws driftgate::Error
// naming the file when it cannot be read or decoded, or has other than 3 channels.
at::Tensor load_image_input(const ImageInput& image);

// A float32 tensor of `random.shape` from a CPU generator seeded with
// `random.seed`: standard normal or uniform on [0, 1) (torch.randn, torch.rand), then
// cast to `random.dtype` (float16, float64: the float32 values rounded or widened).
// Throws driftgate::Error on an empty shape or a negative dimension.
at::Tensor make_random_input(const RandomInput& random);

// torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed),
// dtype=dtype), bit for bit.
at::Tensor make_random_int_input(const RandomIntInput& random);

// torch.full(shape, value, dtype=dtype).
at::Tensor make_fill_input(const FillInput& fill);

// A saved tensor's values, dtype and shape, as the .npy file holds them (core/npy_file.h).
// Throws driftgate::Error naming the file when it is not a C-order .npy file of a dtype
// driftgate reads, or when its shape or dtype is no longer the one read when the config
// was loaded.
at::Tensor load_tensor_input(const TensorInput& tensor);

// Dispatches on the source's kind.
at::Tensor make_tensor(const TensorSource& source);

// The one tensor of an input without `args:`. Errors name the input; an input with
// `args:` is an error (it needs forward's schema: the overload below).
at::Tensor make_input(const InputSpec& spec);

// The input's arguments bound to forward's schema (arguments[0] is self): for an input
// without `args:` its one tensor, which forward's first argument takes, every other
// argument having a default; with `args:` each argument by name, in the schema's order,
// its kind checked against the schema's type (Tensor, List[Tensor], int, float, bool,
// Optional of them; an Optional or defaulted argument may be left out). A mismatch
// throws driftgate::Error "input 'p': <what> [schema: forward(Tensor ids, ...)]" with a
// did-you-mean for a misspelt name; a file that fails to read, the error naming it.
ModelInput make_input(const InputSpec& spec, const c10::FunctionSchema& forward_schema);

// "forward(Tensor ids, Tensor attention_mask, Tensor? token_type_ids=None) -> Tensor".
std::string schema_text(const c10::FunctionSchema& forward_schema);

// Whether forward's first argument is a List[Tensor] (torchvision detection models
// take a list of [C, H, W] images), read from `forward_schema`'s argument types.
bool forward_takes_tensor_list(const c10::FunctionSchema& forward_schema);

// The argument forward() receives: `input` itself, or with `as_list` its batch
// unbound into a list of [C, H, W] tensors (each keeps the backend's dtype and layout).
c10::IValue forward_argument(const at::Tensor& input, bool as_list);

}  // namespace driftgate

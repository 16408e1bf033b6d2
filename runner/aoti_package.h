// The aoti backend's model: an AOTInductor package (.pt2) compiled from the same eager model
// as the TorchScript file, run with LibTorch's package loader (runner/torch_compat.h), its
// flat outputs put back into the model's output tree (tensor, tuple, list, dict) as the
// package's own output spec says, so tier 1 compares it with the TorchScript model's output
// key by key.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <vector>

namespace driftgate {

namespace torch_compat {
class AotiLoader;
}

// A torch.utils._pytree TreeSpec as torch.utils._pytree.treespec_dumps writes it (protocol 1:
// [1, {"type": ..., "context": ..., "children_spec": [...]}]), rebuilt over `leaves` in order:
// null type is a leaf, builtins.tuple a tuple, builtins.list a list, builtins.dict and
// collections.OrderedDict a dict with string keys (the context: a JSON list of them).
// Throws driftgate::Error saying what does not fit (another type, a key that is not a
// string, another number of leaves).
c10::IValue unflatten_tree(const std::string& spec_json, const std::vector<at::Tensor>& leaves);
// How many leaves a TreeSpec has (same format and errors).
size_t tree_leaves(const std::string& spec_json);

class AotiPackage {
 public:
  // Loads `path` with LibTorch's loader and reads its call spec. Throws driftgate::Error
  // naming the file when the loader refuses it or the package does not take exactly one
  // tensor (driftgate feeds one); the caller adds the config and backend.
  explicit AotiPackage(const std::string& path);
  ~AotiPackage();
  AotiPackage(const AotiPackage&) = delete;
  AotiPackage& operator=(const AotiPackage&) = delete;

  // One forward: `input` (float32, contiguous, CPU) in, the output tree out. LibTorch's
  // errors (a shape the package was not compiled for) leave as they are.
  c10::IValue run(const at::Tensor& input);

 private:
  std::unique_ptr<torch_compat::AotiLoader> m_loader;
  std::string m_out_spec;
};

}  // namespace driftgate

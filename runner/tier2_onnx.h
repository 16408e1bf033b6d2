// Tier 2 on ONNX Runtime: which value of the ONNX file is the same function of the input as
// which value of the TorchScript reference.
//
// An ONNX file is another graph of the same eager model: torch.onnx.export (the TorchScript-based
// exporter) names every node by the module scope it was traced in ("/layer1/layer1.0/conv1/Conv")
// and rewrites as it goes (a batch norm folded into the convolution before it, dropout removed,
// constants folded). ONNX Runtime rewrites again at its optimization level, but never a value
// that is a graph output. So values are compared only at the exits of modules, and only where
// both graphs show that the exit is the same function of the input. A value of the reference is
// paired with an ONNX value when it is the exit of a module M (not the model itself) such that
//  1. M is called once: one call site on the reference's callstacks, and no second scope
//     ("relu_1": the exporter's name for a second call of "relu") in the ONNX file;
//  2. in each graph, M's nodes compute exactly one value that is read outside M or returned
//     (its exit), and the ONNX file has nodes in M's scope;
//  3. the exit is read by the same modules in both graphs (the innermost module of each reading
//     node; ONNX Shape nodes read no values and are left out), and by no batch norm in the
//     reference: an op moved across the exit by the exporter (the batch norm it folds into the
//     convolution before it, which makes that convolution's ONNX output conv + bn) leaves the
//     exit's readers different, and the batch norm is named because it moves within one scope
//     too;
//  4. the shapes agree (checked when the values are compared).
// Modules nested at one exit (layer1 and layer1.1) give the same pair. Every other value of the
// reference is not observable. The ONNX values are then returned by ONNX Runtime as extra graph
// outputs (runner/onnx_worker.h), which may change what it fuses: the localizer compares that
// session's outputs with the plain session's and says so when they differ.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runner/onnx_worker.h"
#include "runner/tier2_capture.h"

namespace driftgate {

struct OnnxScopeAlignment {
  std::vector<std::optional<size_t>> target_of;  // per reference point: index into `values`
  std::vector<std::string> values;               // the ONNX values to mark, in first-use order
  size_t observed = 0;
  std::string note;  // what limited the pairing (no scopes in the file, unresolved scopes); may be empty
};

// The module path an ONNX node's name gives, resolved against the reference's module paths
// (its callstacks' instance names): "/layer2/layer2.0/downsample/downsample.0/Conv" ->
// "layer2.0.downsample.0". Each component is the module's path from its last non-numeric atom
// on (torch.onnx's _unqualified_variable_name), whose last atom is the instance name; so
// "/backbone/features.0/Conv" of a backbone that iterates self.features is "backbone.0", as
// on the reference's callstack. "relu_1" (a repeated call) resolves to "relu", which is then
// named in *repeated. Components that name no known module stop the walk there
// (*unresolved). A name without a leading '/' has no scope: "".
std::string onnx_node_module(const std::string& node_name, const std::set<std::string>& modules, std::string* repeated,
                             bool* unresolved);

OnnxScopeAlignment align_onnx_scopes(const std::vector<CapturePoint>& reference, const OnnxGraph& graph);

}  // namespace driftgate

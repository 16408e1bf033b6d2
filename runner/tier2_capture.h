// Tier 2 capture: every intermediate tensor of one forward, without hooks.
//
// It exists because users bisect drift by hand (the paper probed layers
// "selectively") and marking every value as an output (Polygraphy) breaks
// fusions and blows up memory. A CaptureGraph copies the module's forward graph,
// inlines it, and for the values asked for inserts an aten::clone right after the
// producing node and returns the clones as extra outputs of a GraphFunction. The
// clone matters: without it later in-place ops (relu_, add_) overwrite about a
// third of the captured values. The final output stays bit-identical to a plain
// forward (tests/runner/tier2_capture_test.cc checks it).
//
// Every captured value ("point") is named by module path (from the node's
// inlined callstack), op kind and original source line, e.g.
// "layer1.0.relu/aten::relu_#1 (conv.py:459)", and carries a fusion-stable
// boundary key (producing module -> consuming modules) for aligning graphs that a
// backend rewrote (runner/tier2_align.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace torch::jit {
struct GraphFunction;
}  // namespace torch::jit

namespace driftgate {

// One capturable value: a tensor produced by a node of the inlined forward graph.
struct CapturePoint {
  std::string name;       // "layer1.0.relu/aten::relu_#1 (conv.py:459)"
  std::string kind;       // "aten::relu_"
  std::string module;     // producing module path, "" at the top level or without a callstack
  std::string consumers;  // the modules that use the value, sorted, joined by ','
  // Earlier points whose values reach this point's node directly (through
  // non-captured nodes such as constants and list constructs).
  std::vector<size_t> predecessors;
  bool reads_graph_input = false;  // the node reads the forward's input directly
};

// The values of one capture forward.
struct Capture {
  c10::IValue output;                   // what forward() returned
  std::map<size_t, at::Tensor> values;  // point index -> a private copy of the value (dense)
  std::set<size_t> opaque;              // points whose value had a oneDNN (mkldnn) layout
};

class CaptureGraph {
 public:
  // Copies and inlines `module`'s forward graph (autocast off while copying, so no
  // cast nodes are baked in). Throws driftgate::Error when the module has no forward.
  explicit CaptureGraph(const torch::jit::Module& module);

  const std::vector<CapturePoint>& points() const { return m_points; }

  // One forward of the module on `input`, returning the values of `wanted` points
  // (indices into points(), any order). Runs in the caller's settings (threads,
  // oneDNN, autocast: see BackendInstance::with_settings) with no autograd.
  Capture run(const at::Tensor& input, const std::vector<size_t>& wanted) const;

  // Runs only point `point`'s node. `tensor_input` gives the value of each tensor
  // input of that node: for a point's value (by index) or for the forward's input.
  // Constants, attributes and non-tensor values computed from them are rebuilt.
  // Throws driftgate::Error when an input is neither a point nor the forward input.
  at::Tensor run_node(size_t point, const std::function<at::Tensor(std::optional<size_t>)>& tensor_input) const;

  // The points whose values `point`'s node reads as tensors, and whether it reads the
  // forward's input; throws like run_node when a tensor input is neither.
  std::vector<size_t> node_tensor_inputs(size_t point, bool* reads_graph_input) const;

 private:
  std::shared_ptr<torch::jit::GraphFunction> build_function(const std::vector<size_t>& wanted) const;

  torch::jit::Module m_module;
  std::shared_ptr<torch::jit::Graph> m_graph;             // inlined copy of forward; never modified after construction
  std::vector<torch::jit::Value*> m_values;               // captured value per point (in m_graph)
  std::map<const torch::jit::Value*, size_t> m_point_of;  // value -> point
  std::vector<CapturePoint> m_points;
  // Capture functions by wanted points: built (and optimized by the graph executor) once.
  mutable std::map<std::vector<size_t>, std::shared_ptr<torch::jit::GraphFunction>> m_functions;
};

}  // namespace driftgate

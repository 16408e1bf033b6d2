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
// "layer1.0.relu/aten::relu_#1 (conv.py:459)", and carries what aligning a graph
// that a backend rewrote needs (runner/tier2_align.h): where the node comes from in
// the model's code, what it computes besides its activation inputs, and which
// captured values feed it.
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

// One capturable value: a tensor produced by a node of the inlined forward graph
// that depends on the forward's input (constants and prepacked weights are not values).
struct CapturePoint {
  std::string name;  // "layer1.0.relu/aten::relu_#1 (conv.py:459)"
  std::string kind;  // "aten::relu_"
  // The op with its in-place and oneDNN layout variants folded together: "relu" for
  // aten::relu_ and aten::relu, "hardswish" for prim::MKLDNNHardSwish_.
  std::string op;
  std::string module;  // producing module path, "" at the top level or without a callstack
  // Where the node comes from in the model's code: each module instance of its inlined
  // callstack with the call site ("layer1@resnet.py:30/0@container.py:12/relu@resnet.py:52"),
  // and its own source location ("activation.py:8:11"). Both "" for a node a graph pass
  // inserted without them.
  std::string callstack;
  std::string source;
  // What the node computes from its activation inputs: the op (its in-place and oneDNN
  // layout variants count as the same op), the number of inputs and the value of every
  // input that does not depend on the forward's input (constants, parameters, packed
  // weights). Equal signatures on two graphs = the same op on the same weights; an input
  // that cannot be read (a packed XNNPACK context) makes the signature unique.
  uint64_t signature = 0;
  // The shapes of the node's constant tensors of two or more dimensions (convolution
  // and linear weights; read inside packed XNNPACK contexts too): a rewritten node that
  // holds a weight of a convolution's shape holds that convolution.
  std::vector<std::vector<int64_t>> weight_shapes;
  // A layout conversion that a graph pass inserted (to_mkldnn, to_dense, broadcasting of
  // oneDNN tensors, contiguous): the same values in another layout.
  bool layout = false;
  size_t output = 0;  // which output of its node
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

  // Runs the nodes that compute point `point` from the values of the points where
  // `cut` is true (and from the forward's input): only its own node when every point
  // is cut. `tensor_input` gives those values: for a point (by index) or for the
  // forward's input (nullopt). Constants, attributes and non-tensor values computed
  // from them are rebuilt. Throws driftgate::Error when the nodes cannot be re-run
  // on their own (an input from control flow or an extra graph input).
  at::Tensor run_group(size_t point, const std::function<bool(size_t)>& cut,
                       const std::function<at::Tensor(std::optional<size_t>)>& tensor_input) const;

  // The cut points that run_group(point, cut, ...) reads, in graph order, and whether it
  // reads the forward's input.
  std::vector<size_t> group_inputs(size_t point, const std::function<bool(size_t)>& cut, bool* reads_graph_input) const;

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

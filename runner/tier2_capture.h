// Tier 2 capture: every intermediate tensor of one forward, without hooks.
//
// It exists because users bisect drift by hand (the paper probed layers
// "selectively") and marking every value as an output (Polygraphy) breaks
// fusions and blows up memory. A CaptureGraph copies the module's forward graph,
// inlines it, and after every node that produces a value of interest inserts a call
// of driftgate's own recording op (`driftgate::tier2_record`), which copies the value
// out when the forward asks for it. A recording op, not an extra graph output, because
// values inside control flow have no way out of their block: a scripted model's
// `if self.use_res_connect:` or `for layer in ...` (prim::If, prim::Loop) holds the
// values of the branch it takes, once per loop iteration. The copy matters: without
// it later in-place ops (relu_, add_) overwrite about a third of the captured values.
// The final output stays bit-identical to a plain forward
// (tests/runner/tier2_capture_test.cc checks it, on graphs with control flow too).
//
// Every capturable node ("point") is named by module path (from the node's inlined
// callstack), op kind and original source line, e.g.
// "layer1.0.relu/aten::relu_#1 (conv.py:459)", and carries what aligning a graph that a
// backend rewrote needs (runner/tier2_align.h): where the node comes from in the
// model's code, what it computes besides its activation inputs, and which points feed
// it. A point inside a loop runs once per iteration: each run is an Execution, and a
// forward's Trace lists them in the order they ran, with the module calls they belong to.
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
#include <tuple>
#include <vector>

namespace torch::jit {
struct GraphFunction;
}  // namespace torch::jit

namespace driftgate {

// One capturable value: a tensor produced by a node of the inlined forward graph, in any
// block, that depends on the forward's input (constants and prepacked weights are not
// values; the outputs of prim::If and prim::Loop are the values their blocks computed,
// not values of their own).
struct CapturePoint {
  std::string name;  // "layer1.0.relu/aten::relu_#1 (conv.py:459)": the first execution's name
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
  std::string line;  // its original source line, as names show it: "conv.py:459" ("" without debug info)
  // The control flow the node sits in, outermost first, as the profile's names carry it:
  // " [then@mobilenetv3.py:112]" inside the first block of an `if`, "else@" in the
  // second, "loop@" in a loop's body; "" at the top level.
  std::string branch;
  bool in_loop = false;  // inside some loop's body: may run more than once per forward
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
  // Earlier points whose values reach this point's node directly (through non-captured
  // nodes such as constants and list constructs, and through control flow: the values a
  // branch returns, a loop's initial values). Always earlier in points() order.
  std::vector<size_t> predecessors;
  // Points whose values reach the node from an earlier iteration of a loop around it (what
  // the loop carries from its body's end to its next start); may be later in points() order.
  std::vector<size_t> carried;
  bool reads_graph_input = false;  // the node reads the forward's input directly
  std::vector<size_t> calls;       // the module calls (CaptureGraph::calls()) it runs in, outermost first
};

// One module call site of the inlined graph: a module instance called from one place in
// the model's code. A call inside a loop runs once per iteration.
struct ModuleCall {
  std::string path;       // "layer1.0.relu": the module path
  std::string callstack;  // the callstack up to and including this call, as CapturePoint::callstack spells it
};

// One run of a point in a forward: which point, and how many times it ran before in
// that forward (0 the first time; more only inside a loop).
struct Execution {
  size_t point = 0;
  size_t index = 0;
  bool operator<(const Execution& other) const { return std::tie(point, index) < std::tie(other.point, other.index); }
  bool operator==(const Execution& other) const { return point == other.point && index == other.index; }
};

// What one forward ran, in order.
struct Trace {
  std::vector<Execution> executions;  // every point's runs, in the order they ran
  // Per execution: per entry of its point's `calls`, which run of that call it belongs to
  // (0-based): tells the iterations of a loop around a module call apart.
  std::vector<std::vector<size_t>> call_runs;
  std::vector<size_t> runs;  // per point, how many times it ran
};

// The values of one capture forward.
struct Capture {
  c10::IValue output;                      // what forward() returned
  Trace trace;                             // what ran
  std::map<Execution, at::Tensor> values;  // the wanted runs: a private copy of each value
  std::set<Execution> opaque;              // wanted runs whose value had a oneDNN (mkldnn) layout
};

// How run() hands back a wanted value.
enum class ValueLayout {
  k_dense,     // a dense copy (a oneDNN tensor converted): what comparing needs
  k_as_given,  // a copy in the layout the graph produced (a oneDNN tensor stays one)
};

// The profile's name of each execution of `trace`, in its order:
// "<module>/<op kind>#<n> (<file>:<line>)<branch>", n counting the runs of that module's op kind
// in the order they ran. Without control flow that is the order of the graph, and the name is
// the point's own; a loop's runs of one op are #1, #2, ...
std::vector<std::string> execution_names(const std::vector<CapturePoint>& points, const Trace& trace);

// The runs of `trace` as points of their own, in the order they ran: each named as
// execution_names() names it, its predecessors the latest earlier run of each of its point's
// predecessors and carried points (indices into the result). What aligning two forwards needs: a loop that a
// graph pass unrolled (freeze unrolls a constant trip count) has one node per iteration
// where the reference has one node run once per iteration, and a branch not taken has no
// runs on either side.
std::vector<CapturePoint> unrolled_points(const std::vector<CapturePoint>& points, const Trace& trace);

class CaptureGraph {
 public:
  // Copies and inlines `module`'s forward graph (autocast off while copying, so no
  // cast nodes are baked in). Throws driftgate::Error when the module has no forward.
  explicit CaptureGraph(const torch::jit::Module& module);

  const std::vector<CapturePoint>& points() const { return m_points; }
  const std::vector<ModuleCall>& calls() const { return m_calls; }
  // Nodes whose insides cannot be captured (a prim::fork's subgraph, a closure): "prim::fork
  // at x.py:12"; their module calls are missing from points() and calls().
  const std::vector<std::string>& unsupported() const { return m_unsupported; }

  // One forward of the module on `input`: its output, its trace, and copies of the values of
  // the `wanted` runs. Runs in the caller's settings (threads, oneDNN, autocast: see
  // BackendInstance::with_settings) with no autograd.
  Capture run(const at::Tensor& input, const std::set<Execution>& wanted,
              ValueLayout layout = ValueLayout::k_dense) const;

  // Runs the nodes that compute point `point` from the values of the points where `cut` is
  // true (and from the forward's input): only its own node when every point is cut; an
  // `if` whole, both branches. `tensor_input` gives those values: for a point (by index) or
  // for the forward's input (nullopt). Constants, attributes and non-tensor values computed
  // from them are rebuilt. Throws driftgate::Error when the nodes cannot be re-run on their
  // own (an input carried by a loop, an extra graph input).
  at::Tensor run_group(size_t point, const std::function<bool(size_t)>& cut,
                       const std::function<at::Tensor(std::optional<size_t>)>& tensor_input) const;

  // The cut points that run_group(point, cut, ...) reads, in graph order, and whether it
  // reads the forward's input.
  std::vector<size_t> group_inputs(size_t point, const std::function<bool(size_t)>& cut, bool* reads_graph_input) const;

 private:
  std::shared_ptr<torch::jit::GraphFunction> build_function() const;
  std::vector<size_t> reached(size_t point, const std::function<bool(size_t)>& cut, bool through_loops,
                              bool* reads_graph_input) const;

  torch::jit::Module m_module;
  std::shared_ptr<torch::jit::Graph> m_graph;             // inlined copy of forward; never modified after construction
  std::vector<torch::jit::Value*> m_values;               // captured value per point (in m_graph)
  std::map<const torch::jit::Value*, size_t> m_point_of;  // value -> point
  std::vector<CapturePoint> m_points;
  std::vector<ModuleCall> m_calls;
  std::vector<const torch::jit::Node*> m_call_anchors;  // per call: the node its run is counted before
  std::vector<std::string> m_unsupported;
  // The recording function: built (and optimized by the graph executor) once.
  mutable std::shared_ptr<torch::jit::GraphFunction> m_function;
};

}  // namespace driftgate

// Tier 2 on ONNX Runtime: which reference values pair with which ONNX values, on hand-made
// graphs shaped as torch.onnx.export (TorchScript-based, opset 17) writes them: node names
// "/layer1/layer1.0/conv1/Conv", a batch norm folded into the convolution before it, a second
// call of a module named "relu_1". tests/e2e/onnxruntime_tier2_test.py checks the real files
// against an independent computation in Python.
#include "runner/tier2_onnx.h"

#include <gtest/gtest.h>

namespace driftgate {
namespace {

// Reference points in graph order: module path, call site of each module level, op, inputs.
class Reference {
 public:
  size_t add(const std::string& module, const std::string& callstack, const std::string& op,
             std::vector<size_t> predecessors) {
    CapturePoint point;
    point.module = module;
    point.callstack = callstack;
    point.op = op;
    point.kind = "aten::" + op;
    point.name = module + "/aten::" + op;
    point.predecessors = std::move(predecessors);
    m_points.push_back(point);
    return m_points.size() - 1;
  }
  const std::vector<CapturePoint>& points() const { return m_points; }

 private:
  std::vector<CapturePoint> m_points;
};

OnnxNode node(const std::string& name, std::vector<std::string> inputs, std::vector<std::string> outputs) {
  return OnnxNode{name, name.substr(name.find_last_of('/') + 1), std::move(inputs), std::move(outputs)};
}

std::optional<std::string> paired(const OnnxScopeAlignment& alignment, size_t point) {
  if (!alignment.target_of.at(point)) {
    return std::nullopt;
  }
  return alignment.values.at(*alignment.target_of[point]);
}

TEST(Tier2Onnx, ScopeComponentsResolveToModulePaths) {
  const std::set<std::string> modules = {"features", "features.0",          "features.0.0",          "layer2",
                                         "layer2.0", "layer2.0.downsample", "layer2.0.downsample.0", "layer2.0.relu",
                                         "block",    "block.block"};
  std::string repeated;
  bool unresolved = false;
  EXPECT_EQ(onnx_node_module("/layer2/layer2.0/downsample/downsample.0/Conv", modules, &repeated, &unresolved),
            "layer2.0.downsample.0");
  EXPECT_EQ(onnx_node_module("/features/features.0/features.0.0/Conv", modules, &repeated, &unresolved),
            "features.0.0");
  EXPECT_EQ(onnx_node_module("/block/block/Relu", modules, &repeated, &unresolved), "block.block");
  EXPECT_EQ(onnx_node_module("/Flatten", modules, &repeated, &unresolved), "");
  EXPECT_EQ(onnx_node_module("Conv_12", modules, &repeated, &unresolved), "");
  EXPECT_TRUE(repeated.empty());
  EXPECT_FALSE(unresolved);
  EXPECT_EQ(onnx_node_module("/layer2/layer2.0/relu_1/Relu", modules, &repeated, &unresolved), "layer2.0.relu");
  EXPECT_EQ(repeated, "layer2.0.relu");
  EXPECT_EQ(onnx_node_module("/layer2/nosuch/Conv", modules, &repeated, &unresolved), "layer2");
  EXPECT_TRUE(unresolved);
  // A backbone that iterates its ModuleList (`for block in self.features`): the list is no call
  // level on the reference's callstacks ("backbone.0"), its elements keep its name in the file
  // (SSDlite's, as torch.onnx.export 2.6 writes it).
  const std::set<std::string> iterated = {"backbone",
                                          "backbone.0",
                                          "backbone.0.1",
                                          "backbone.0.1.block",
                                          "head",
                                          "head.classification_head",
                                          "head.classification_head.5"};
  repeated.clear();
  unresolved = false;
  EXPECT_EQ(onnx_node_module("/backbone/features.0/features.0.1/block/Conv", iterated, &repeated, &unresolved),
            "backbone.0.1.block");
  EXPECT_EQ(onnx_node_module("/head/classification_head/Reshape_9", iterated, &repeated, &unresolved),
            "head.classification_head");
  EXPECT_FALSE(unresolved);
  EXPECT_EQ(onnx_node_module("/head/classification_head/module_list.5_1/Conv", iterated, &repeated, &unresolved),
            "head.classification_head.5");
  EXPECT_EQ(repeated, "head.classification_head.5");
}

// conv1 -> bn1 -> relu -> fc, the batch norm folded into the convolution by the exporter.
TEST(Tier2Onnx, AFoldedBatchNormHidesTheConvolutionsOutput) {
  Reference reference;
  const size_t conv = reference.add("conv1", "conv1@m.py:1", "_convolution", {});
  const size_t bn = reference.add("bn1", "bn1@m.py:2", "batch_norm", {conv});
  const size_t relu = reference.add("relu", "relu@m.py:3", "relu", {bn});
  const size_t fc = reference.add("fc", "fc@m.py:4", "linear", {relu});
  OnnxGraph graph;
  graph.nodes = {node("/conv1/Conv", {"input", "w", "b"}, {"c"}), node("/relu/Relu", {"c"}, {"r"}),
                 node("/fc/Gemm", {"r", "fw", "fb"}, {"out"})};
  graph.inputs = {"input"};
  graph.outputs = {"out"};
  const OnnxScopeAlignment alignment = align_onnx_scopes(reference.points(), graph);
  EXPECT_EQ(paired(alignment, conv), std::nullopt);  // conv + bn in the file: not the conv's output
  EXPECT_EQ(paired(alignment, bn), std::nullopt);    // bn1 has no node of its own
  EXPECT_EQ(paired(alignment, relu), "r");
  EXPECT_EQ(paired(alignment, fc), "out");
  EXPECT_EQ(alignment.observed, 2u);
  EXPECT_EQ(alignment.values, (std::vector<std::string>{"r", "out"}));
  EXPECT_TRUE(alignment.note.empty());
}

// A residual block calling its relu twice, as torchvision's BasicBlock does.
TEST(Tier2Onnx, AModuleCalledTwiceIsNotComparedButItsParentIs) {
  Reference reference;
  const size_t stem = reference.add("stem", "stem@m.py:1", "_convolution", {});
  const size_t conv = reference.add("b.conv", "b@m.py:2/conv@b.py:1", "_convolution", {stem});
  const size_t relu1 = reference.add("b.relu", "b@m.py:2/relu@b.py:2", "relu", {conv});
  const size_t conv2 = reference.add("b.conv2", "b@m.py:2/conv2@b.py:3", "_convolution", {relu1});
  const size_t add = reference.add("b", "b@m.py:2", "add", {conv2, stem});
  const size_t relu2 = reference.add("b.relu", "b@m.py:2/relu@b.py:5", "relu", {add});
  const size_t head = reference.add("head", "head@m.py:3", "linear", {relu2});
  OnnxGraph graph;
  graph.nodes = {node("/stem/Conv", {"input", "w0"}, {"s"}), node("/b/conv/Conv", {"s", "w1"}, {"c1"}),
                 node("/b/relu/Relu", {"c1"}, {"r1"}),       node("/b/conv2/Conv", {"r1", "w2"}, {"c2"}),
                 node("/b/Add", {"c2", "s"}, {"a"}),         node("/b/relu_1/Relu", {"a"}, {"r2"}),
                 node("/head/Gemm", {"r2", "w3"}, {"out"})};
  graph.outputs = {"out"};
  const OnnxScopeAlignment alignment = align_onnx_scopes(reference.points(), graph);
  EXPECT_EQ(paired(alignment, stem), "s");  // read by b.conv and by b (the add) in both
  EXPECT_EQ(paired(alignment, conv), "c1");
  EXPECT_EQ(paired(alignment, relu1), std::nullopt);  // b.relu: two calls
  EXPECT_EQ(paired(alignment, conv2), "c2");
  EXPECT_EQ(paired(alignment, add), std::nullopt);  // inside b, not an exit of any module
  EXPECT_EQ(paired(alignment, relu2), "r2");        // b's exit
  EXPECT_EQ(paired(alignment, head), "out");
  // The same second call, seen only on the ONNX side (a loop traced at one call site): still
  // two calls, so b.relu's values stay unpaired.
  Reference same_site;
  same_site.add("stem", "stem@m.py:1", "_convolution", {});
  same_site.add("b.conv", "b@m.py:2/conv@b.py:1", "_convolution", {0});
  same_site.add("b.relu", "b@m.py:2/relu@b.py:2", "relu", {1});
  same_site.add("b.conv2", "b@m.py:2/conv2@b.py:3", "_convolution", {2});
  same_site.add("b", "b@m.py:2", "add", {3, 0});
  same_site.add("b.relu", "b@m.py:2/relu@b.py:2", "relu", {4});
  same_site.add("head", "head@m.py:3", "linear", {5});
  const OnnxScopeAlignment again = align_onnx_scopes(same_site.points(), graph);
  EXPECT_EQ(paired(again, 2), std::nullopt);
  EXPECT_EQ(paired(again, 5), "r2");
  // m(m(x)) from two call sites, in a file whose exporter gave both calls one scope: rule 1
  // goes by the reference's call sites too, so m is not compared.
  Reference twice;
  const size_t first = twice.add("m", "m@n.py:1", "relu", {});
  const size_t second = twice.add("m", "m@n.py:2", "relu", {first});
  const size_t last = twice.add("head", "head@n.py:3", "linear", {second});
  OnnxGraph one_scope;
  one_scope.nodes = {node("/m/Relu", {"input"}, {"a"}), node("/m/Relu", {"a"}, {"b"}),
                     node("/head/Gemm", {"b", "w"}, {"out"})};
  one_scope.outputs = {"out"};
  const OnnxScopeAlignment called_twice = align_onnx_scopes(twice.points(), one_scope);
  EXPECT_EQ(paired(called_twice, first), std::nullopt);
  EXPECT_EQ(paired(called_twice, second), std::nullopt);
  EXPECT_EQ(paired(called_twice, last), "out");
}

// A functional batch norm in the parent's forward, folded into the child's convolution: the
// readers' modules are the same on both sides, the batch norm still rules the pair out.
TEST(Tier2Onnx, AnExitReadByABatchNormIsNotCompared) {
  Reference reference;
  const size_t conv = reference.add("m.conv", "m@n.py:1/conv@m.py:1", "_convolution", {});
  const size_t bn = reference.add("m", "m@n.py:1", "batch_norm", {conv});
  const size_t relu = reference.add("m", "m@n.py:1", "relu", {bn});
  const size_t head = reference.add("head", "head@n.py:2", "linear", {relu});
  OnnxGraph graph;
  graph.nodes = {node("/m/conv/Conv", {"input", "w"}, {"c"}), node("/m/Relu", {"c"}, {"r"}),
                 node("/head/Gemm", {"r", "w2"}, {"out"})};
  graph.outputs = {"out"};
  const OnnxScopeAlignment alignment = align_onnx_scopes(reference.points(), graph);
  EXPECT_EQ(paired(alignment, conv), std::nullopt);
  EXPECT_EQ(paired(alignment, bn), std::nullopt);
  EXPECT_EQ(paired(alignment, relu), "r");
  EXPECT_EQ(paired(alignment, head), "out");
}

// An exit read by other modules in the file than in the reference (an op moved across it),
// a module with two exits, and a file without scopes.
TEST(Tier2Onnx, DifferentReadersTwoExitsAndNoScopesAreNotCompared) {
  Reference reference;
  const size_t a = reference.add("a", "a@m.py:1", "_convolution", {});
  const size_t b = reference.add("b", "b@m.py:2", "sigmoid", {a});
  const size_t c = reference.add("c", "c@m.py:3", "mul", {b, a});
  const size_t d = reference.add("d", "d@m.py:4", "linear", {c});
  OnnxGraph moved;
  moved.nodes = {node("/a/Conv", {"input", "w"}, {"x"}), node("/a/Sigmoid", {"x"}, {"s"}),
                 node("/c/Mul", {"s", "x"}, {"y"}), node("/d/Gemm", {"y", "w2"}, {"out"})};
  moved.outputs = {"out"};
  const OnnxScopeAlignment alignment = align_onnx_scopes(reference.points(), moved);
  EXPECT_EQ(paired(alignment, a), std::nullopt);  // a's scope now has two exits (x and s)
  EXPECT_EQ(paired(alignment, b), std::nullopt);  // b has no node in the file
  EXPECT_EQ(paired(alignment, c), "y");
  EXPECT_EQ(paired(alignment, d), "out");

  OnnxGraph unscoped;
  unscoped.nodes = {node("Conv_0", {"input", "w"}, {"x"}), node("Sigmoid_1", {"x"}, {"s"}),
                    node("Mul_2", {"s", "x"}, {"y"}), node("Gemm_3", {"y", "w2"}, {"out"})};
  unscoped.outputs = {"out"};
  const OnnxScopeAlignment none = align_onnx_scopes(reference.points(), unscoped);
  EXPECT_EQ(none.observed, 0u);
  EXPECT_NE(none.note.find("carry no module scope"), std::string::npos) << none.note;
}

}  // namespace
}  // namespace driftgate

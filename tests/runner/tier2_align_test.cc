// Tier 2 alignment on hand-made capture points: position when the graph is kept; on a
// rewritten graph, pairs only where both graphs compute the same function of the input.
// The graphs below reproduce what LibTorch 1.13's freeze, optimize_for_inference and
// optimizeForMobile do to a conv -> bn -> relu network (graphs dumped from resnet18 and
// mobilenet_v3_small; tests/e2e/tier2_differential_test.py checks the real ones against an
// independent localizer).
#include "runner/tier2_align.h"

#include <gtest/gtest.h>

namespace driftgate {
namespace {

// Builds points in graph order.
class Graph {
 public:
  // `callstack` "" = a node a pass inserted; `signature` equal on two graphs = same op
  // on the same weights.
  size_t add(const std::string& name, const std::string& callstack, uint64_t signature,
             std::vector<size_t> predecessors, std::vector<std::vector<int64_t>> weights = {}) {
    CapturePoint point;
    point.name = name;
    point.kind = name;
    point.op = name;
    point.callstack = callstack;
    point.source = callstack.empty() ? "" : "code.py:1:1";
    point.signature = signature;
    point.weight_shapes = std::move(weights);
    point.predecessors = std::move(predecessors);
    point.reads_graph_input = point.predecessors.empty();
    m_points.push_back(point);
    return m_points.size() - 1;
  }
  // A node whose rewrite pattern replaced its own source location (XNNPACK's prepacked conv).
  size_t add_without_source(const std::string& name, const std::string& callstack, uint64_t signature,
                            std::vector<size_t> predecessors, std::vector<std::vector<int64_t>> weights) {
    const size_t p = add(name, callstack, signature, std::move(predecessors), std::move(weights));
    m_points[p].source.clear();
    return p;
  }
  // A layout conversion a pass inserted.
  size_t add_layout(const std::string& name, std::vector<size_t> predecessors) {
    const size_t p = add(name, "", 0, std::move(predecessors));
    m_points[p].layout = true;
    return p;
  }
  const std::vector<CapturePoint>& points() const { return m_points; }

 private:
  std::vector<CapturePoint> m_points;
};

// stem: conv -> bn -> relu; block: conv1 -> bn1 -> relu1 -> conv2 -> bn2 -> += stem -> relu2;
// head: linear.
// Weight shapes: the stem's conv, the block's two convs (the same shape, as in resnet), the head.
const std::vector<int64_t> k_stem{8, 3, 7, 7};
const std::vector<int64_t> k_block{8, 8, 3, 3};
const std::vector<int64_t> k_head{10, 8};

struct Reference {
  Graph graph;
  size_t conv, bn, relu, conv1, bn1, relu1, conv2, bn2, add, relu2, head;
  Reference() {
    conv = graph.add("stem.conv", "stem.conv", 1, {}, {k_stem});
    bn = graph.add("stem.bn", "stem.bn", 2, {conv});
    relu = graph.add("stem.relu", "stem.relu", 3, {bn});
    conv1 = graph.add("block.conv1", "block.conv1", 4, {relu}, {k_block});
    bn1 = graph.add("block.bn1", "block.bn1", 5, {conv1});
    relu1 = graph.add("block.relu1", "block.relu1", 3, {bn1});
    conv2 = graph.add("block.conv2", "block.conv2", 6, {relu1}, {k_block});
    bn2 = graph.add("block.bn2", "block.bn2", 7, {conv2});
    add = graph.add("block.add", "block", 8, {bn2, relu});
    relu2 = graph.add("block.relu2", "block.relu2", 3, {add});
    head = graph.add("head", "head", 9, {relu2}, {k_head});
  }
};

std::optional<size_t> none() { return std::nullopt; }

TEST(Tier2AlignTest, KeptGraphsAlignByPosition) {
  Reference reference;
  Alignment alignment = align_points(reference.graph.points(), reference.graph.points(), true);
  EXPECT_EQ(alignment.kind, AlignmentKind::k_position);
  EXPECT_EQ(alignment.observed, reference.graph.points().size());
  EXPECT_EQ(alignment.target_of[3], std::optional<size_t>(3));
}

TEST(Tier2AlignTest, FoldedBatchNormPairsWithTheFoldedConvNeverTheConvsOwnOutput) {
  // freeze: each conv keeps its callstack with the batch norm folded into its weights
  // (a changed signature); the batch norms are gone; everything else is unchanged.
  Reference r;
  Graph target;
  const size_t conv = target.add("conv'", "stem.conv", 101, {}, {k_stem});
  const size_t relu = target.add("relu", "stem.relu", 3, {conv});
  const size_t conv1 = target.add("conv1'", "block.conv1", 104, {relu}, {k_block});
  const size_t relu1 = target.add("relu1", "block.relu1", 3, {conv1});
  const size_t conv2 = target.add("conv2'", "block.conv2", 106, {relu1}, {k_block});
  const size_t add = target.add("add", "block", 8, {conv2, relu});
  const size_t relu2 = target.add("relu2", "block.relu2", 3, {add});
  const size_t head = target.add("head", "head", 9, {relu2}, {k_head});
  Alignment a = align_points(r.graph.points(), target.points(), false);
  EXPECT_EQ(a.kind, AlignmentKind::k_boundary);
  // The batch norm's output is what the folded conv computes; the conv's own output
  // (before the batch norm) exists in no target value.
  EXPECT_EQ(a.target_of[r.bn], conv);
  EXPECT_EQ(a.target_of[r.conv], none());
  EXPECT_EQ(a.target_of[r.bn1], conv1);
  EXPECT_EQ(a.target_of[r.conv1], none());
  EXPECT_EQ(a.target_of[r.bn2], conv2);
  EXPECT_EQ(a.target_of[r.conv2], none());
  EXPECT_EQ(a.target_of[r.relu], relu);
  EXPECT_EQ(a.target_of[r.relu1], relu1);
  EXPECT_EQ(a.target_of[r.add], add);
  EXPECT_EQ(a.target_of[r.relu2], relu2);
  EXPECT_EQ(a.target_of[r.head], head);
  EXPECT_EQ(a.observed, 8u);
}

TEST(Tier2AlignTest, FusedConvBatchNormReluPairsOnlyItsLastValue) {
  // optimizeForMobile: conv + bn + relu become one prepacked conv with the relu's
  // callstack; conv2 + bn2 one with conv2's callstack (its source is the rewrite
  // pattern's); add + relu2 one new node without a callstack; the head is prepacked.
  Reference r;
  Graph target;
  const size_t stem = target.add("conv2d_clamp_run", "stem.relu", 201, {}, {k_stem});
  const size_t block1 = target.add("conv2d_clamp_run", "block.relu1", 202, {stem}, {k_block});
  const size_t block2 = target.add_without_source("conv2d_clamp_run", "block.conv2", 203, {block1}, {k_block});
  const size_t add_relu = target.add("_add_relu_", "", 204, {block2, stem});
  const size_t head = target.add("linear_clamp_run", "head", 205, {add_relu}, {k_head});
  Alignment a = align_points(r.graph.points(), target.points(), false);
  EXPECT_EQ(a.target_of[r.relu], stem);
  EXPECT_EQ(a.target_of[r.relu1], block1);
  EXPECT_EQ(a.target_of[r.bn2], block2);
  EXPECT_EQ(a.target_of[r.relu2], add_relu);
  EXPECT_EQ(a.target_of[r.head], head);
  // Inside the fused groups nothing is observable: not the conv, not the batch norm
  // (the fused node's input is the conv's input, not the batch norm's output), not the
  // sum before the fused relu.
  for (size_t fused : {r.conv, r.bn, r.conv1, r.bn1, r.conv2, r.add}) {
    EXPECT_EQ(a.target_of[fused], none()) << r.graph.points()[fused].name;
  }
  EXPECT_EQ(a.observed, 5u);
}

TEST(Tier2AlignTest, BlocksFusedInARowEachHoldTheirOwnConvolution) {
  // optimizeForMobile on a traced conv -> bn -> relu, twice in a row (the differential
  // test's branchy, issue #33): each block is one prepacked conv with its relu's callstack,
  // whose packed weights cannot be read (no weight shapes). The second block's conv and
  // batch norm live in the second node, not in the first (which holds the first block's
  // conv already): pairing the first node's output with the second batch norm named a
  // divergence that was the first block's relu.
  Graph reference;
  const size_t conv_a = reference.add("a.conv", "a.conv", 1, {}, {k_block});
  const size_t bn_a = reference.add("a.bn", "a.bn", 2, {conv_a});
  const size_t relu_a = reference.add("a.relu", "a.relu", 3, {bn_a});
  const size_t conv_b = reference.add("b.conv", "b.conv", 4, {relu_a}, {k_block});
  const size_t bn_b = reference.add("b.bn", "b.bn", 5, {conv_b});
  const size_t relu_b = reference.add("b.relu", "b.relu", 3, {bn_b});
  const size_t head = reference.add("head", "head", 9, {relu_b}, {k_head});
  Graph target;
  const size_t block_a = target.add("conv2d_clamp_run", "a.relu", 301, {}, {});
  const size_t block_b = target.add("conv2d_clamp_run", "b.relu", 302, {block_a}, {});
  const size_t head_t = target.add("linear_clamp_run", "head", 303, {block_b}, {});
  Alignment a = align_points(reference.points(), target.points(), false);
  EXPECT_EQ(a.target_of[relu_a], block_a);
  EXPECT_EQ(a.target_of[relu_b], block_b);
  EXPECT_EQ(a.target_of[head], head_t);
  for (size_t fused : {conv_a, bn_a, conv_b, bn_b}) {
    EXPECT_EQ(a.target_of[fused], none()) << reference.points()[fused].name;
  }
  EXPECT_EQ(a.observed, 3u);
}

TEST(Tier2AlignTest, LayoutConversionsAreTransparentAndOneDnnVariantsAreTheSameOp) {
  // optimize_for_inference: to_mkldnn at the input, oneDNN convs without a callstack
  // (folded weights), the activations kept as their oneDNN variants (same signature),
  // to_dense before the head.
  Reference r;
  Graph target;
  const size_t in = target.add_layout("to_mkldnn", {});
  const size_t conv = target.add("mkldnn_convolution", "", 301, {in}, {k_stem});
  const size_t relu = target.add("relu_", "stem.relu", 3, {conv});
  const size_t conv1 = target.add("mkldnn_convolution", "", 302, {relu}, {k_block});
  const size_t relu1 = target.add("relu_", "block.relu1", 3, {conv1});
  const size_t conv2 = target.add("mkldnn_convolution", "", 303, {relu1}, {k_block});
  const size_t add = target.add("add_", "block", 8, {conv2, relu});
  const size_t relu2 = target.add("relu_", "block.relu2", 3, {add});
  const size_t dense = target.add_layout("to_dense", {relu2});
  const size_t head = target.add("linear", "head", 9, {dense}, {k_head});
  Alignment a = align_points(r.graph.points(), target.points(), false);
  EXPECT_EQ(a.target_of[r.bn], conv);
  EXPECT_EQ(a.target_of[r.bn1], conv1);
  EXPECT_EQ(a.target_of[r.bn2], conv2);
  EXPECT_EQ(a.target_of[r.relu], relu);
  EXPECT_EQ(a.target_of[r.relu2], relu2);  // not the to_dense copy of it
  EXPECT_EQ(a.target_of[r.head], head);
  EXPECT_EQ(a.target_of[r.conv], none());
  for (const auto& target_of : a.target_of) {
    EXPECT_NE(target_of, std::optional<size_t>(in));
    EXPECT_NE(target_of, std::optional<size_t>(dense));
  }
}

TEST(Tier2AlignTest, AnOpRecreatedWithoutItsCallstackAndALinearSplitInTwoArePaired) {
  // optimize_for_inference on mobilenet_v2: ReLU6 becomes prim::MKLDNNHardTanh_ without
  // a callstack, the convs oneDNN convs without one; the head's linear becomes matmul +
  // add, neither with a callstack.
  Graph reference;
  const size_t conv = reference.add("convolution", "f.0", 1, {}, {{8, 3, 3, 3}});
  const size_t bn = reference.add("batch_norm", "f.1", 2, {conv});
  const size_t relu6 = reference.add("hardtanh", "f.2", 3, {bn});
  const size_t conv2 = reference.add("convolution", "g.0", 4, {relu6}, {{8, 8, 1, 1}});
  const size_t bn2 = reference.add("batch_norm", "g.1", 5, {conv2});
  const size_t relu6b = reference.add("hardtanh", "g.2", 3, {bn2});
  const size_t flatten = reference.add("flatten", "top", 6, {relu6b});
  const size_t linear = reference.add("linear", "fc", 7, {flatten}, {{10, 8}});
  Graph target;
  const size_t in = target.add_layout("to_mkldnn", {});
  const size_t t_conv = target.add("convolution", "", 11, {in}, {{8, 3, 3, 3}});
  const size_t t_relu6 = target.add("hardtanh", "", 12, {t_conv});
  const size_t t_conv2 = target.add("convolution", "", 13, {t_relu6}, {{8, 8, 1, 1}});
  const size_t t_relu6b = target.add("hardtanh", "", 14, {t_conv2});
  const size_t dense = target.add_layout("to_dense", {t_relu6b});
  const size_t t_flatten = target.add("flatten", "top", 6, {dense});
  const size_t matmul = target.add("matmul", "", 15, {t_flatten}, {{8, 10}});
  const size_t add = target.add("add", "", 16, {matmul});
  Alignment a = align_points(reference.points(), target.points(), false);
  EXPECT_EQ(a.target_of[bn], t_conv);
  EXPECT_EQ(a.target_of[relu6], t_relu6);
  EXPECT_EQ(a.target_of[bn2], t_conv2);
  EXPECT_EQ(a.target_of[relu6b], t_relu6b);
  EXPECT_EQ(a.target_of[flatten], t_flatten);
  EXPECT_EQ(a.target_of[linear], add);  // the end of the split, not the matmul alone
  EXPECT_EQ(a.target_of[conv], none());
  EXPECT_EQ(a.target_of[conv2], none());
}

TEST(Tier2AlignTest, ARemovedIdentityLeavesBothValuesComparable) {
  // Dropout in eval mode is removed by freeze, without any node absorbing it.
  Graph reference;
  const size_t fc1 = reference.add("fc1", "fc1", 1, {});
  const size_t dropout = reference.add("dropout", "dropout", 2, {fc1});
  const size_t fc2 = reference.add("fc2", "fc2", 3, {dropout});
  Graph target;
  const size_t t_fc1 = target.add("fc1", "fc1", 1, {});
  const size_t t_fc2 = target.add("fc2", "fc2", 3, {t_fc1});
  Alignment a = align_points(reference.points(), target.points(), false);
  EXPECT_EQ(a.target_of[fc1], t_fc1);
  EXPECT_EQ(a.target_of[dropout], t_fc1);
  EXPECT_EQ(a.target_of[fc2], t_fc2);
  EXPECT_EQ(reference_of(a, target.points().size())[t_fc1], std::optional<size_t>(fc1));
}

TEST(Tier2AlignTest, AnUnchangedNodeNeverAbsorbsAnOp) {
  // The conv kept its weights (same signature) and the batch norm vanished: nothing
  // can hold the batch norm, so the rewrite dropped an op; the values before and after
  // it are both paired with the conv's, and a real difference shows as divergence.
  Graph reference;
  const size_t conv = reference.add("conv", "conv", 1, {});
  const size_t bn = reference.add("bn", "bn", 2, {conv});
  const size_t relu = reference.add("relu", "relu", 3, {bn});
  Graph target;
  const size_t t_conv = target.add("conv", "conv", 1, {});
  const size_t t_relu = target.add("relu", "relu", 3, {t_conv});
  Alignment a = align_points(reference.points(), target.points(), false);
  EXPECT_EQ(a.target_of[conv], t_conv);
  EXPECT_EQ(a.target_of[bn], t_conv);
  EXPECT_EQ(a.target_of[relu], t_relu);
}

TEST(Tier2AlignTest, TwoCandidatesWithoutAMatchAreNotGuessed) {
  // A new node split into two parallel new nodes that both hold the batch norm: either
  // could be its output; neither is paired.
  Graph reference;
  const size_t conv = reference.add("conv", "conv", 1, {});
  const size_t bn = reference.add("bn", "bn", 2, {conv});
  const size_t out = reference.add("cat", "cat", 3, {bn});
  Graph target;
  const size_t a1 = target.add("part_a", "", 10, {});
  const size_t a2 = target.add("part_b", "", 11, {});
  target.add("cat", "cat", 3, {a1, a2});
  Alignment a = align_points(reference.points(), target.points(), false);
  EXPECT_EQ(a.target_of[bn], none());
  EXPECT_EQ(a.target_of[out], std::optional<size_t>(2));
}

TEST(Tier2AlignTest, RepeatedCallSitesMatchInOrderAndAmbiguousOnesNotAtAll) {
  // The same code location three times (a module called in a loop) on both sides pairs
  // in graph order; three on one side and two on the other match no node, and only the
  // value after the whole stretch is known to be the same function.
  Graph reference;
  reference.add("relu", "block.relu", 3, {});
  reference.add("relu", "block.relu", 3, {0});
  reference.add("relu", "block.relu", 3, {1});
  Graph two;
  two.add("relu", "block.relu", 3, {});
  two.add("relu", "block.relu", 3, {0});
  Alignment a = align_points(reference.points(), two.points(), false);
  EXPECT_EQ(a.observed, 1u);
  EXPECT_EQ(a.target_of[2], std::optional<size_t>(1));
  Alignment b = align_points(reference.points(), reference.points(), false);
  EXPECT_EQ(b.kind, AlignmentKind::k_boundary);
  EXPECT_EQ(b.observed, 3u);
  EXPECT_EQ(b.target_of[2], std::optional<size_t>(2));
}

}  // namespace
}  // namespace driftgate

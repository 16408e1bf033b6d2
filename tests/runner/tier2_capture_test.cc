// Tier 2 capture: every activation, bit-identical output, in-place safe, named.
#include "runner/tier2_capture.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>
#include <functional>

#include "runner/backend.h"
#include "tests/support/temp_dir.h"
#include "tier2_models.h"

namespace driftgate {
namespace {

at::Tensor input_tensor() { return at::randn({1, 3, 12, 12}, at::TensorOptions().dtype(at::kFloat)); }

size_t find_point(const CaptureGraph& graph, const std::string& prefix) {
  const auto& points = graph.points();
  auto it = std::find_if(points.begin(), points.end(),
                         [&](const CapturePoint& point) { return point.name.rfind(prefix, 0) == 0; });
  EXPECT_NE(it, points.end()) << "no point named " << prefix << "...";
  return static_cast<size_t>(it - points.begin());
}

std::vector<size_t> all_points(const CaptureGraph& graph) {
  std::vector<size_t> wanted(graph.points().size());
  for (size_t i = 0; i < wanted.size(); ++i) {
    wanted[i] = i;
  }
  return wanted;
}

TEST(Tier2CaptureTest, OutputStaysBitIdenticalToAPlainForward) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_tier2_model(dir.path(), "model.pt"));
  module.eval();
  at::manual_seed(3);
  at::Tensor input = input_tensor();
  at::NoGradGuard no_grad;
  at::Tensor plain = module.forward({input.clone()}).toTensor();
  CaptureGraph graph(module);
  Capture capture = graph.run(input.clone(), all_points(graph));
  EXPECT_TRUE(capture.output.toTensor().equal(plain));
  EXPECT_EQ(capture.values.size(), graph.points().size());
  // A second capture forward gives the same bits again (no state left behind).
  EXPECT_TRUE(graph.run(input.clone(), {}).output.toTensor().equal(plain));
}

TEST(Tier2CaptureTest, InPlaceOpsDoNotOverwriteCapturedValues) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_tier2_model(dir.path(), "model.pt"));
  at::manual_seed(4);
  at::NoGradGuard no_grad;
  CaptureGraph graph(module);
  const size_t conv = find_point(graph, "stem.conv/aten::conv2d#1");
  const size_t relu = find_point(graph, "stem.relu/aten::relu_#1");
  Capture capture = graph.run(input_tensor(), {conv, relu});
  // relu_ runs in place on the conv's output; the clone keeps what the conv produced.
  EXPECT_LT(capture.values.at(conv).min().item<double>(), 0.0);
  EXPECT_GE(capture.values.at(relu).min().item<double>(), 0.0);
  EXPECT_TRUE(capture.values.at(relu).equal(capture.values.at(conv).clamp_min(0.0)));
}

TEST(Tier2CaptureTest, PointsAreNamedByModulePathOpKindAndOccurrence) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_tier2_model(dir.path(), "model.pt"));
  CaptureGraph graph(module);
  std::vector<std::string> names;
  for (const CapturePoint& point : graph.points()) {
    names.push_back(point.name);
  }
  const std::vector<std::string> expected{
      "stem.conv/aten::conv2d#1 (<string>:3)",   "stem.relu/aten::relu_#1 (<string>:3)",
      "block1.conv/aten::conv2d#1 (<string>:3)", "block1.bn/aten::batch_norm#1 (<string>:3)",
      "block1.relu/aten::relu_#1 (<string>:3)",  "block1/aten::add_#1 (<string>:4)",
      "block2.conv/aten::conv2d#1 (<string>:3)", "block2.relu/aten::relu_#1 (<string>:3)",
      "block2/aten::add_#1 (<string>:4)",        "head/aten::mean#1 (<string>:3)",
      "head/aten::linear#1 (<string>:3)"};
  ASSERT_EQ(names.size(), expected.size()) << ::testing::PrintToString(names);
  for (size_t i = 0; i < expected.size(); ++i) {
    // Models defined from C++ strings have the source "<string>" and the line in it.
    EXPECT_EQ(names[i], expected[i]);
  }
  const CapturePoint& bn = graph.points()[3];
  EXPECT_EQ(bn.module, "block1.bn");
  EXPECT_EQ(bn.predecessors, std::vector<size_t>{2});
  EXPECT_TRUE(graph.points()[0].reads_graph_input);
  // Where the node comes from: the module instances with their call sites, and its own line.
  EXPECT_NE(bn.callstack.find("block1@"), std::string::npos) << bn.callstack;
  EXPECT_NE(bn.callstack.find("/bn@"), std::string::npos) << bn.callstack;
  EXPECT_FALSE(bn.source.empty());
  EXPECT_NE(graph.points()[2].callstack, bn.callstack);
}

TEST(Tier2CaptureTest, SignaturesTellTheSameOpOnTheSameWeightsFromAChangedOne) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_tier2_model(dir.path(), "model.pt"));
  module.eval();
  torch::jit::Module again = torch::jit::load(testing::save_tier2_model(dir.path(), "again.pt"));
  torch::jit::Module perturbed =
      torch::jit::load(testing::save_tier2_model(dir.path(), "perturbed.pt", "block2.conv.weight", 1.05));
  torch::jit::Module frozen = torch::jit::freeze(module);
  CaptureGraph graph(module);
  CaptureGraph same(again);
  CaptureGraph changed(perturbed);
  CaptureGraph folded(frozen);
  const size_t conv1 = find_point(graph, "block1.conv/aten::conv2d#1");
  const size_t conv2 = find_point(graph, "block2.conv/aten::conv2d#1");
  const size_t relu = find_point(graph, "block2.relu/aten::relu_#1");
  // Another load of the same file: every op keeps its signature.
  for (size_t p = 0; p < graph.points().size(); ++p) {
    EXPECT_EQ(graph.points()[p].signature, same.points()[p].signature) << graph.points()[p].name;
  }
  // One weight scaled: only its conv changes.
  EXPECT_NE(graph.points()[conv2].signature, changed.points()[conv2].signature);
  EXPECT_EQ(graph.points()[conv1].signature, changed.points()[conv1].signature);
  // freeze folds block1's batch norm into its conv (weights change) but keeps block2's
  // conv, whose weights become constants of the same value.
  auto in_folded = [&](const std::string& prefix) { return folded.points()[find_point(folded, prefix)]; };
  EXPECT_NE(in_folded("block1.conv/").signature, graph.points()[conv1].signature);
  EXPECT_EQ(in_folded("block2.conv/").signature, graph.points()[conv2].signature);
  EXPECT_EQ(in_folded("block2.relu/").signature, graph.points()[relu].signature);
}

TEST(Tier2CaptureTest, RunGroupReplaysOneOpOrAGroupOnGivenInputs) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_tier2_model(dir.path(), "model.pt"));
  at::manual_seed(5);
  at::NoGradGuard no_grad;
  CaptureGraph graph(module);
  const size_t conv = find_point(graph, "block2.conv/aten::conv2d#1");
  const size_t relu = find_point(graph, "block2.relu/aten::relu_#1");
  const size_t before = find_point(graph, "block1/aten::add_#1");
  Capture capture = graph.run(input_tensor(), {before, conv, relu});
  const std::function<bool(size_t)> every = [](size_t) { return true; };
  bool reads_input = true;
  EXPECT_EQ(graph.group_inputs(conv, every, &reads_input), std::vector<size_t>{before});
  EXPECT_FALSE(reads_input);
  at::Tensor replayed = graph.run_group(conv, every, [&](std::optional<size_t> point) {
    EXPECT_EQ(point, std::optional<size_t>(before));
    return capture.values.at(before).clone();
  });
  EXPECT_TRUE(replayed.equal(capture.values.at(conv)));
  // Cut only at block1's output: conv and relu run together from it.
  const std::function<bool(size_t)> at_before = [&](size_t p) { return p == before; };
  EXPECT_EQ(graph.group_inputs(relu, at_before, &reads_input), std::vector<size_t>{before});
  at::Tensor group = graph.run_group(relu, at_before, [&](std::optional<size_t> point) {
    EXPECT_EQ(point, std::optional<size_t>(before));
    return capture.values.at(before).clone();
  });
  EXPECT_TRUE(group.equal(capture.values.at(relu)));
  // Cut nowhere: the whole prefix from the forward's input.
  const std::function<bool(size_t)> nowhere = [](size_t) { return false; };
  EXPECT_TRUE(graph.group_inputs(relu, nowhere, &reads_input).empty());
  EXPECT_TRUE(reads_input);
}

TEST(Tier2CaptureTest, ConstantsAndPrepackedWeightsAreNotValues) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_tier2_model(dir.path(), "model.pt"));
  module.eval();
  // optimize_for_inference turns weights into oneDNN constant tensors (nodes of their
  // own) and inserts layout conversions around the oneDNN ops.
  torch::jit::Module optimized = torch::jit::optimize_for_inference(module);
  CaptureGraph graph(optimized);
  bool layout = false;
  for (const CapturePoint& point : graph.points()) {
    EXPECT_NE(point.kind, "prim::ConstantMKLDNNTensor") << point.name;
    layout = layout || point.layout;
  }
  EXPECT_TRUE(layout) << "to_mkldnn/to_dense are marked as layout conversions";
}

TEST(Tier2CaptureTest, FrozenModuleKeepsModulePaths) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_tier2_model(dir.path(), "model.pt"));
  module.eval();
  torch::jit::Module frozen = torch::jit::freeze(module);
  CaptureGraph graph(frozen);
  bool block2_conv = false;
  for (const CapturePoint& point : graph.points()) {
    EXPECT_EQ(point.module.find("SELF"), std::string::npos) << point.name;
    block2_conv = block2_conv || point.module == "block2.conv";
  }
  EXPECT_TRUE(block2_conv);
}

}  // namespace
}  // namespace driftgate

// Tier 2 capture: every activation, bit-identical output, in-place safe, named.
#include "runner/tier2_capture.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>

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
  EXPECT_EQ(bn.consumers, "block1.relu");
  EXPECT_EQ(bn.predecessors, std::vector<size_t>{2});
  EXPECT_TRUE(graph.points()[0].reads_graph_input);
}

TEST(Tier2CaptureTest, RunNodeReplaysOneOpOnGivenInputs) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_tier2_model(dir.path(), "model.pt"));
  at::manual_seed(5);
  at::NoGradGuard no_grad;
  CaptureGraph graph(module);
  const size_t conv = find_point(graph, "block2.conv/aten::conv2d#1");
  const size_t before = find_point(graph, "block1/aten::add_#1");
  Capture capture = graph.run(input_tensor(), {before, conv});
  bool reads_input = true;
  EXPECT_EQ(graph.node_tensor_inputs(conv, &reads_input), std::vector<size_t>{before});
  EXPECT_FALSE(reads_input);
  at::Tensor replayed = graph.run_node(conv, [&](std::optional<size_t> point) {
    EXPECT_EQ(point, std::optional<size_t>(before));
    return capture.values.at(before).clone();
  });
  EXPECT_TRUE(replayed.equal(capture.values.at(conv)));
}

TEST(Tier2CaptureTest, FrozenModuleKeepsModulePathsForBoundaries) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_tier2_model(dir.path(), "model.pt"));
  module.eval();
  torch::jit::Module frozen = torch::jit::freeze(module);
  CaptureGraph graph(frozen);
  bool block2_conv = false;
  for (const CapturePoint& point : graph.points()) {
    block2_conv = block2_conv || (point.module == "block2.conv" && point.consumers == "block2.relu");
  }
  EXPECT_TRUE(block2_conv);
}

}  // namespace
}  // namespace driftgate

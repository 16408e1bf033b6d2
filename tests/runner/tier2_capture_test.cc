// Tier 2 capture: every activation, bit-identical output, in-place safe, named.
#include "runner/tier2_capture.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>
#include <functional>
#include <set>

#include "core/error.h"
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

// The first run of every point.
std::set<Execution> all_points(const CaptureGraph& graph) {
  std::set<Execution> wanted;
  for (size_t i = 0; i < graph.points().size(); ++i) {
    wanted.insert({i, 0});
  }
  return wanted;
}

Execution once(size_t point) { return {point, 0}; }

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
  Capture capture = graph.run(input_tensor(), {once(conv), once(relu)});
  // relu_ runs in place on the conv's output; the copy keeps what the conv produced.
  EXPECT_LT(capture.values.at(once(conv)).min().item<double>(), 0.0);
  EXPECT_GE(capture.values.at(once(relu)).min().item<double>(), 0.0);
  EXPECT_TRUE(capture.values.at(once(relu)).equal(capture.values.at(once(conv)).clamp_min(0.0)));
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
  Capture capture = graph.run(input_tensor(), {once(before), once(conv), once(relu)});
  const std::function<bool(size_t)> every = [](size_t) { return true; };
  bool reads_input = true;
  EXPECT_EQ(graph.group_inputs(conv, every, &reads_input), std::vector<size_t>{before});
  EXPECT_FALSE(reads_input);
  at::Tensor replayed = graph.run_group(conv, every, [&](std::optional<size_t> point) {
    EXPECT_EQ(point, std::optional<size_t>(before));
    return capture.values.at(once(before)).clone();
  });
  EXPECT_TRUE(replayed.equal(capture.values.at(once(conv))));
  // Cut only at block1's output: conv and relu run together from it.
  const std::function<bool(size_t)> at_before = [&](size_t p) { return p == before; };
  EXPECT_EQ(graph.group_inputs(relu, at_before, &reads_input), std::vector<size_t>{before});
  at::Tensor group = graph.run_group(relu, at_before, [&](std::optional<size_t> point) {
    EXPECT_EQ(point, std::optional<size_t>(before));
    return capture.values.at(once(before)).clone();
  });
  EXPECT_TRUE(group.equal(capture.values.at(once(relu))));
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

// A scripted model's `if` and `for` (prim::If, prim::Loop): the values inside the branch the
// forward takes and inside every loop iteration are captured, the values after them too.
TEST(Tier2CaptureTest, CapturesInsideTheBranchTakenAndEveryLoopIteration) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_control_flow_model(dir.path(), "cf.pt"));
  module.eval();
  at::manual_seed(6);
  at::NoGradGuard no_grad;
  const at::Tensor input = input_tensor();
  const at::Tensor plain = module.forward({input.clone()}).toTensor();
  CaptureGraph graph(module);
  // Every point, whichever branch: the conv of both `up` and `down` is a point.
  const size_t up = find_point(graph, "up/aten::conv2d#1");
  const size_t down = find_point(graph, "down/aten::conv2d#1");
  const size_t step = find_point(graph, "step.conv/aten::conv2d#1");
  const size_t head = find_point(graph, "head/aten::linear#1");
  const size_t add = find_point(graph, "aten::add_#1");
  EXPECT_NE(graph.points()[up].branch.find("[then@"), std::string::npos) << graph.points()[up].name;
  EXPECT_NE(graph.points()[down].branch.find("[else@"), std::string::npos) << graph.points()[down].name;
  EXPECT_TRUE(graph.points()[step].in_loop);
  EXPECT_NE(graph.points()[step].name.find("[loop@"), std::string::npos) << graph.points()[step].name;
  EXPECT_FALSE(graph.points()[head].in_loop);
  // The head reads the loop's result: its predecessors reach into the loop's body.
  EXPECT_EQ(graph.points()[head].branch, "");
  std::set<Execution> wanted = all_points(graph);
  wanted.insert({step, 1});
  wanted.insert({step, 2});
  Capture capture = graph.run(input.clone(), wanted);
  EXPECT_TRUE(capture.output.toTensor().equal(plain));
  // One of the two branches ran, the loop's body three times.
  EXPECT_EQ(capture.trace.runs[up] + capture.trace.runs[down], 1U);
  EXPECT_EQ(capture.trace.runs[step], 3U);
  EXPECT_EQ(capture.trace.runs[head], 1U);
  EXPECT_EQ(capture.trace.runs[add], 1U);
  EXPECT_EQ(capture.values.count({step, 2}), 1U);
  EXPECT_EQ(capture.values.count({step, 3}), 0U);
  // The runs of the loop are told apart, and named #1, #2, #3 in the order they ran.
  EXPECT_FALSE(capture.values.at({step, 0}).equal(capture.values.at({step, 1})));
  const std::vector<std::string> names = execution_names(graph.points(), capture.trace);
  std::vector<std::string> steps;
  for (size_t i = 0; i < names.size(); ++i) {
    if (capture.trace.executions[i].point == step) {
      steps.push_back(names[i].substr(0, names[i].find(" (")));
    }
  }
  EXPECT_EQ(steps, (std::vector<std::string>{"step.conv/aten::conv2d#1", "step.conv/aten::conv2d#2",
                                             "step.conv/aten::conv2d#3"}));
  // Each run of `step` inside the loop is a run of the module call of its own.
  const std::vector<size_t>& calls = graph.points()[step].calls;
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(graph.calls()[calls.back()].path, "step.conv");
  std::vector<size_t> runs_of_step_call;
  for (size_t i = 0; i < capture.trace.executions.size(); ++i) {
    if (capture.trace.executions[i].point == step) {
      runs_of_step_call.push_back(capture.trace.call_runs[i].front());
    }
  }
  EXPECT_EQ(runs_of_step_call, (std::vector<size_t>{0, 1, 2}));
  // The value after the loop is the third run's output through the relu, then the head.
  const size_t relu = find_point(graph, "step.relu/aten::relu_#1");
  wanted = {{relu, 2}, once(head)};
  Capture last = graph.run(input.clone(), wanted);
  EXPECT_TRUE(last.values.at(once(head)).equal(plain));
}

TEST(Tier2CaptureTest, TheOtherInputTakesTheOtherBranch) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_control_flow_model(dir.path(), "cf.pt"));
  module.eval();
  at::NoGradGuard no_grad;
  CaptureGraph graph(module);
  const size_t up = find_point(graph, "up/aten::conv2d#1");
  const size_t down = find_point(graph, "down/aten::conv2d#1");
  // The branch follows the sign of the input's mean.
  const Trace positive = graph.run(at::ones({1, 3, 12, 12}), {}).trace;
  const Trace negative = graph.run(-at::ones({1, 3, 12, 12}), {}).trace;
  EXPECT_EQ(positive.runs[up], 1U);
  EXPECT_EQ(positive.runs[down], 0U);
  EXPECT_EQ(negative.runs[up], 0U);
  EXPECT_EQ(negative.runs[down], 1U);
}

TEST(Tier2CaptureTest, FreezeFoldsTheConstantIfAndUnrollsTheLoop) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_control_flow_model(dir.path(), "cf.pt"));
  module.eval();
  torch::jit::Module frozen = torch::jit::freeze(module);
  CaptureGraph graph(frozen);
  const size_t add = find_point(graph, "aten::add_#1");
  EXPECT_EQ(graph.points()[add].branch, "") << "freeze folds `if self.residual`";
  // A constant trip count: one node per iteration, none of them in a loop any more.
  size_t steps = 0;
  for (const CapturePoint& point : graph.points()) {
    if (point.module == "step.relu") {
      ++steps;
      EXPECT_FALSE(point.in_loop) << point.name;
    }
  }
  EXPECT_EQ(steps, 3U);
  // The `if` on the input stays, with both branches.
  EXPECT_NE(graph.points()[find_point(graph, "up/aten::conv2d#1")].branch.find("[then@"), std::string::npos);
  at::NoGradGuard no_grad;
  at::manual_seed(7);
  const at::Tensor input = input_tensor();
  EXPECT_TRUE(graph.run(input.clone(), {}).output.toTensor().equal(frozen.forward({input.clone()}).toTensor()));
}

TEST(Tier2CaptureTest, RunGroupCopiesAnIfWhole) {
  test::TempDir dir;
  torch::jit::Module module = torch::jit::load(testing::save_control_flow_model(dir.path(), "cf.pt"));
  module.eval();
  at::NoGradGuard no_grad;
  CaptureGraph graph(module);
  // The first conv of the loop reads the `if`'s result: cut at the stem's relu and the
  // block's add, the group holds the `if` with both branches.
  const size_t mean = find_point(graph, "aten::mean#1");
  const size_t add = find_point(graph, "aten::add_#1");
  const size_t stem = find_point(graph, "stem.relu/aten::relu_#1");
  const size_t step = find_point(graph, "step.conv/aten::conv2d#1");
  at::manual_seed(8);
  const at::Tensor input = input_tensor();
  Capture capture =
      graph.run(input.clone(), {once(mean), once(add), once(stem), once(find_point(graph, "block.relu/")), once(step)});
  // The `if self.residual` returns the add's value or the block's, and reads the stem's; `if
  // positive` decides by the input's mean: all of them are what the copied `if`s read.
  const size_t block = find_point(graph, "block.relu/aten::relu_#1");
  const std::function<bool(size_t)> cut = [&](size_t p) { return p == mean || p == add || p == stem || p == block; };
  bool reads_input = true;
  EXPECT_EQ(graph.group_inputs(step, cut, &reads_input), (std::vector<size_t>{mean, stem, block, add}));
  EXPECT_FALSE(reads_input);
  auto feed = [&](std::optional<size_t> p) {
    EXPECT_TRUE(p.has_value());
    return capture.values.at(once(*p)).clone();
  };
  // Inside a loop the conv's input is carried from the previous iteration: it cannot be
  // re-run on its own, and says so.
  try {
    graph.run_group(step, cut, feed);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("carried by a loop"), std::string::npos) << e.what();
  }
  // A conv inside the data-dependent `if` reads the constant `if`'s result: that `if` is
  // copied whole, both branches.
  const size_t up = find_point(graph, "up/aten::conv2d#1");
  const size_t down = find_point(graph, "down/aten::conv2d#1");
  const size_t taken = capture.trace.runs[up] == 1 ? up : down;
  Capture branch = graph.run(input.clone(), {once(taken)});
  at::Tensor replayed = graph.run_group(taken, cut, feed);
  EXPECT_TRUE(replayed.equal(branch.values.at(once(taken))));
}

}  // namespace
}  // namespace driftgate

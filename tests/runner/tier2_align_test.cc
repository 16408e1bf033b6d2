// Tier 2 alignment on hand-made capture points: position when the graph is kept,
// module boundaries (exact, consumer-side, block level) when a backend rewrote it.
#include "runner/tier2_align.h"

#include <gtest/gtest.h>

namespace driftgate {
namespace {

CapturePoint point(const std::string& kind, const std::string& module, const std::string& consumers) {
  CapturePoint result;
  result.kind = kind;
  result.module = module;
  result.consumers = consumers;
  result.name = module + "/" + kind;
  return result;
}

// stem (conv, relu) -> block (conv, bn, relu, += stem's output) -> head.
std::vector<CapturePoint> reference_points() {
  return {point("aten::conv2d", "stem.conv", "stem.relu"), point("aten::relu_", "stem.relu", "block,block.conv"),
          point("aten::conv2d", "block.conv", "block.bn"), point("aten::batch_norm", "block.bn", "block.relu"),
          point("aten::relu_", "block.relu", "block"),     point("aten::add_", "block", "head"),
          point("aten::linear", "head", "<output>")};
}

TEST(Tier2AlignTest, KeptGraphsAlignByPosition) {
  Alignment alignment = align_points(reference_points(), reference_points(), true);
  EXPECT_EQ(alignment.kind, AlignmentKind::k_position);
  EXPECT_EQ(alignment.observed, 7u);
  EXPECT_EQ(alignment.target_of[3], std::optional<size_t>(3));
}

TEST(Tier2AlignTest, RewrittenGraphsAlignAtBoundariesAndLeaveFusedValuesUnobserved) {
  // XNNPACK-like: conv + relu fused under the relu's callstack; the block's add and relu
  // fused into one node that lost its callstack; the bn folded away.
  const std::vector<CapturePoint> target{point("prepacked::conv2d_clamp_run", "stem.relu", "block.relu,"),
                                         point("prepacked::conv2d_clamp_run", "block.relu", ""),
                                         point("aten::_add_relu_", "", "head"),
                                         point("prepacked::linear_clamp_run", "head", "<output>")};
  Alignment alignment = align_points(reference_points(), target, false);
  EXPECT_EQ(alignment.kind, AlignmentKind::k_boundary);
  EXPECT_EQ(alignment.target_of[1], std::optional<size_t>(0));  // stem's output: block level
  EXPECT_EQ(alignment.target_of[5], std::optional<size_t>(2));  // block's output: consumer side, block level
  EXPECT_EQ(alignment.target_of[6], std::optional<size_t>(3));  // exact key
  for (size_t fused : {0, 2, 3, 4}) {
    EXPECT_FALSE(alignment.target_of[fused].has_value()) << reference_points()[fused].name;
  }
  EXPECT_EQ(alignment.observed, 3u);
  EXPECT_EQ(reference_of(alignment, target.size())[2], std::optional<size_t>(5));
}

TEST(Tier2AlignTest, AmbiguousKeysMatchNothing) {
  // Two values inside one block with the same block-level key on the reference side
  // and one on the target side: not matched (a guess could compare different values).
  std::vector<CapturePoint> reference{point("aten::conv2d", "b.conv", "b.bn"),
                                      point("aten::batch_norm", "b.bn", "b.relu")};
  std::vector<CapturePoint> target{point("aten::conv2d", "b.conv", "b.relu")};
  Alignment alignment = align_points(reference, target, false);
  EXPECT_EQ(alignment.observed, 0u);
}

}  // namespace
}  // namespace driftgate

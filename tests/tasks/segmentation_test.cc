#include "tasks/segmentation.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace driftgate {
namespace {

// Two classes over four pixels, NCHW with N = 1: class-0 plane, then class-1 plane.
TEST(Segmentation, IdenticalMasksAgree) {
  const std::vector<float> logits{1, 0, 1, 0, 0, 1, 0, 1};
  SegmentationResult result = compare_segmentation(logits.data(), logits.data(), 1, 2, 4, 0.0);
  EXPECT_EQ(result.pixels, 4);
  EXPECT_DOUBLE_EQ(result.pixel_agreement, 1.0);
  EXPECT_DOUBLE_EQ(result.miou, 1.0);
  EXPECT_EQ(result.confident_flips + result.tie_flips, 0);
}

TEST(Segmentation, FlipsSplitByTheReferenceMargin) {
  // Reference: pixels 0,1 class 0 (margins 1 and 1e-6), pixels 2,3 class 1.
  const std::vector<float> reference{1.0F, 0.000001F, 0.0F, 0.0F, 0.0F, 0.0F, 1.0F, 1.0F};
  // Target: pixels 0 and 1 flip to class 1.
  const std::vector<float> target{0.0F, 0.0F, 0.0F, 0.0F, 1.0F, 1.0F, 1.0F, 1.0F};
  SegmentationResult result = compare_segmentation(reference.data(), target.data(), 1, 2, 4, 1e-5);
  EXPECT_EQ(result.agree, 2);
  EXPECT_DOUBLE_EQ(result.pixel_agreement, 0.5);
  EXPECT_EQ(result.confident_flips, 1);
  EXPECT_EQ(result.tie_flips, 1);
  EXPECT_DOUBLE_EQ(result.max_flip_margin, 1.0);
  // Class 0: intersection 0, union 2; class 1: intersection 2, union 4.
  EXPECT_DOUBLE_EQ(result.miou, (0.0 + 0.5) / 2.0);
}

TEST(Segmentation, EmptySizesAreErrors) {
  const std::vector<float> logits{1.0F};
  EXPECT_THROW(compare_segmentation(logits.data(), logits.data(), 1, 0, 1, 0.0), Error);
}

}  // namespace
}  // namespace driftgate

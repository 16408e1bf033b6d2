#include "tasks/classification.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace driftgate {
namespace {

TEST(Classification, ArgmaxTakesTheLowestIndexOnTiesAndSkipsNaN) {
  const std::vector<float> values{1.0F, 3.0F, 3.0F, NAN};
  EXPECT_EQ(argmax(values.data(), 4), 1);
  const std::vector<float> nan_first{NAN, -1.0F, 2.0F};
  EXPECT_EQ(argmax(nan_first.data(), 3), 2);
}

TEST(Classification, TopKOrdersByValueThenIndex) {
  const std::vector<float> values{0.5F, 2.0F, 0.5F, 1.0F};
  EXPECT_EQ(top_k_indices(values.data(), 4, 3), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(top_k_indices(values.data(), 4, 10).size(), 4U);
}

TEST(Classification, IdenticalLogitsAgreeCompletely) {
  const std::vector<float> logits{0.1F, 0.9F, 0.3F, 2.0F, 1.0F, 0.0F};
  ClassificationResult result = compare_classification(logits.data(), logits.data(), 2, 3, {0.0, 2});
  EXPECT_EQ(result.top1_agree, 2);
  EXPECT_DOUBLE_EQ(result.top1_agreement, 1.0);
  EXPECT_DOUBLE_EQ(result.topk_overlap, 1.0);
  EXPECT_TRUE(result.flips.empty());
  EXPECT_FALSE(result.reference_accuracy.has_value());
}

TEST(Classification, AFlipIsReportedWithTheReferenceMargin) {
  const std::vector<float> reference{1.0F, 1.5F, 0.0F};
  const std::vector<float> target{1.6F, 1.5F, 0.0F};
  ClassificationResult result = compare_classification(reference.data(), target.data(), 1, 3, {0.0, 2});
  ASSERT_EQ(result.flips.size(), 1U);
  EXPECT_EQ(result.flips[0].reference_class, 1);
  EXPECT_EQ(result.flips[0].target_class, 0);
  EXPECT_DOUBLE_EQ(result.flips[0].reference_margin, 0.5);
  EXPECT_DOUBLE_EQ(result.top1_agreement, 0.0);
  EXPECT_DOUBLE_EQ(result.topk_overlap, 1.0);  // {0, 1} on both sides
}

TEST(Classification, ASwapWithinEpsilonIsATieNotADisagreement) {
  const std::vector<float> reference{1.0F, 1.000001F, 0.0F};
  const std::vector<float> target{1.000002F, 1.0F, 0.0F};
  ClassificationResult strict = compare_classification(reference.data(), target.data(), 1, 3, {0.0, 1});
  EXPECT_EQ(strict.flips.size(), 1U);
  EXPECT_EQ(strict.tie_swaps, 0);
  ClassificationResult tolerant = compare_classification(reference.data(), target.data(), 1, 3, {1e-5, 1});
  EXPECT_TRUE(tolerant.flips.empty());
  EXPECT_EQ(tolerant.tie_swaps, 1);
  EXPECT_DOUBLE_EQ(tolerant.top1_agreement, 1.0);
}

TEST(Classification, TopKOverlapCountsSharedClasses) {
  const std::vector<float> reference{4.0F, 3.0F, 2.0F, 1.0F};
  const std::vector<float> target{4.0F, 1.0F, 2.0F, 3.0F};
  ClassificationResult result = compare_classification(reference.data(), target.data(), 1, 4, {0.0, 2});
  EXPECT_DOUBLE_EQ(result.topk_overlap, 0.5);  // {0, 1} vs {0, 3}
  EXPECT_EQ(result.top_k, 2);
}

TEST(Classification, AccuracyPerSideWithLabels) {
  const std::vector<float> reference{1.0F, 0.0F, 0.0F, 1.0F};
  const std::vector<float> target{1.0F, 0.0F, 1.0F, 0.0F};
  const std::vector<int64_t> labels{0, 1};
  ClassificationResult result = compare_classification(reference.data(), target.data(), 2, 2, {0.0, 1}, &labels);
  ASSERT_TRUE(result.reference_accuracy.has_value());
  EXPECT_DOUBLE_EQ(*result.reference_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(*result.target_accuracy, 0.5);
}

TEST(Classification, BadShapesAndLabelCountsAreErrors) {
  const std::vector<float> logits{1.0F};
  EXPECT_THROW(compare_classification(logits.data(), logits.data(), 0, 1, {}), Error);
  const std::vector<int64_t> labels{0, 1};
  try {
    compare_classification(logits.data(), logits.data(), 1, 1, {}, &labels);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the labels give 2 classes for a batch of 1 rows; give one class per row");
  }
}

}  // namespace
}  // namespace driftgate

#include "tasks/detection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace driftgate {
namespace {

Detection box(float x1, float y1, float x2, float y2, float score, int64_t label = 0) {
  return {x1, y1, x2, y2, score, label};
}

TEST(Detection, IouOfOverlappingDisjointAndEmptyBoxes) {
  EXPECT_DOUBLE_EQ(box_iou(box(0, 0, 2, 2, 1), box(1, 0, 3, 2, 1)), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(box_iou(box(0, 0, 1, 1, 1), box(2, 2, 3, 3, 1)), 0.0);
  EXPECT_DOUBLE_EQ(box_iou(box(0, 0, 0, 0, 1), box(0, 0, 0, 0, 1)), 0.0);
}

TEST(Detection, DecodeAppliesBoxCoderDeltasAndSigmoid) {
  const std::vector<float> anchors{0, 0, 10, 10};
  const std::vector<float> deltas{0.1F, 0.0F, 0.0F, std::log(2.0F)};  // shift x by 1, double the height
  const std::vector<float> logits{0.0F, -10.0F};                      // sigmoid: 0.5 and ~4.5e-5
  DecodeOptions options;
  options.score_threshold = 0.05;
  std::vector<Detection> out = decode_anchors(deltas.data(), logits.data(), anchors.data(), 1, 2, options);
  ASSERT_EQ(out.size(), 1U);
  EXPECT_NEAR(out[0].x1, 1.0, 1e-5);
  EXPECT_NEAR(out[0].x2, 11.0, 1e-5);
  EXPECT_NEAR(out[0].y1, -5.0, 1e-5);
  EXPECT_NEAR(out[0].y2, 15.0, 1e-5);
  EXPECT_FLOAT_EQ(out[0].score, 0.5F);
  EXPECT_EQ(out[0].label, 0);
}

TEST(Detection, DecodeSoftmaxSkipsTheBackgroundClassAndHonoursWeights) {
  const std::vector<float> anchors{0, 0, 10, 10};
  const std::vector<float> deltas{1.0F, 0.0F, 0.0F, 0.0F};
  const std::vector<float> logits{5.0F, 5.0F};  // softmax 0.5 / 0.5
  DecodeOptions options;
  options.activation = ScoreActivation::k_softmax;
  options.background_class = 0;
  options.weights = {10.0, 10.0, 5.0, 5.0};
  std::vector<Detection> out = decode_anchors(deltas.data(), logits.data(), anchors.data(), 1, 2, options);
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].label, 1);
  EXPECT_FLOAT_EQ(out[0].score, 0.5F);
  EXPECT_NEAR(out[0].x1, 1.0, 1e-5);  // dx 1 / weight 10 * width 10
}

TEST(Detection, NmsIsClassAwareAndCapped) {
  std::vector<Detection> candidates{box(0, 0, 10, 10, 0.9F, 0), box(1, 0, 11, 10, 0.8F, 0), box(1, 0, 11, 10, 0.7F, 1),
                                    box(50, 50, 60, 60, 0.6F, 0)};
  std::vector<Detection> kept = non_max_suppression(candidates, NmsMode::k_stable, 0.5, 100);
  ASSERT_EQ(kept.size(), 3U);
  EXPECT_FLOAT_EQ(kept[0].score, 0.9F);
  EXPECT_EQ(kept[1].label, 1);
  EXPECT_EQ(non_max_suppression(candidates, NmsMode::k_stable, 0.5, 2).size(), 2U);
}

// The paper's case in miniature: two overlapping boxes with the same score, produced
// in opposite orders by two backends (coordinates a hair apart). Native NMS keeps
// whichever came first, so the backends keep different boxes; stable NMS sorts the
// tie by x1 and both keep the same one.
TEST(Detection, TiedScoresNativeOrderDisagreesStableOrderAgrees) {
  const Detection a = box(0, 0, 10, 10, 0.75F);
  const Detection b = box(4, 0, 14, 10, 0.75F);  // IoU with a: 60/140 = 0.43
  const Detection b_target = box(4.000001F, 0, 14, 10, 0.75F);
  const std::vector<Detection> reference{a, b};
  const std::vector<Detection> target{b_target, a};
  const double nms_iou = 0.3;
  const double match_iou = 0.5;
  DetectionComparison native =
      compare_detections(non_max_suppression(reference, NmsMode::k_native, nms_iou, 100),
                         non_max_suppression(target, NmsMode::k_native, nms_iou, 100), match_iou);
  EXPECT_EQ(native.matched, 0);
  EXPECT_DOUBLE_EQ(native.matched_fraction, 0.0);
  EXPECT_DOUBLE_EQ(native.map50, 0.0);
  DetectionComparison stable =
      compare_detections(non_max_suppression(reference, NmsMode::k_stable, nms_iou, 100),
                         non_max_suppression(target, NmsMode::k_stable, nms_iou, 100), match_iou);
  EXPECT_EQ(stable.matched, 1);
  EXPECT_DOUBLE_EQ(stable.matched_fraction, 1.0);
  EXPECT_DOUBLE_EQ(stable.mean_iou, 1.0);
  EXPECT_DOUBLE_EQ(stable.map50, 1.0);
}

TEST(Detection, StableOrderBreaksTiesByCoordinatesThenClass) {
  std::vector<Detection> candidates{box(2, 0, 3, 1, 0.5F, 1), box(1, 0, 3, 1, 0.5F, 0), box(1, 0, 3, 1, 0.5F, 2),
                                    box(9, 9, 9, 9, 0.9F, 0)};
  order_candidates(candidates, NmsMode::k_stable);
  EXPECT_FLOAT_EQ(candidates[0].score, 0.9F);
  EXPECT_EQ(candidates[1].label, 0);
  EXPECT_EQ(candidates[2].label, 2);
  EXPECT_EQ(candidates[3].label, 1);
  std::vector<Detection> native{box(2, 0, 3, 1, 0.5F, 1), box(1, 0, 3, 1, 0.5F, 0)};
  order_candidates(native, NmsMode::k_native);
  EXPECT_EQ(native[0].label, 1);  // ties keep the backend's order
}

TEST(Detection, MatchingIsClassAwareAndMeasuresScoreDelta) {
  const std::vector<Detection> reference{box(0, 0, 10, 10, 0.9F, 0), box(20, 20, 30, 30, 0.8F, 1)};
  const std::vector<Detection> target{box(0, 0, 10, 11, 0.85F, 0), box(20, 20, 30, 30, 0.8F, 2)};
  DetectionComparison result = compare_detections(reference, target, 0.5);
  EXPECT_EQ(result.matched, 1);
  EXPECT_DOUBLE_EQ(result.matched_fraction, 0.5);
  EXPECT_NEAR(result.mean_iou, 100.0 / 110.0, 1e-9);
  EXPECT_NEAR(result.max_score_delta, 0.05, 1e-6);
  EXPECT_DOUBLE_EQ(result.map50, 0.5);  // class 0: AP 1, class 1: AP 0
}

TEST(Detection, MeanAveragePrecisionPenalisesALeadingFalsePositive) {
  const std::vector<Detection> reference{box(0, 0, 10, 10, 0.9F), box(20, 0, 30, 10, 0.9F)};
  const std::vector<Detection> target{box(50, 50, 60, 60, 0.95F), box(0, 0, 10, 10, 0.9F), box(20, 0, 30, 10, 0.8F)};
  // Precision 0, 1/2, 2/3 at recall 0, 1/2, 1: interpolated AP = 1/2 * 2/3 + 1/2 * 2/3.
  EXPECT_NEAR(mean_average_precision50(reference, target), 2.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(mean_average_precision50({}, {}), 1.0);
  EXPECT_DOUBLE_EQ(mean_average_precision50({}, target), 0.0);
}

TEST(Detection, BoxesBelowTheScoreThresholdAreDropped) {
  const std::vector<float> boxes{0, 0, 1, 1, 0, 0, 2, 2};
  const std::vector<float> scores{0.9F, 0.01F};
  const std::vector<int64_t> labels{3, 4};
  std::vector<Detection> out = detections_from_boxes(boxes.data(), scores.data(), labels.data(), 2, 0.05);
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].label, 3);
}

}  // namespace
}  // namespace driftgate

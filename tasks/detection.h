// Tier 3 detection adapter: decoding raw heads, NMS with a chosen tie order, and
// matching two backends' detections.
//
// It exists for the paper's central case: two backends produced the pre-NMS boxes
// in different orders, NMS broke score ties by that order, and tiny numeric
// differences became different detections. `native` NMS reproduces that (ties in
// the backend's order); `stable` sorts by score, then x1, y1, x2, y2, class, so
// equal scores no longer depend on the order. Plain float buffers, no LibTorch.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/task_spec.h"

namespace driftgate {

struct Detection {
  float x1 = 0.0F;
  float y1 = 0.0F;
  float x2 = 0.0F;
  float y2 = 0.0F;
  float score = 0.0F;
  int64_t label = 0;
};

// Intersection over union of two xyxy boxes; 0 when the union is empty.
double box_iou(const Detection& a, const Detection& b);

// Candidates from a raw head: box deltas [n, 4] (dx, dy, dw, dh, torchvision's
// BoxCoder with `weights`), class logits [n, classes] and anchors [n, 4] xyxy.
// Scores are the logits after `activation`; every (anchor, class) above
// `score_threshold`, except `background_class`, is a candidate, in anchor-then-class
// order (the backend's order).
struct DecodeOptions {
  ScoreActivation activation = ScoreActivation::k_sigmoid;
  std::array<double, 4> weights{1.0, 1.0, 1.0, 1.0};
  double score_threshold = 0.05;
  int64_t background_class = -1;
};
std::vector<Detection> decode_anchors(const float* deltas, const float* logits, const float* anchors, int64_t n,
                                      int64_t classes, const DecodeOptions& options);

// Candidates from decoded outputs: boxes [n, 4], scores [n], labels [n] (null: all 0),
// in the order given, those with score above `score_threshold`.
std::vector<Detection> detections_from_boxes(const float* boxes, const float* scores, const int64_t* labels, int64_t n,
                                             double score_threshold);

// The candidate order NMS visits (see NmsMode).
void order_candidates(std::vector<Detection>& candidates, NmsMode mode);

// Class-aware greedy NMS: visits candidates in `mode`'s order and keeps one unless a
// kept box of the same class overlaps it with IoU > iou_threshold. At most
// `max_detections` are kept, in visiting order.
std::vector<Detection> non_max_suppression(std::vector<Detection> candidates, NmsMode mode, double iou_threshold,
                                           int64_t max_detections);

struct DetectionComparison {
  int64_t reference_count = 0;
  int64_t target_count = 0;
  int64_t matched = 0;
  double matched_fraction = 1.0;  // matched / max(reference_count, target_count); 1 when both are empty
  double mean_iou = 1.0;          // over matches; 1 when nothing was matched and both are empty
  double max_score_delta = 0.0;   // over matches
  double map50 = 1.0;             // target's mAP@0.5 with the reference as ground truth
};

// Class-aware greedy matching: target detections by score (stable order), each to
// the unmatched reference detection of its class with the highest IoU >= match_iou.
DetectionComparison compare_detections(const std::vector<Detection>& reference, const std::vector<Detection>& target,
                                       double match_iou);

// Mean over the reference's classes of the all-point interpolated average precision of
// `target` at IoU 0.5 (VOC 2010+ / COCO style), `reference` as ground truth. 1 when
// both are empty, 0 when only one side is.
double mean_average_precision50(const std::vector<Detection>& reference, const std::vector<Detection>& target);

}  // namespace driftgate

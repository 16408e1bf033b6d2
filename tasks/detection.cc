#include "tasks/detection.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace driftgate {
namespace {

// torchvision's BoxCoder clamps dw/dh to log(1000/16) so exp() cannot overflow.
const double k_max_log_scale = std::log(1000.0 / 16.0);

bool score_first(const Detection& a, const Detection& b) { return a.score > b.score; }

bool stable_key_less(const Detection& a, const Detection& b) {
  return std::make_tuple(-a.score, a.x1, a.y1, a.x2, a.y2, a.label) <
         std::make_tuple(-b.score, b.x1, b.y1, b.x2, b.y2, b.label);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

double box_iou(const Detection& a, const Detection& b) {
  const double area_a = std::max(0.0F, a.x2 - a.x1) * static_cast<double>(std::max(0.0F, a.y2 - a.y1));
  const double area_b = std::max(0.0F, b.x2 - b.x1) * static_cast<double>(std::max(0.0F, b.y2 - b.y1));
  const double w = std::max(0.0, static_cast<double>(std::min(a.x2, b.x2)) - std::max(a.x1, b.x1));
  const double h = std::max(0.0, static_cast<double>(std::min(a.y2, b.y2)) - std::max(a.y1, b.y1));
  const double intersection = w * h;
  const double union_area = area_a + area_b - intersection;
  return union_area > 0.0 ? intersection / union_area : 0.0;
}

std::vector<Detection> decode_anchors(const float* deltas, const float* logits, const float* anchors, int64_t n,
                                      int64_t classes, const DecodeOptions& options) {
  std::vector<Detection> candidates;
  std::vector<double> scores(static_cast<size_t>(classes));
  for (int64_t i = 0; i < n; ++i) {
    const float* a = anchors + i * 4;
    const float* d = deltas + i * 4;
    const double width = a[2] - a[0];
    const double height = a[3] - a[1];
    const double cx = a[0] + 0.5 * width + d[0] / options.weights[0] * width;
    const double cy = a[1] + 0.5 * height + d[1] / options.weights[1] * height;
    const double w = std::exp(std::min(d[2] / options.weights[2], k_max_log_scale)) * width;
    const double h = std::exp(std::min(d[3] / options.weights[3], k_max_log_scale)) * height;
    const float* row = logits + i * classes;
    double max_logit = row[0];
    for (int64_t c = 1; c < classes; ++c) {
      max_logit = std::max<double>(max_logit, row[c]);
    }
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
      sum += std::exp(row[c] - max_logit);
    }
    for (int64_t c = 0; c < classes; ++c) {
      switch (options.activation) {
        case ScoreActivation::k_none:
          scores[static_cast<size_t>(c)] = row[c];
          break;
        case ScoreActivation::k_sigmoid:
          scores[static_cast<size_t>(c)] = sigmoid(row[c]);
          break;
        case ScoreActivation::k_softmax:
          scores[static_cast<size_t>(c)] = std::exp(row[c] - max_logit) / sum;
          break;
      }
    }
    for (int64_t c = 0; c < classes; ++c) {
      const double score = scores[static_cast<size_t>(c)];
      if (c == options.background_class || !(score > options.score_threshold)) {
        continue;
      }
      candidates.push_back({static_cast<float>(cx - 0.5 * w), static_cast<float>(cy - 0.5 * h),
                            static_cast<float>(cx + 0.5 * w), static_cast<float>(cy + 0.5 * h),
                            static_cast<float>(score), c});
    }
  }
  return candidates;
}

std::vector<Detection> detections_from_boxes(const float* boxes, const float* scores, const int64_t* labels, int64_t n,
                                             double score_threshold) {
  std::vector<Detection> candidates;
  for (int64_t i = 0; i < n; ++i) {
    if (!(scores[i] > score_threshold)) {
      continue;
    }
    const float* b = boxes + i * 4;
    candidates.push_back({b[0], b[1], b[2], b[3], scores[i], labels ? labels[i] : 0});
  }
  return candidates;
}

void order_candidates(std::vector<Detection>& candidates, NmsMode mode) {
  if (mode == NmsMode::k_stable) {
    std::stable_sort(candidates.begin(), candidates.end(), stable_key_less);
  } else {
    std::stable_sort(candidates.begin(), candidates.end(), score_first);
  }
}

std::vector<Detection> non_max_suppression(std::vector<Detection> candidates, NmsMode mode, double iou_threshold,
                                           int64_t max_detections) {
  order_candidates(candidates, mode);
  std::vector<Detection> kept;
  for (const Detection& candidate : candidates) {
    if (static_cast<int64_t>(kept.size()) >= max_detections) {
      break;
    }
    bool suppressed = false;
    for (const Detection& other : kept) {
      if (other.label == candidate.label && box_iou(other, candidate) > iou_threshold) {
        suppressed = true;
        break;
      }
    }
    if (!suppressed) {
      kept.push_back(candidate);
    }
  }
  return kept;
}

DetectionComparison compare_detections(const std::vector<Detection>& reference, const std::vector<Detection>& target,
                                       double match_iou) {
  DetectionComparison result;
  result.reference_count = static_cast<int64_t>(reference.size());
  result.target_count = static_cast<int64_t>(target.size());
  std::vector<Detection> ordered = target;
  order_candidates(ordered, NmsMode::k_stable);
  std::vector<bool> taken(reference.size(), false);
  double iou_sum = 0.0;
  for (const Detection& detection : ordered) {
    int64_t best = -1;
    double best_iou = match_iou;
    for (size_t r = 0; r < reference.size(); ++r) {
      const double iou = box_iou(reference[r], detection);
      if (!taken[r] && reference[r].label == detection.label && iou >= best_iou) {
        if (best < 0 || iou > best_iou) {
          best = static_cast<int64_t>(r);
          best_iou = iou;
        }
      }
    }
    if (best >= 0) {
      taken[static_cast<size_t>(best)] = true;
      ++result.matched;
      iou_sum += best_iou;
      result.max_score_delta =
          std::max(result.max_score_delta,
                   std::fabs(static_cast<double>(reference[static_cast<size_t>(best)].score) - detection.score));
    }
  }
  const int64_t larger = std::max(result.reference_count, result.target_count);
  result.matched_fraction = larger == 0 ? 1.0 : static_cast<double>(result.matched) / static_cast<double>(larger);
  result.mean_iou = result.matched > 0 ? iou_sum / static_cast<double>(result.matched) : (larger == 0 ? 1.0 : 0.0);
  result.map50 = mean_average_precision50(reference, target);
  return result;
}

double mean_average_precision50(const std::vector<Detection>& reference, const std::vector<Detection>& target) {
  if (reference.empty()) {
    return target.empty() ? 1.0 : 0.0;
  }
  std::set<int64_t> classes;
  for (const Detection& detection : reference) {
    classes.insert(detection.label);
  }
  double sum = 0.0;
  for (int64_t label : classes) {
    std::vector<Detection> truth;
    std::vector<Detection> predictions;
    for (const Detection& d : reference) {
      if (d.label == label) {
        truth.push_back(d);
      }
    }
    for (const Detection& d : target) {
      if (d.label == label) {
        predictions.push_back(d);
      }
    }
    order_candidates(predictions, NmsMode::k_stable);
    std::vector<bool> used(truth.size(), false);
    std::vector<double> precision;
    std::vector<double> recall;
    int64_t true_positives = 0;
    for (size_t p = 0; p < predictions.size(); ++p) {
      int64_t best = -1;
      double best_iou = 0.5;
      for (size_t t = 0; t < truth.size(); ++t) {
        const double iou = box_iou(truth[t], predictions[p]);
        if (!used[t] && iou >= best_iou) {
          best = static_cast<int64_t>(t);
          best_iou = iou;
        }
      }
      if (best >= 0) {
        used[static_cast<size_t>(best)] = true;
        ++true_positives;
      }
      precision.push_back(static_cast<double>(true_positives) / static_cast<double>(p + 1));
      recall.push_back(static_cast<double>(true_positives) / static_cast<double>(truth.size()));
    }
    // All-point interpolation: precision made monotone from the right, summed over recall steps.
    for (size_t i = precision.size(); i-- > 1;) {
      precision[i - 1] = std::max(precision[i - 1], precision[i]);
    }
    double ap = 0.0;
    double previous_recall = 0.0;
    for (size_t i = 0; i < precision.size(); ++i) {
      ap += (recall[i] - previous_recall) * precision[i];
      previous_recall = recall[i];
    }
    sum += ap;
  }
  return sum / static_cast<double>(classes.size());
}

}  // namespace driftgate

#include "tasks/segmentation.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace driftgate {
namespace {

// Argmax over the class axis of one pixel (stride `pixels`); the lowest class on ties.
int64_t pixel_argmax(const float* base, int64_t classes, int64_t pixels) {
  int64_t best = 0;
  for (int64_t c = 1; c < classes; ++c) {
    const float value = base[c * pixels];
    if (value > base[best * pixels] || (std::isnan(base[best * pixels]) && !std::isnan(value))) {
      best = c;
    }
  }
  return best;
}

}  // namespace

SegmentationResult compare_segmentation(const float* reference, const float* target, int64_t batch, int64_t classes,
                                        int64_t pixels, double epsilon) {
  if (batch < 1 || classes < 1 || pixels < 1) {
    throw Error("segmentation needs logits of shape [N, C, H, W] with every size at least 1 (got N " +
                std::to_string(batch) + ", C " + std::to_string(classes) + ", H*W " + std::to_string(pixels) + ")");
  }
  SegmentationResult result;
  result.pixels = batch * pixels;
  std::vector<int64_t> intersection(static_cast<size_t>(classes), 0);
  std::vector<int64_t> union_count(static_cast<size_t>(classes), 0);
  for (int64_t n = 0; n < batch; ++n) {
    const float* ref = reference + n * classes * pixels;
    const float* tgt = target + n * classes * pixels;
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t a = pixel_argmax(ref + p, classes, pixels);
      const int64_t b = pixel_argmax(tgt + p, classes, pixels);
      if (a == b) {
        ++result.agree;
        ++intersection[static_cast<size_t>(a)];
        ++union_count[static_cast<size_t>(a)];
        continue;
      }
      ++union_count[static_cast<size_t>(a)];
      ++union_count[static_cast<size_t>(b)];
      const double margin = static_cast<double>(ref[p + a * pixels]) - ref[p + b * pixels];
      result.max_flip_margin = std::max(result.max_flip_margin, margin);
      if (margin > epsilon) {
        ++result.confident_flips;
      } else {
        ++result.tie_flips;
      }
    }
  }
  result.pixel_agreement = static_cast<double>(result.agree) / static_cast<double>(result.pixels);
  double iou_sum = 0.0;
  int64_t present = 0;
  for (size_t c = 0; c < intersection.size(); ++c) {
    if (union_count[c] > 0) {
      iou_sum += static_cast<double>(intersection[c]) / static_cast<double>(union_count[c]);
      ++present;
    }
  }
  result.miou = present > 0 ? iou_sum / static_cast<double>(present) : 1.0;
  return result;
}

}  // namespace driftgate

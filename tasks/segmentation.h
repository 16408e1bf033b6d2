// Tier 3 segmentation adapter: does the mask change?
//
// Compares the per-pixel argmax of two logit tensors [N, C, H, W]: pixel agreement,
// the mean IoU of the two masks over classes present in either, and flipped pixels
// split by the reference's margin between its class and the target's: within
// epsilon a flip is a tie, beyond it a confident flip. Plain float buffers.
#pragma once

#include <cstdint>

namespace driftgate {

struct SegmentationResult {
  int64_t pixels = 0;  // N * H * W
  int64_t agree = 0;
  double pixel_agreement = 1.0;
  double miou = 1.0;             // over classes present in either mask
  int64_t tie_flips = 0;         // flipped pixels with reference margin <= epsilon
  int64_t confident_flips = 0;   // flipped pixels with reference margin > epsilon
  double max_flip_margin = 0.0;  // largest reference margin among flipped pixels
};

// `reference` and `target` hold batch * classes * pixels floats (NCHW, pixels = H*W).
// Throws driftgate::Error when a size is below 1.
SegmentationResult compare_segmentation(const float* reference, const float* target, int64_t batch, int64_t classes,
                                        int64_t pixels, double epsilon);

}  // namespace driftgate

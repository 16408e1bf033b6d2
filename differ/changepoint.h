// Step changes in a noisy series: where did the level move, and by how much?
//
// The trend report runs this on log10(max_abs) of each check over commits, so a
// kernel library upgrade or a code change that moves a check's error by a decade
// shows up as one step at one commit, while run-to-run jitter does not. The method
// is binary segmentation (a mean-shift model, least squares cost) with a penalty
// scaled by a robust noise estimate, followed by a merge of neighbouring segments
// whose medians differ by less than `min_effect`: a step must be both statistically
// clear and large enough to matter.
#pragma once

#include <cstddef>
#include <vector>

namespace driftgate {

struct ChangePointOptions {
  double min_effect = 0.5;      // smallest level change reported, in the series' units (decades for log10)
  size_t min_segment = 3;       // fewest points on each side of a change; 3 keeps one outlier from being a step
  double penalty_factor = 3.0;  // penalty = factor * noise variance * ln(n)
};

// A change between values[index - 1] and values[index].
struct ChangePoint {
  size_t index = 0;           // first point of the new level
  double before_level = 0.0;  // median of the segment ending at index - 1
  double after_level = 0.0;   // median of the segment starting at index
};

// The change points of `values` (finite numbers), in increasing index order.
std::vector<ChangePoint> find_change_points(const std::vector<double>& values, const ChangePointOptions& options);

// The noise scale of `values`: the median absolute first difference, scaled so that
// it estimates the standard deviation of Gaussian noise; unaffected by a few steps.
double robust_noise_scale(const std::vector<double>& values);

}  // namespace driftgate

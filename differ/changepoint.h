// Step changes in a noisy series: where did the level move, and by how much?
//
// The trend report runs this on log10(max_abs) of each check over commits, so a
// kernel library upgrade or a code change that moves a check's error by a decade
// shows up as one step at one commit, while run-to-run jitter does not. The method:
// 1) the exact least-squares segmentation under a penalty per change (optimal
//    partitioning with PELT pruning: a mean-shift model, every split position allowed,
//    so a step is placed at its own commit, the newest one included), the penalty
//    scaled by a robust noise estimate;
// 2) outliers: a segment shorter than `min_segment` between two others is one outlier
//    (its neighbours at the same level: both of its changes go) or an overshoot (the
//    neighbours differ: the change into it stays, the one out of it goes); a short
//    segment between a lower and a higher one is a staircase, and both steps stay.
//    A short segment at either end is a step: the newest commits are the ones a gate
//    needs named, and there is nothing after them to call them an outlier;
// 3) neighbouring segments whose medians differ by less than `min_effect` merge: a
//    step must be both statistically clear and large enough to matter.
#pragma once

#include <cstddef>
#include <vector>

namespace driftgate {

struct ChangePointOptions {
  double min_effect = 0.5;      // smallest level change reported, in the series' units (decades for log10)
  size_t min_segment = 3;       // an interior segment shorter than this is an outlier or a transient (see above)
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

// The change indices (first points of new levels) of the segmentation of `values` that
// minimizes the sum of squared deviations from each segment's mean plus `penalty` per
// change, over every segmentation (segments of one point allowed). Exact; step 1 above.
std::vector<size_t> optimal_boundaries(const std::vector<double>& values, double penalty);

// The noise scale of `values`: the (lower) median absolute first difference, scaled so that
// it estimates the standard deviation of Gaussian noise; unaffected by a few steps.
double robust_noise_scale(const std::vector<double>& values);

}  // namespace driftgate

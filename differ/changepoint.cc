#include "differ/changepoint.h"

#include <algorithm>
#include <cmath>

namespace driftgate {

namespace {

// Prefix sums of x and x^2, so any segment's mean and squared error are O(1).
class SegmentCost {
 public:
  explicit SegmentCost(const std::vector<double>& values) : m_sum(values.size() + 1), m_squares(values.size() + 1) {
    for (size_t i = 0; i < values.size(); ++i) {
      m_sum[i + 1] = m_sum[i] + values[i];
      m_squares[i + 1] = m_squares[i] + values[i] * values[i];
    }
  }

  // Sum of squared deviations from the mean over values[begin, end).
  double cost(size_t begin, size_t end) const {
    double n = static_cast<double>(end - begin);
    double sum = m_sum[end] - m_sum[begin];
    return std::max(0.0, (m_squares[end] - m_squares[begin]) - sum * sum / n);
  }

 private:
  std::vector<double> m_sum;
  std::vector<double> m_squares;
};

double median(const std::vector<double>& values, size_t begin, size_t end) {
  std::vector<double> part(values.begin() + static_cast<std::ptrdiff_t>(begin),
                           values.begin() + static_cast<std::ptrdiff_t>(end));
  auto middle = part.begin() + static_cast<std::ptrdiff_t>(part.size() / 2);
  std::nth_element(part.begin(), middle, part.end());
  if (part.size() % 2 == 1) {
    return *middle;
  }
  return (*middle + *std::max_element(part.begin(), middle)) / 2.0;
}

// Removes, smallest first, every boundary whose neighbouring segment medians differ by
// less than `min_effect`. Medians, so that one outlier inside a short segment cannot
// make it look like a level of its own.
void merge_small_steps(const std::vector<double>& values, double min_effect, std::vector<size_t>& boundaries) {
  while (!boundaries.empty()) {
    double smallest = INFINITY;
    size_t smallest_at = 0;
    for (size_t i = 0; i < boundaries.size(); ++i) {
      size_t begin = i == 0 ? 0 : boundaries[i - 1];
      size_t end = i + 1 == boundaries.size() ? values.size() : boundaries[i + 1];
      double effect = std::fabs(median(values, boundaries[i], end) - median(values, begin, boundaries[i]));
      if (effect < smallest) {
        smallest = effect;
        smallest_at = i;
      }
    }
    if (smallest >= min_effect) {
      return;
    }
    boundaries.erase(boundaries.begin() + static_cast<std::ptrdiff_t>(smallest_at));
  }
}

double segment_median(const std::vector<double>& values, const std::vector<size_t>& boundaries, size_t i) {
  size_t begin = i == 0 ? 0 : boundaries[i - 1];
  size_t end = i == boundaries.size() ? values.size() : boundaries[i];
  return median(values, begin, end);
}

// Step 2: short interior segments (fewer than min_segment points) are outliers or overshoots,
// unless they lie between their neighbours (a staircase of two real steps).
void remove_outliers(const std::vector<double>& values, size_t min_segment, double min_effect,
                     std::vector<size_t>& boundaries) {
  bool changed = true;
  while (changed) {
    changed = false;
    // Segment i spans [boundaries[i - 1], boundaries[i]); interior ones have 1 <= i < size.
    for (size_t i = 1; i < boundaries.size(); ++i) {
      if (boundaries[i] - boundaries[i - 1] >= min_segment) {
        continue;
      }
      double before = segment_median(values, boundaries, i - 1);
      double level = segment_median(values, boundaries, i);
      double after = segment_median(values, boundaries, i + 1);
      if ((before <= level && level <= after) || (before >= level && level >= after)) {
        continue;  // a staircase
      }
      if (std::fabs(after - before) < min_effect) {
        boundaries.erase(boundaries.begin() + static_cast<std::ptrdiff_t>(i - 1),
                         boundaries.begin() + static_cast<std::ptrdiff_t>(i + 1));  // one outlier
      } else {
        boundaries.erase(boundaries.begin() + static_cast<std::ptrdiff_t>(i));  // an overshoot
      }
      changed = true;
      break;
    }
  }
}

}  // namespace

std::vector<size_t> optimal_boundaries(const std::vector<double>& values, double penalty) {
  const size_t n = values.size();
  if (n < 2) {
    return {};
  }
  SegmentCost cost(values);
  // best[t]: the least penalized cost of values[0, t); last[t]: where its last segment begins.
  std::vector<double> best(n + 1, 0.0);
  std::vector<size_t> last(n + 1, 0);
  best[0] = -penalty;  // the first segment pays no change penalty
  std::vector<size_t> candidates = {0};
  // A floating-point margin: the prefix-sum costs carry rounding of the order of the sums.
  const double slack = 1e-9 * (1.0 + cost.cost(0, n));
  for (size_t t = 1; t <= n; ++t) {
    double best_here = INFINITY;
    size_t best_start = 0;
    for (size_t start : candidates) {
      double total = best[start] + cost.cost(start, t) + penalty;
      if (total < best_here - slack) {
        best_here = total;
        best_start = start;
      }
    }
    best[t] = best_here;
    last[t] = best_start;
    // PELT: a start that cannot beat the best even now never will (the cost is superadditive).
    std::vector<size_t> kept;
    for (size_t start : candidates) {
      if (best[start] + cost.cost(start, t) <= best[t] + slack) {
        kept.push_back(start);
      }
    }
    kept.push_back(t);
    candidates = std::move(kept);
  }
  std::vector<size_t> boundaries;
  for (size_t t = n; last[t] > 0; t = last[t]) {
    boundaries.push_back(last[t]);
  }
  std::reverse(boundaries.begin(), boundaries.end());
  return boundaries;
}

double robust_noise_scale(const std::vector<double>& values) {
  if (values.size() < 3) {
    return 0.0;
  }
  std::vector<double> differences;
  differences.reserve(values.size() - 1);
  for (size_t i = 1; i < values.size(); ++i) {
    differences.push_back(std::fabs(values[i] - values[i - 1]));
  }
  // The lower median: with an even count the upper one would be a step as soon as half the
  // differences are steps (3 points, one step: the differences are {step, 0}).
  auto middle = differences.begin() + static_cast<std::ptrdiff_t>((differences.size() - 1) / 2);
  std::nth_element(differences.begin(), middle, differences.end());
  // For Gaussian noise of deviation s, |x[i] - x[i-1]| has median 0.6745 * sqrt(2) * s.
  return *middle / (0.6745 * std::sqrt(2.0));
}

std::vector<ChangePoint> find_change_points(const std::vector<double>& values, const ChangePointOptions& options) {
  std::vector<ChangePoint> changes;
  size_t min_segment = std::max<size_t>(1, options.min_segment);
  if (values.size() < 2) {
    return changes;
  }
  // Noise below a quarter of the smallest reportable effect is treated as that large, so
  // a nearly constant series does not split on rounding and then merge it away again.
  double noise = std::max(robust_noise_scale(values), options.min_effect / 4.0);
  double penalty = options.penalty_factor * noise * noise * std::log(static_cast<double>(values.size()));
  std::vector<size_t> boundaries = optimal_boundaries(values, penalty);
  remove_outliers(values, min_segment, options.min_effect, boundaries);
  merge_small_steps(values, options.min_effect, boundaries);
  for (size_t i = 0; i < boundaries.size(); ++i) {
    size_t begin = i == 0 ? 0 : boundaries[i - 1];
    size_t end = i + 1 == boundaries.size() ? values.size() : boundaries[i + 1];
    changes.push_back({boundaries[i], median(values, begin, boundaries[i]), median(values, boundaries[i], end)});
  }
  return changes;
}

}  // namespace driftgate

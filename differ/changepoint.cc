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

  // Mean of values[begin, end).
  double mean(size_t begin, size_t end) const { return (m_sum[end] - m_sum[begin]) / static_cast<double>(end - begin); }

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

// Splits [begin, end) recursively while the best split lowers the cost by more than `penalty`.
void segment(const SegmentCost& cost, size_t begin, size_t end, size_t min_segment, double penalty,
             std::vector<size_t>& boundaries) {
  if (end - begin < 2 * min_segment) {
    return;
  }
  double whole = cost.cost(begin, end);
  double best_gain = 0.0;
  size_t best = 0;
  for (size_t split = begin + min_segment; split + min_segment <= end; ++split) {
    double gain = whole - cost.cost(begin, split) - cost.cost(split, end);
    if (gain > best_gain) {
      best_gain = gain;
      best = split;
    }
  }
  // The relative epsilon keeps floating-point residue on a constant series from splitting it.
  if (best == 0 || best_gain <= penalty || best_gain <= 1e-12 * (1.0 + whole)) {
    return;
  }
  segment(cost, begin, best, min_segment, penalty, boundaries);
  boundaries.push_back(best);
  segment(cost, best, end, min_segment, penalty, boundaries);
}

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

}  // namespace

double robust_noise_scale(const std::vector<double>& values) {
  if (values.size() < 3) {
    return 0.0;
  }
  std::vector<double> differences;
  differences.reserve(values.size() - 1);
  for (size_t i = 1; i < values.size(); ++i) {
    differences.push_back(std::fabs(values[i] - values[i - 1]));
  }
  auto middle = differences.begin() + static_cast<std::ptrdiff_t>(differences.size() / 2);
  std::nth_element(differences.begin(), middle, differences.end());
  // For Gaussian noise of deviation s, |x[i] - x[i-1]| has median 0.6745 * sqrt(2) * s.
  return *middle / (0.6745 * std::sqrt(2.0));
}

std::vector<ChangePoint> find_change_points(const std::vector<double>& values, const ChangePointOptions& options) {
  std::vector<ChangePoint> changes;
  size_t min_segment = std::max<size_t>(1, options.min_segment);
  if (values.size() < 2 * min_segment) {
    return changes;
  }
  SegmentCost cost(values);
  // Noise below a quarter of the smallest reportable effect is treated as that large, so
  // a nearly constant series does not split on rounding and then merge it away again.
  double noise = std::max(robust_noise_scale(values), options.min_effect / 4.0);
  double penalty = options.penalty_factor * noise * noise * std::log(static_cast<double>(values.size()));
  std::vector<size_t> boundaries;
  segment(cost, 0, values.size(), min_segment, penalty, boundaries);
  merge_small_steps(values, options.min_effect, boundaries);
  for (size_t i = 0; i < boundaries.size(); ++i) {
    size_t begin = i == 0 ? 0 : boundaries[i - 1];
    size_t end = i + 1 == boundaries.size() ? values.size() : boundaries[i + 1];
    changes.push_back({boundaries[i], median(values, begin, boundaries[i]), median(values, boundaries[i], end)});
  }
  return changes;
}

}  // namespace driftgate

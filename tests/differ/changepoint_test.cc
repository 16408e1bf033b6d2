// Step detection on log10(max_abs) series: a clean step is found at its index, noise
// and steps smaller than min_effect are not, and transient bumps give two steps; checked
// against an enumeration of every segmentation and against random step histories.
#include "differ/changepoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace driftgate {
namespace {

std::vector<double> noisy(size_t size, double level, double amplitude, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> noise(-amplitude, amplitude);
  std::vector<double> values;
  for (size_t i = 0; i < size; ++i) {
    values.push_back(level + noise(random));
  }
  return values;
}

TEST(ChangePointTest, ConstantSeriesHasNoStep) {
  EXPECT_TRUE(find_change_points(std::vector<double>(40, -6.0), ChangePointOptions{}).empty());
}

TEST(ChangePointTest, CleanStepIsFoundAtItsFirstNewPoint) {
  std::vector<double> values(30, -7.0);
  for (size_t i = 22; i < values.size(); ++i) {
    values[i] = -4.0;
  }
  std::vector<ChangePoint> changes = find_change_points(values, ChangePointOptions{});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 22u);
  EXPECT_DOUBLE_EQ(changes[0].before_level, -7.0);
  EXPECT_DOUBLE_EQ(changes[0].after_level, -4.0);
}

TEST(ChangePointTest, NoisyStepIsFoundAtItsFirstNewPoint) {
  std::vector<double> values = noisy(200, -6.0, 0.2, 1);
  for (size_t i = 120; i < values.size(); ++i) {
    values[i] += 1.0;
  }
  std::vector<ChangePoint> changes = find_change_points(values, ChangePointOptions{});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 120u);
  EXPECT_NEAR(changes[0].after_level - changes[0].before_level, 1.0, 0.1);
}

TEST(ChangePointTest, NoiseAloneNeverFires) {
  for (unsigned seed = 0; seed < 50; ++seed) {
    EXPECT_TRUE(find_change_points(noisy(100, -6.0, 0.25, seed), ChangePointOptions{}).empty()) << "seed " << seed;
  }
}

TEST(ChangePointTest, StepBelowTheMinimumEffectIsIgnored) {
  std::vector<double> values(40, -6.0);
  for (size_t i = 20; i < values.size(); ++i) {
    values[i] = -5.7;  // 0.3 decades, a factor of 2
  }
  EXPECT_TRUE(find_change_points(values, ChangePointOptions{}).empty());
  ChangePointOptions sensitive;
  sensitive.min_effect = 0.2;
  ASSERT_EQ(find_change_points(values, sensitive).size(), 1u);
}

TEST(ChangePointTest, TransientBumpGivesTwoSteps) {
  std::vector<double> values(30, -7.0);
  for (size_t i = 10; i < 15; ++i) {
    values[i] = -5.0;
  }
  std::vector<ChangePoint> changes = find_change_points(values, ChangePointOptions{});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].index, 10u);
  EXPECT_EQ(changes[1].index, 15u);
  EXPECT_GT(changes[0].after_level, changes[0].before_level);
  EXPECT_LT(changes[1].after_level, changes[1].before_level);
}

TEST(ChangePointTest, MinSegmentKeepsInteriorOutliersFromBeingSteps) {
  std::vector<double> values(20, -7.0);
  values[10] = -3.0;  // one outlier
  EXPECT_TRUE(find_change_points(values, ChangePointOptions{}).empty());
  values[11] = -3.0;  // two, still shorter than min_segment
  EXPECT_TRUE(find_change_points(values, ChangePointOptions{}).empty());
  values[12] = -3.0;  // three: a transient, two steps
  EXPECT_EQ(find_change_points(values, ChangePointOptions{}).size(), 2u);
}

// A step at the newest commit (or the oldest) has nothing after it to make it an outlier: it is
// named at its own commit, never moved inwards to leave min_segment points after it.
TEST(ChangePointTest, AStepAtEitherEndIsFoundAtItsOwnIndex) {
  for (size_t size : {2u, 3u, 10u, 40u}) {
    for (size_t at : {size_t{1}, size - 1}) {
      std::vector<double> values(size, -7.0);
      for (size_t i = at; i < size; ++i) {
        values[i] = -5.0;
      }
      std::vector<ChangePoint> changes = find_change_points(values, ChangePointOptions{});
      ASSERT_EQ(changes.size(), 1u) << size << " " << at;
      EXPECT_EQ(changes[0].index, at) << size;
    }
  }
}

// An overshoot (a short transient on the way to the new level) is one step, where it began;
// a short stair between a lower and a higher level is two.
TEST(ChangePointTest, ShortInteriorSegmentsAreOvershootsOrStairs) {
  std::vector<double> overshoot = {-7, -7, -7, -7, -7, -2, -5, -5, -5, -5, -5};
  std::vector<ChangePoint> changes = find_change_points(overshoot, ChangePointOptions{});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 5u);
  std::vector<double> stairs = {-7, -7, -7, -7, -7, -5, -3, -3, -3, -3, -3};
  changes = find_change_points(stairs, ChangePointOptions{});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].index, 5u);
  EXPECT_EQ(changes[1].index, 6u);
}

// The reference for step 1: every segmentation of a short series, enumerated.
std::vector<size_t> brute_force_boundaries(const std::vector<double>& values, double penalty) {
  const size_t n = values.size();
  double best = INFINITY;
  std::vector<size_t> best_boundaries;
  for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
    std::vector<size_t> boundaries;
    for (size_t i = 1; i < n; ++i) {
      if ((mask >> (i - 1)) & 1u) {
        boundaries.push_back(i);
      }
    }
    double total = penalty * static_cast<double>(boundaries.size());
    size_t begin = 0;
    for (size_t b = 0; b <= boundaries.size(); ++b) {
      size_t end = b == boundaries.size() ? n : boundaries[b];
      double mean = 0.0;
      for (size_t i = begin; i < end; ++i) {
        mean += values[i];
      }
      mean /= static_cast<double>(end - begin);
      for (size_t i = begin; i < end; ++i) {
        total += (values[i] - mean) * (values[i] - mean);
      }
      begin = end;
    }
    if (total < best - 1e-9) {
      best = total;
      best_boundaries = boundaries;
    }
  }
  return best_boundaries;
}

TEST(ChangePointTest, OptimalBoundariesMatchEveryEnumeratedSegmentation) {
  std::mt19937 random(7);
  std::normal_distribution<double> noise(0.0, 0.3);
  std::uniform_int_distribution<int> level(-8, -2);
  std::uniform_real_distribution<double> penalty(0.05, 3.0);
  for (int trial = 0; trial < 400; ++trial) {
    size_t n = 2 + static_cast<size_t>(trial % 11);
    std::vector<double> values;
    double current = level(random);
    for (size_t i = 0; i < n; ++i) {
      if (random() % 4 == 0) {
        current = level(random);
      }
      values.push_back(current + noise(random));
    }
    double p = penalty(random);
    EXPECT_EQ(optimal_boundaries(values, p), brute_force_boundaries(values, p)) << "trial " << trial;
  }
}

// The trend's contract: on a step history, the reported change indices are exactly the
// culprits (the first point of each new level), at every position, for several steps, under noise.
TEST(ChangePointTest, RandomStepHistoriesNameExactlyTheCulprits) {
  std::mt19937 random(11);
  std::normal_distribution<double> noise(0.0, 0.05);
  std::uniform_real_distribution<double> size_of_step(1.0, 3.0);
  std::uniform_int_distribution<int> base(-9, -3);
  const size_t min_segment = ChangePointOptions{}.min_segment;
  int histories = 0;
  for (size_t n = 2; n <= 24; ++n) {
    // Every single step position.
    for (size_t at = 1; at < n; ++at) {
      for (int repeat = 0; repeat < 3; ++repeat) {
        double jump = size_of_step(random) * (random() % 2 == 0 ? 1.0 : -1.0);
        std::vector<double> values;
        double start = base(random);
        for (size_t i = 0; i < n; ++i) {
          values.push_back(start + (i >= at ? jump : 0.0) + (repeat == 0 ? 0.0 : noise(random)));
        }
        std::vector<ChangePoint> changes = find_change_points(values, ChangePointOptions{});
        ASSERT_EQ(changes.size(), 1u) << "n " << n << " step at " << at << " repeat " << repeat;
        EXPECT_EQ(changes[0].index, at) << "n " << n << " repeat " << repeat;
        ++histories;
      }
    }
    // Several steps, random positions; interior levels last at least min_segment points.
    for (int repeat = 0; repeat < 20; ++repeat) {
      std::vector<size_t> culprits;
      for (size_t i = 1; i < n; ++i) {
        size_t previous = culprits.empty() ? 0 : culprits.back();
        bool room = culprits.empty() || i - previous >= min_segment;
        if (room && random() % 3 == 0) {
          culprits.push_back(i);
        }
      }
      // The last level is the newest commits: any length. The ones between need min_segment.
      std::vector<double> values;
      double current = base(random);
      size_t next = 0;
      for (size_t i = 0; i < n; ++i) {
        if (next < culprits.size() && culprits[next] == i) {
          current += size_of_step(random) * (random() % 2 == 0 ? 1.0 : -1.0);
          ++next;
        }
        values.push_back(current + noise(random));
      }
      std::vector<size_t> found;
      for (const auto& change : find_change_points(values, ChangePointOptions{})) {
        found.push_back(change.index);
      }
      EXPECT_EQ(found, culprits) << "n " << n << " repeat " << repeat;
      ++histories;
    }
  }
  EXPECT_GT(histories, 1000);
}

TEST(ChangePointTest, RobustNoiseScaleIgnoresOneStep) {
  std::vector<double> values(50, 0.0);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = (i % 2 == 0 ? 0.1 : -0.1) + (i >= 25 ? 5.0 : 0.0);
  }
  // |differences| are 0.2 except one; s = 0.2 / (0.6745 * sqrt(2)).
  EXPECT_NEAR(robust_noise_scale(values), 0.2 / (0.6745 * 1.41421356), 1e-6);
}

}  // namespace
}  // namespace driftgate

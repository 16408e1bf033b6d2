// Step detection on log10(max_abs) series: a clean step is found at its index, noise
// and steps smaller than min_effect are not, and transient bumps give two steps.
#include "differ/changepoint.h"

#include <gtest/gtest.h>

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

TEST(ChangePointTest, MinSegmentKeepsSinglePointsFromBeingSteps) {
  std::vector<double> values(20, -7.0);
  values[10] = -3.0;  // one outlier
  EXPECT_TRUE(find_change_points(values, ChangePointOptions{}).empty());
  std::vector<double> short_series = {-7.0, -3.0, -3.0};
  EXPECT_TRUE(find_change_points(short_series, ChangePointOptions{}).empty());
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

#include "runner/tier1.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace driftgate {
namespace {

const double k_nan = std::numeric_limits<double>::quiet_NaN();
const double k_inf = std::numeric_limits<double>::infinity();

at::Tensor values(std::vector<double> data) { return at::tensor(data, at::kDouble); }

CompareOptions with_tolerance(double atol, double rtol) {
  CompareOptions options;
  options.tolerance = Tolerance{atol, rtol};
  return options;
}

LeafComparison compare_one(const at::Tensor& reference, const at::Tensor& target, const CompareOptions& options) {
  std::vector<LeafComparison> results = compare_outputs(reference, target, options);
  EXPECT_EQ(results.size(), 1u);
  return results.front();
}

TEST(Tier1Stats, CountsMismatchesAndLocatesMaxAbs) {
  Tier1Stats stats = compute_tier1_stats(values({0, 1, 2, 3}), values({0, 1.5, 2, 2.9}), Tolerance{0.2, 0.0});
  EXPECT_EQ(stats.numel, 4);
  EXPECT_EQ(stats.mismatches, 1);
  EXPECT_DOUBLE_EQ(stats.mismatch_fraction, 0.25);
  EXPECT_DOUBLE_EQ(stats.max_abs, 0.5);
  EXPECT_EQ(stats.max_abs_index, std::vector<int64_t>{1});
  EXPECT_DOUBLE_EQ(stats.max_abs_reference, 1.0);
  EXPECT_DOUBLE_EQ(stats.max_abs_target, 1.5);
  EXPECT_DOUBLE_EQ(stats.max_abs_reference_value, 3.0);
  EXPECT_DOUBLE_EQ(stats.min_atol, 0.5);
}

TEST(Tier1Stats, MultiDimensionalIndexIntoReferenceShape) {
  at::Tensor reference = at::zeros({2, 3}, at::kFloat);
  at::Tensor target = reference.clone();
  target[1][2] = 0.75;
  target[0][1] = -0.25;
  Tier1Stats stats = compute_tier1_stats(reference, target, Tolerance{0.1, 0.0});
  EXPECT_EQ(stats.mismatches, 2);
  EXPECT_EQ(stats.max_abs_index, (std::vector<int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(stats.max_abs_target, 0.75);
}

TEST(Tier1Stats, RelativeErrorUsesAFloorNearZero) {
  Tier1Stats stats = compute_tier1_stats(values({0, 100}), values({1e-3, 100}), Tolerance{});
  EXPECT_DOUBLE_EQ(stats.rel_floor, 0.1);
  EXPECT_DOUBLE_EQ(stats.max_rel, 1e-2);
  EXPECT_EQ(stats.max_rel_index, std::vector<int64_t>{0});
}

TEST(Tier1Stats, MinAtolPassesExactlyAtThatAtol) {
  at::Tensor reference = at::linspace(-3.0, 7.0, 257, at::kDouble).sin().mul(13.7);
  at::Tensor target = reference + at::linspace(0.0, 1.0, 257, at::kDouble).cos().mul(3.3e-4);
  const double rtol = 1.3e-5;
  Tier1Stats stats = compute_tier1_stats(reference, target, Tolerance{0.0, rtol});
  ASSERT_GT(stats.min_atol, 0.0);
  EXPECT_GT(stats.mismatches, 0);
  EXPECT_EQ(compute_tier1_stats(reference, target, Tolerance{stats.min_atol, rtol}).mismatches, 0);
  double just_below = std::nextafter(stats.min_atol, 0.0);
  EXPECT_GT(compute_tier1_stats(reference, target, Tolerance{just_below, rtol}).mismatches, 0);
}

TEST(Tier1Compare, PassAndNumericFailure) {
  LeafComparison pass = compare_one(values({1, 2}), values({1, 2 + 1e-7}), with_tolerance(1e-5, 1e-5));
  EXPECT_EQ(pass.status, CheckStatus::k_pass);
  EXPECT_EQ(pass.message, "");
  ASSERT_TRUE(pass.stats);
  LeafComparison fail = compare_one(values({1, 2}), values({1, 2.1}), with_tolerance(1e-5, 1e-5));
  EXPECT_EQ(fail.status, CheckStatus::k_fail_numeric);
  EXPECT_EQ(fail.stats->mismatches, 1);
  EXPECT_EQ(fail.message,
            "Tensor-likes are not close! Mismatched elements: 1 / 2 (50.0%) · Greatest absolute difference: "
            "0.1 at index (1,) (up to 1e-05 allowed) · Greatest relative difference: 0.05 at index "
            "(1,) (up to 1e-05 allowed) · at (1,) reference 2, target 2.1 · minimum required tolerance: "
            "atol 0.09998 at rtol 1e-05, or rtol 0.049995 at atol 1e-05");
}

TEST(Tier1Stats, ErrorDistributionAndSimilarity) {
  // 100 elements: 99 differ by 1e-3, one by 0.5.
  std::vector<double> reference(100, 1.0);
  std::vector<double> target(100, 1.001);
  target[42] = 1.5;
  Tier1Stats stats = compute_tier1_stats(values(reference), values(target), Tolerance{0.0, 0.0});
  EXPECT_NEAR(stats.mean_abs, (99 * 1e-3 + 0.5) / 100, 1e-15);
  EXPECT_NEAR(stats.p99_abs, 1e-3, 1e-15);  // the 99th smallest of 100
  EXPECT_NEAR(stats.rmse, std::sqrt((99 * 1e-6 + 0.25) / 100), 1e-15);
  EXPECT_GT(stats.cosine_similarity, 0.99);
  EXPECT_LT(stats.cosine_similarity, 1.0);
  EXPECT_DOUBLE_EQ(compute_tier1_stats(values({1, 0}), values({0, 1}), Tolerance{}).cosine_similarity, 0.0);
  EXPECT_DOUBLE_EQ(compute_tier1_stats(values({0, 0}), values({0, 0}), Tolerance{}).cosine_similarity, 1.0);
}

TEST(Tier1Stats, MaxUlpCountsStepsOfTheReferenceDtype) {
  at::Tensor one = at::ones({2}, at::kFloat);
  at::Tensor next = one.clone();
  next[1] = std::nextafter(1.0f, 2.0f);
  EXPECT_DOUBLE_EQ(compute_tier1_stats(one, one, Tolerance{}).max_ulp, 0.0);
  EXPECT_DOUBLE_EQ(compute_tier1_stats(one, next, Tolerance{}).max_ulp, 1.0);
  // Across zero: -min_subnormal to +min_subnormal is 2 steps.
  at::Tensor tiny = at::full({1}, std::numeric_limits<float>::denorm_min(), at::kFloat);
  EXPECT_DOUBLE_EQ(compute_tier1_stats(tiny, -tiny, Tolerance{}).max_ulp, 2.0);
  // bfloat16 has 7 mantissa bits: 1 + 2^-7 is one step above 1.
  at::Tensor bf_one = at::ones({1}, at::kBFloat16);
  at::Tensor bf_next = at::full({1}, 1.0 + 1.0 / 128, at::kFloat);
  EXPECT_DOUBLE_EQ(compute_tier1_stats(bf_one, bf_next, Tolerance{}).max_ulp, 1.0);
  // A float64 target is rounded to the float32 reference's grid first.
  at::Tensor close64 = at::full({2}, 1.0 + 1e-12, at::kDouble);
  EXPECT_DOUBLE_EQ(compute_tier1_stats(one, close64, Tolerance{}).max_ulp, 0.0);
}

TEST(Tier1Stats, MinRtolPassesExactlyAtThatRtol) {
  at::Tensor reference = at::linspace(-3.0, 7.0, 257, at::kDouble).sin().mul(13.7).add(20.0);
  at::Tensor target = reference + at::linspace(0.0, 1.0, 257, at::kDouble).cos().mul(3.3e-4);
  const double atol = 1e-5;
  Tier1Stats stats = compute_tier1_stats(reference, target, Tolerance{atol, 0.0});
  ASSERT_GT(stats.min_rtol, 0.0);
  EXPECT_EQ(compute_tier1_stats(reference, target, Tolerance{atol, stats.min_rtol}).mismatches, 0);
  EXPECT_GT(compute_tier1_stats(reference, target, Tolerance{atol, std::nextafter(stats.min_rtol, 0.0)}).mismatches, 0);
  // A reference zero with a difference above atol cannot be fixed by any rtol.
  EXPECT_TRUE(std::isinf(compute_tier1_stats(values({0}), values({1}), Tolerance{0.5, 0.0}).min_rtol));
}

TEST(Tier1Rules, PolygraphyFailsOnlyWhereBothAbsoluteAndRelativeExceed) {
  // Differences 0.5, 0.5, 0.05; relative 0.005, 0.5, 0.005.
  at::Tensor reference = values({100, 1, 10});
  at::Tensor target = values({100.5, 1.5, 10.05});
  CompareOptions options;
  options.tolerance = Tolerance{0.1, 0.0045, ToleranceRule::k_polygraphy};
  LeafComparison result = compare_one(reference, target, options);
  EXPECT_EQ(result.status, CheckStatus::k_fail_numeric);
  EXPECT_EQ(result.stats->mismatches, 2);  // the third is within atol
  EXPECT_NE(result.message.find("Minimum Required Tolerance: elemwise error | [abs=0.5] OR [rel=0.5]"),
            std::string::npos)
      << result.message;
  // assert_close allows 0.1 + 0.0045 * 100 = 0.55 at the first element.
  EXPECT_EQ(compare_one(reference, target, with_tolerance(0.1, 0.0045)).stats->mismatches, 1);
}

TEST(Tier1Rules, NormwiseComparesAgainstTheLargestReferenceValue) {
  // max|a-b| = 0.05 <= 0 + 0.01 * max|b| (10): passes although the small element is 5% off.
  CompareOptions options;
  options.tolerance = Tolerance{0.0, 0.01, ToleranceRule::k_normwise};
  EXPECT_EQ(compare_one(values({10, 1}), values({10, 1.05}), options).status, CheckStatus::k_pass);
  LeafComparison fail = compare_one(values({10, 1}), values({10, 1.2}), options);
  EXPECT_EQ(fail.status, CheckStatus::k_fail_numeric);
  EXPECT_EQ(fail.message.rfind("norm-wise rule (Eq. 1): max |a-b| 0.2", 0), 0u) << fail.message;
  EXPECT_EQ(compare_one(values({10, 1}), values({10, 1.05}), with_tolerance(0.0, 0.01)).status,
            CheckStatus::k_fail_numeric);
}

TEST(Tier1Rules, OracleRelativeErrorWithTenfoldFlag) {
  at::Tensor oracle = at::linspace(-1.0, 1.0, 64, at::kDouble);
  at::Tensor reference = oracle + 1e-7;
  CompareOptions options;
  options.tolerance = Tolerance{1e-3, 0.0, ToleranceRule::k_oracle};
  c10::IValue oracle_value = oracle;
  options.oracle = &oracle_value;
  // Target error 1.5x the reference's: passes.
  LeafComparison benign = compare_one(reference, oracle - 1.5e-7, options);
  EXPECT_EQ(benign.status, CheckStatus::k_pass) << benign.message;
  ASSERT_TRUE(benign.stats->oracle);
  EXPECT_NEAR(benign.stats->oracle->reference_rmse, 1e-7, 1e-15);
  EXPECT_NEAR(benign.stats->oracle->target_max_abs, 1.5e-7, 1e-15);
  // 20x the reference's error, within 2 x 1e-7 + atol/10 = 1.002e-4: flagged anyway.
  LeafComparison flagged = compare_one(reference, oracle + 2e-6, options);
  EXPECT_EQ(flagged.status, CheckStatus::k_fail_numeric);
  EXPECT_NE(flagged.message.find("(10 x or more is flagged"), std::string::npos) << flagged.message;
  // Beyond k x reference + floor.
  LeafComparison far = compare_one(reference, oracle + 1e-3, options);
  EXPECT_EQ(far.status, CheckStatus::k_fail_numeric);
  EXPECT_NE(far.message.find("exceeds 2 x the reference's"), std::string::npos) << far.message;
  // No oracle output: the rule cannot judge, and says why.
  options.oracle = nullptr;
  options.oracle_problem = "the float64 oracle failed: boom";
  LeafComparison missing = compare_one(reference, oracle, options);
  EXPECT_EQ(missing.status, CheckStatus::k_crash_ref);
  EXPECT_NE(missing.message.find("boom"), std::string::npos);
}

TEST(Tier1Rules, PerDtypeDefaultsFollowAssertClose) {
  CompareOptions options;
  options.tolerance_per_dtype = true;
  options.same_dtype_promised = false;
  at::Tensor reference = at::full({4}, 3.0, at::kFloat);
  LeafComparison bf16 = compare_one(reference, reference.to(at::kBFloat16).add(0.03), options);
  EXPECT_DOUBLE_EQ(bf16.tolerance.rtol, 1.6e-2);
  EXPECT_DOUBLE_EQ(bf16.tolerance.atol, 1e-5);
  EXPECT_EQ(bf16.status, CheckStatus::k_pass);  // 0.03 <= 1e-5 + 0.016 * 3
  LeafComparison fp32 = compare_one(reference, reference + 1e-4, options);
  EXPECT_DOUBLE_EQ(fp32.tolerance.rtol, 1.3e-6);
  EXPECT_EQ(fp32.status, CheckStatus::k_fail_numeric);
}

TEST(Tier1Compare, NanMaskMismatchIsNonfinite) {
  LeafComparison result = compare_one(values({1, k_nan}), values({1, 1}), with_tolerance(1e-5, 1e-5));
  EXPECT_EQ(result.status, CheckStatus::k_fail_nonfinite);
  EXPECT_EQ(result.stats->nan_reference, 1);
  EXPECT_EQ(result.stats->nan_target, 0);
  EXPECT_EQ(result.stats->mismatches, 1);
  EXPECT_EQ(compare_one(values({1, k_nan}), values({1, k_nan}), with_tolerance(1e-5, 1e-5)).status,
            CheckStatus::k_pass);
}

TEST(Tier1Compare, InfinitySignMismatchIsNonfinite) {
  LeafComparison result = compare_one(values({k_inf, 0}), values({-k_inf, 0}), with_tolerance(1e-5, 1e-5));
  EXPECT_EQ(result.status, CheckStatus::k_fail_nonfinite);
  EXPECT_EQ(result.stats->inf_reference, 1);
  EXPECT_EQ(result.stats->inf_target, 1);
  EXPECT_EQ(compare_one(values({k_inf, 0}), values({k_inf, 0}), with_tolerance(1e-5, 1e-5)).status,
            CheckStatus::k_pass);
}

TEST(Tier1Compare, ShapeMismatchComesFirst) {
  LeafComparison result = compare_one(at::zeros({1, 3}), at::full({1, 4}, k_nan), with_tolerance(1e-5, 1e-5));
  EXPECT_EQ(result.status, CheckStatus::k_fail_shape);
  EXPECT_FALSE(result.stats);
  EXPECT_EQ(result.message, "shape [1, 4] differs from the reference's [1, 3]");
  EXPECT_EQ(result.observed_target->shape, (std::vector<int64_t>{1, 4}));
}

TEST(Tier1Compare, DtypeFailsOnlyWhenTheBackendPromisedTheSameDtype) {
  at::Tensor reference = at::ones({2}, at::kFloat);
  at::Tensor target = at::ones({2}, at::kBFloat16);
  CompareOptions options = with_tolerance(1e-5, 1e-5);
  LeafComparison promised = compare_one(reference, target, options);
  EXPECT_EQ(promised.status, CheckStatus::k_fail_dtype);
  options.same_dtype_promised = false;
  LeafComparison asked = compare_one(reference, target, options);
  EXPECT_EQ(asked.status, CheckStatus::k_pass);
  EXPECT_EQ(asked.observed_reference->dtype, "float32");
  EXPECT_EQ(asked.observed_target->dtype, "bfloat16");
}

TEST(Tier1Compare, CudaTargetWithCpuOutputIsAnError) {
  CompareOptions options = with_tolerance(1e-5, 1e-5);
  options.target_device = Device::k_cuda;
  LeafComparison result = compare_one(at::ones({2}), at::ones({2}), options);
  EXPECT_EQ(result.status, CheckStatus::k_fail_device);
  EXPECT_NE(result.message.find("refuses to label a check cpu vs cuda"), std::string::npos) << result.message;
}

TEST(Tier1Flatten, PathsForNestedTuplesListsAndSortedDicts) {
  c10::Dict<std::string, at::Tensor> dict;
  dict.insert("scores", at::ones({1}));
  dict.insert("boxes", at::zeros({1}));
  c10::List<at::Tensor> list({at::ones({1}), at::ones({2})});
  c10::IValue output = c10::ivalue::Tuple::create({at::ones({1}), list, dict});
  std::vector<std::string> paths;
  for (const auto& leaf : flatten_output(output)) {
    paths.push_back(leaf.path);
  }
  EXPECT_EQ(paths,
            (std::vector<std::string>{"out[0]", "out[1][0]", "out[1][1]", "out[2]['boxes']", "out[2]['scores']"}));
  EXPECT_EQ(flatten_output(at::ones({1})).front().path, "out");
}

TEST(Tier1Flatten, MissingDictKeyIsAStructureFailure) {
  c10::Dict<std::string, at::Tensor> reference;
  reference.insert("boxes", at::ones({2}));
  reference.insert("scores", at::ones({2}));
  c10::Dict<std::string, at::Tensor> target;
  target.insert("boxes", at::ones({2}));
  std::vector<LeafComparison> results = compare_outputs(reference, target, with_tolerance(1e-5, 1e-5));
  ASSERT_EQ(results.size(), 2u);
  // The dict's key set differs, so every leaf under it reports the structure change.
  EXPECT_EQ(results[0].output, "out['boxes']");
  EXPECT_EQ(results[1].output, "out['scores']");
  EXPECT_EQ(results[1].status, CheckStatus::k_fail_structure);
  EXPECT_EQ(results[1].message,
            "out: the reference's output is a dict with keys 'boxes', 'scores', the target's a dict with keys "
            "'boxes'");
}

TEST(Tier1Flatten, OtherContainerOrLengthIsAStructureFailure) {
  c10::IValue reference = c10::ivalue::Tuple::create({at::ones({1}), at::ones({1})});
  c10::IValue as_list = c10::List<at::Tensor>({at::ones({1}), at::ones({1})});
  c10::IValue longer = c10::ivalue::Tuple::create({at::ones({1}), at::ones({1}), at::ones({1})});
  for (const auto& target : {as_list, longer}) {
    std::vector<LeafComparison> results = compare_outputs(reference, target, with_tolerance(1e-5, 1e-5));
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].status, CheckStatus::k_fail_structure);
    EXPECT_EQ(results[1].status, CheckStatus::k_fail_structure);
  }
  EXPECT_EQ(compare_outputs(reference, reference, with_tolerance(1e-5, 1e-5))[1].status, CheckStatus::k_pass);
}

TEST(Tier1Flatten, NonTensorLeavesAreCompared) {
  auto make = [](int64_t count, const std::string& label, double score) {
    return c10::IValue(c10::ivalue::Tuple::create({count, label, score}));
  };
  CompareOptions options = with_tolerance(1e-5, 1e-5);
  std::vector<LeafComparison> same = compare_outputs(make(3, "cat", 0.5), make(3, "cat", 0.5), options);
  ASSERT_EQ(same.size(), 3u);
  for (const auto& result : same) {
    EXPECT_EQ(result.status, CheckStatus::k_pass) << result.output;
  }
  std::vector<LeafComparison> differ = compare_outputs(make(3, "cat", 0.5), make(4, "dog", 0.6), options);
  EXPECT_EQ(differ[0].status, CheckStatus::k_fail_structure);
  EXPECT_EQ(differ[0].message, "out[0]: the target's int 4 differs from the reference's 3");
  EXPECT_EQ(differ[1].status, CheckStatus::k_fail_structure);
  EXPECT_EQ(differ[2].status, CheckStatus::k_fail_numeric);  // floats go through the closeness rule
  EXPECT_EQ(compare_outputs(make(3, "cat", 0.5), at::ones({1}), options)[0].status, CheckStatus::k_fail_structure);
}

TEST(Tier1Observe, MemoryFormatAndDtype) {
  at::Tensor nchw = at::zeros({1, 3, 4, 4});
  EXPECT_EQ(observe_tensor(nchw).memory_format, "contiguous");
  EXPECT_EQ(observe_tensor(nchw.contiguous(at::MemoryFormat::ChannelsLast)).memory_format, "channels_last");
  EXPECT_EQ(observe_tensor(nchw.transpose(2, 3)).memory_format, "strided");
  ObservedTensor observed = observe_tensor(at::zeros({2}, at::kDouble));
  EXPECT_EQ(observed.dtype, "float64");
  EXPECT_EQ(observed.device, "cpu");
}

TEST(Tier1Repeats, MaxAbsBetweenRepeatsPerLeaf) {
  c10::IValue first = c10::ivalue::Tuple::create({values({1, 2}), values({5})});
  c10::IValue second = c10::ivalue::Tuple::create({values({1, 2.25}), values({5})});
  std::map<std::string, double> result = repeat_max_abs({first, second, first});
  EXPECT_DOUBLE_EQ(result.at("out[0]"), 0.25);
  EXPECT_DOUBLE_EQ(result.at("out[1]"), 0.0);
  EXPECT_TRUE(repeat_max_abs({first}).empty());
  c10::IValue shape_changed = c10::ivalue::Tuple::create({values({1}), values({5})});
  EXPECT_TRUE(std::isinf(repeat_max_abs({first, shape_changed}).at("out[0]")));
}

}  // namespace
}  // namespace driftgate

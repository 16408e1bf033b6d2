#include "tasks/task_verdict.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/yaml_reader.h"

namespace driftgate {
namespace {

TaskSpec spec(const std::string& yaml) { return parse_task(YamlReader("x.yaml"), YAML::Load(yaml), "."); }

TEST(TaskVerdict, ClassificationFlipFailsTheTaskWithItsMargin) {
  TaskSpec task = spec("{kind: classification, outputs: out, top_k: 2}");
  task.labels["img"] = {1};
  const TaskTensor reference{{1, 3}, {0.0F, 2.0F, 1.99F}};
  const TaskTensor target{{1, 3}, {0.0F, 1.98F, 1.99F}};
  std::vector<TaskVerdict> verdicts = evaluate_task(task, {reference}, {target}, "img");
  ASSERT_EQ(verdicts.size(), 1U);
  const TaskVerdict& verdict = verdicts[0];
  EXPECT_EQ(verdict.output, "task:classification");
  EXPECT_EQ(verdict.status, CheckStatus::k_fail_task);
  EXPECT_EQ(verdict.message.rfind("the classification answer changed: top1_agreement 0 < 1", 0), 0U) << verdict.message;
  EXPECT_DOUBLE_EQ(verdict.result.metrics.at("reference_accuracy"), 1.0);
  EXPECT_DOUBLE_EQ(verdict.result.metrics.at("target_accuracy"), 0.0);
  EXPECT_NEAR(verdict.result.metrics.at("min_flip_margin"), 0.01, 1e-6);
  ASSERT_EQ(verdict.result.findings.size(), 1U);
  EXPECT_EQ(verdict.result.findings[0], "row 0: class 1 -> 2 at a reference logit margin of 0.01");
}

TEST(TaskVerdict, ClassificationWithinEpsilonPasses) {
  TaskSpec task = spec("{kind: classification, outputs: out, epsilon: 0.05}");
  const TaskTensor reference{{1, 3}, {0.0F, 2.0F, 1.99F}};
  const TaskTensor target{{1, 3}, {0.0F, 1.98F, 1.99F}};
  std::vector<TaskVerdict> verdicts = evaluate_task(task, {reference}, {target}, "img");
  EXPECT_EQ(verdicts[0].status, CheckStatus::k_pass);
  EXPECT_DOUBLE_EQ(verdicts[0].result.metrics.at("tie_swaps"), 1.0);
}

TEST(TaskVerdict, SegmentationGatesOnConfidentFlips) {
  TaskSpec task = spec("{kind: segmentation, outputs: out, epsilon: 0.1}");
  // [1, 2, 1, 2]: pixel 0 flips at margin 0.05 (a tie), pixel 1 agrees.
  const TaskTensor reference{{1, 2, 1, 2}, {1.0F, 1.0F, 0.95F, 0.0F}};
  const TaskTensor target{{1, 2, 1, 2}, {0.9F, 1.0F, 1.0F, 0.0F}};
  EXPECT_EQ(evaluate_task(task, {reference}, {target}, "img")[0].status, CheckStatus::k_pass);
  task.epsilon = 0.01;
  TaskVerdict verdict = evaluate_task(task, {reference}, {target}, "img")[0];
  EXPECT_EQ(verdict.status, CheckStatus::k_fail_task);
  EXPECT_EQ(verdict.message, "the segmentation answer changed: confident_flips 1 > 0");
}

// Decoded boxes with tied scores in opposite orders: native fails, stable passes,
// and both checks say which adapter restored agreement.
TEST(TaskVerdict, TiedDetectionsFailNativeAndPassStable) {
  TaskSpec task = spec("{kind: detection, outputs: [b, s], nms: [native, stable], iou_threshold: 0.3}");
  const TaskTensor reference_boxes{{2, 4}, {0, 0, 10, 10, 4, 0, 14, 10}};
  const TaskTensor target_boxes{{2, 4}, {4.000001F, 0, 14, 10, 0, 0, 10, 10}};
  const TaskTensor scores{{2}, {0.75F, 0.75F}};
  std::vector<TaskVerdict> verdicts = evaluate_task(task, {reference_boxes, scores}, {target_boxes, scores}, "img");
  ASSERT_EQ(verdicts.size(), 2U);
  EXPECT_EQ(verdicts[0].output, "task:detection[native]");
  EXPECT_EQ(verdicts[0].status, CheckStatus::k_fail_task);
  EXPECT_EQ(verdicts[1].output, "task:detection[stable]");
  EXPECT_EQ(verdicts[1].status, CheckStatus::k_pass);
  EXPECT_EQ(verdicts[1].result.findings.back(),
            "stable NMS (score, then x1, y1, x2, y2, class) restores the agreement that native NMS order lost");
  EXPECT_NE(verdicts[0].message.find("restores the agreement"), std::string::npos);
  EXPECT_DOUBLE_EQ(verdicts[0].result.metrics.at("matched_fraction"), 0.0);
  EXPECT_EQ(verdicts[1].result.adapter, "boxes+nms=stable");
}

TEST(TaskVerdict, RawHeadIsDecodedBeforeNms) {
  TaskSpec task = spec("{kind: detection, format: anchors, outputs: [d, l, a], score_threshold: 0.4}");
  const TaskTensor deltas{{1, 2, 4}, {0, 0, 0, 0, 0, 0, 0, 0}};
  const TaskTensor logits{{1, 2, 1}, {2.0F, -2.0F}};
  const TaskTensor anchors{{2, 4}, {0, 0, 10, 10, 20, 20, 30, 30}};
  const TaskTensor shifted{{1, 2, 4}, {0.5F, 0, 0, 0, 0, 0, 0, 0}};
  TaskVerdict same = evaluate_task(task, {deltas, logits, anchors}, {deltas, logits, anchors}, "img")[0];
  EXPECT_EQ(same.status, CheckStatus::k_pass);
  EXPECT_DOUBLE_EQ(same.result.metrics.at("reference_detections"), 1.0);
  TaskVerdict moved = evaluate_task(task, {deltas, logits, anchors}, {shifted, logits, anchors}, "img")[0];
  EXPECT_EQ(moved.status, CheckStatus::k_fail_task);  // shifted by half a box: IoU 1/3
}

TEST(TaskVerdict, ShapesThatDoNotFitAreErrorsNamingTheTask) {
  TaskSpec task = spec("{kind: segmentation, outputs: out}");
  const TaskTensor flat{{4}, {1, 2, 3, 4}};
  try {
    evaluate_task(task, {flat}, {flat}, "img");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "x.yaml:1:1: task 'segmentation': segmentation reads logits [N, C, H, W] or [C, H, W] of equal "
                 "shape, got [4] and [4]; check the task's 'outputs' paths against the model's outputs");
  }
}

}  // namespace
}  // namespace driftgate

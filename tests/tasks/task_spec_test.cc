#include "core/task_spec.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "core/error.h"

namespace driftgate {
namespace {

TaskSpec parse(const std::string& yaml) { return parse_task(YAML::Load(yaml), "x.yaml", "."); }

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TaskSpec, ClassificationDefaults) {
  TaskSpec task = parse("{kind: classification, outputs: out}");
  EXPECT_EQ(task.kind, TaskKind::k_classification);
  EXPECT_EQ(task.outputs, std::vector<std::string>{"out"});
  EXPECT_EQ(task.top_k, 5);
  EXPECT_DOUBLE_EQ(task.tolerances.min_top1_agreement, 1.0);
  EXPECT_EQ(task.origin, "x.yaml:1:1");
  EXPECT_EQ(task_output_name(task, NmsMode::k_stable), "task:classification");
}

TEST(TaskSpec, DetectionWithBothNmsModes) {
  TaskSpec task = parse(
      "{kind: detection, format: anchors, outputs: ['out[0]', 'out[1]', 'out[2]'], nms: [native, stable],"
      " iou_threshold: 0.3, activation: softmax, background_class: 0, box_weights: [10, 10, 5, 5],"
      " tolerances: {min_mean_iou: 0.9, max_score_delta: 0.1}}");
  EXPECT_EQ(task.format, DetectionFormat::k_anchors);
  ASSERT_EQ(task.nms.size(), 2U);
  EXPECT_EQ(task.nms[0], NmsMode::k_native);
  EXPECT_EQ(task_output_name(task, task.nms[0]), "task:detection[native]");
  EXPECT_DOUBLE_EQ(task.iou_threshold, 0.3);
  EXPECT_EQ(task.activation, ScoreActivation::k_softmax);
  EXPECT_DOUBLE_EQ(task.box_weights[2], 5.0);
  EXPECT_DOUBLE_EQ(task.tolerances.max_score_delta, 0.1);
}

TEST(TaskSpec, PostNmsDetectionHasOneCheck) {
  TaskSpec task = parse("{kind: detection, outputs: [a, b, c], apply_nms: false}");
  EXPECT_EQ(task_output_name(task, NmsMode::k_stable), "task:detection");
}

TEST(TaskSpec, ErrorsSayWhereWhatAndWhatToTry) {
  EXPECT_EQ(error_of("{kind: clasification, outputs: out}"),
            "x.yaml:1:8: unknown task kind 'clasification'; did you mean 'classification'? "
            "(one of: classification, detection, segmentation)");
  EXPECT_EQ(error_of("{kind: classification, outputs: out, topk: 3}"),
            "x.yaml:1:38: unknown key 'topk' in task; did you mean 'top_k'? (allowed: kind, outputs, epsilon, top_k, "
            "format, nms, apply_nms, iou_threshold, match_iou, score_threshold, activation, box_weights, "
            "background_class, max_detections, labels, tolerances)");
  EXPECT_EQ(error_of("{kind: segmentation, outputs: out, nms: stable}"),
            "x.yaml:1:41: 'nms' applies to task kind 'detection' only");
  EXPECT_EQ(error_of("{kind: detection, format: anchors, outputs: [a, b]}"),
            "x.yaml:1:45: detection with format 'anchors' reads three outputs: [deltas, logits, anchors], got 2");
  EXPECT_EQ(error_of("{kind: detection, outputs: [a, b], nms: [stable, stable]}"),
            "x.yaml:1:50: nms lists 'stable' twice");
  EXPECT_EQ(
      error_of("{kind: classification}"),
      "x.yaml:1:1: task needs the key 'outputs': the output paths it reads, e.g. [out] or [\"out[0]\", \"out[1]\"]");
  EXPECT_EQ(error_of("{kind: classification, outputs: out, tolerances: {min_top1_agreement: 2}}"),
            "x.yaml:1:71: min_top1_agreement must be between 0 and 1, got 2");
}

TEST(TaskSpec, LabelsFileLines) {
  auto labels = parse_labels("# digits\nimg0 3\nbatch 1 2 # two rows\n\n", "l.txt");
  EXPECT_EQ(labels.at("img0"), std::vector<int64_t>{3});
  EXPECT_EQ(labels.at("batch"), (std::vector<int64_t>{1, 2}));
  try {
    parse_labels("img0 three\n", "l.txt");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "l.txt:1: 'three' is not a class index (a whole number >= 0); lines read '<input name> <class> "
                 "[<class> ...]'");
  }
  EXPECT_THROW(parse_labels("a 1\na 2\n", "l.txt"), Error);
  EXPECT_THROW(parse_labels("a\n", "l.txt"), Error);
}

}  // namespace
}  // namespace driftgate

#include "tasks/task_verdict.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "tasks/classification.h"
#include "tasks/detection.h"
#include "tasks/segmentation.h"

namespace driftgate {
namespace {

constexpr size_t k_max_findings = 20;

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + "]";
}

int64_t numel(const TaskTensor& tensor) { return static_cast<int64_t>(tensor.values.size()); }

[[noreturn]] void shape_error(const TaskSpec& task, const std::string& what) {
  throw Error(task.origin + ": task '" + to_string(task.kind) + "': " + what +
              "; check the task's 'outputs' paths against the model's outputs");
}

// Appends "<metric> <value> below <limit>" to `why` when value < limit.
void require_at_least(std::string& why, const char* name, double value, double limit) {
  if (value < limit) {
    why += (why.empty() ? "" : "; ") + std::string(name) + format(" %.6g", value) + format(" < %.6g", limit);
  }
}

void require_at_most(std::string& why, const char* name, double value, double limit) {
  if (value > limit) {
    why += (why.empty() ? "" : "; ") + std::string(name) + format(" %.6g", value) + format(" > %.6g", limit);
  }
}

TaskVerdict finish(TaskVerdict verdict, const std::string& why) {
  if (!why.empty()) {
    verdict.status = CheckStatus::k_fail_task;
    verdict.message = "the " + verdict.result.kind + " answer changed: " + why;
  }
  return verdict;
}

TaskVerdict classify(const TaskSpec& task, const TaskTensor& reference, const TaskTensor& target,
                     const std::string& input) {
  if (reference.shape != target.shape || reference.shape.empty()) {
    shape_error(task, "logits of shapes " + shape_text(reference.shape) + " and " + shape_text(target.shape) +
                          " cannot be compared as [rows, classes]");
  }
  const int64_t classes = reference.shape.back();
  const int64_t rows = classes > 0 ? numel(reference) / classes : 0;
  const std::vector<int64_t>* labels = nullptr;
  auto found = task.labels.find(input);
  if (found != task.labels.end()) {
    labels = &found->second;
  }
  ClassificationResult result = compare_classification(reference.values.data(), target.values.data(), rows, classes,
                                                       {task.epsilon, task.top_k}, labels);
  TaskVerdict verdict;
  verdict.output = task_output_name(task, NmsMode::k_stable);
  verdict.result.kind = "classification";
  verdict.result.adapter = "top1+top" + std::to_string(result.top_k) + format(", epsilon %.3g", task.epsilon);
  auto& metrics = verdict.result.metrics;
  metrics["rows"] = static_cast<double>(result.rows);
  metrics["top1_agreement"] = result.top1_agreement;
  metrics["topk_overlap"] = result.topk_overlap;
  metrics["tie_swaps"] = static_cast<double>(result.tie_swaps);
  metrics["flips"] = static_cast<double>(result.flips.size());
  if (result.reference_accuracy) {
    metrics["reference_accuracy"] = *result.reference_accuracy;
    metrics["target_accuracy"] = *result.target_accuracy;
  }
  for (const ClassificationFlip& flip : result.flips) {
    metrics["min_flip_margin"] =
        std::min(metrics.count("min_flip_margin") ? metrics["min_flip_margin"] : 1e300, flip.reference_margin);
    if (verdict.result.findings.size() < k_max_findings) {
      verdict.result.findings.push_back(
          "row " + std::to_string(flip.row) + ": class " + std::to_string(flip.reference_class) + " -> " +
          std::to_string(flip.target_class) + format(" at a reference logit margin of %.3g", flip.reference_margin));
    }
  }
  std::string why;
  require_at_least(why, "top1_agreement", result.top1_agreement, task.tolerances.min_top1_agreement);
  require_at_least(why, "topk_overlap", result.topk_overlap, task.tolerances.min_topk_overlap);
  if (!why.empty() && !result.flips.empty()) {
    why += format(" (smallest flip margin %.3g)", metrics["min_flip_margin"]);
  }
  return finish(std::move(verdict), why);
}

TaskVerdict segment(const TaskSpec& task, const TaskTensor& reference, const TaskTensor& target) {
  const auto& shape = reference.shape;
  if (reference.shape != target.shape || (shape.size() != 3 && shape.size() != 4)) {
    shape_error(task, "segmentation reads logits [N, C, H, W] or [C, H, W] of equal shape, got " +
                          shape_text(reference.shape) + " and " + shape_text(target.shape));
  }
  const int64_t batch = shape.size() == 4 ? shape[0] : 1;
  const int64_t classes = shape[shape.size() - 3];
  const int64_t pixels = shape[shape.size() - 2] * shape[shape.size() - 1];
  SegmentationResult result =
      compare_segmentation(reference.values.data(), target.values.data(), batch, classes, pixels, task.epsilon);
  TaskVerdict verdict;
  verdict.output = task_output_name(task, NmsMode::k_stable);
  verdict.result.kind = "segmentation";
  verdict.result.adapter = "argmax" + format(", epsilon %.3g", task.epsilon);
  auto& metrics = verdict.result.metrics;
  metrics["pixels"] = static_cast<double>(result.pixels);
  metrics["pixel_agreement"] = result.pixel_agreement;
  metrics["miou"] = result.miou;
  metrics["tie_flips"] = static_cast<double>(result.tie_flips);
  metrics["confident_flips"] = static_cast<double>(result.confident_flips);
  metrics["max_flip_margin"] = result.max_flip_margin;
  std::string why;
  require_at_least(why, "pixel_agreement", result.pixel_agreement, task.tolerances.min_pixel_agreement);
  require_at_least(why, "miou", result.miou, task.tolerances.min_miou);
  require_at_most(why, "confident_flips", static_cast<double>(result.confident_flips),
                  static_cast<double>(task.tolerances.max_confident_flips));
  return finish(std::move(verdict), why);
}

// The candidates of one backend, before NMS.
std::vector<Detection> candidates(const TaskSpec& task, const std::vector<TaskTensor>& outputs) {
  if (task.format == DetectionFormat::k_anchors) {
    const TaskTensor& deltas = outputs[0];
    const TaskTensor& logits = outputs[1];
    const TaskTensor& anchors = outputs[2];
    const int64_t n = numel(deltas) / 4;
    if (n < 1 || numel(deltas) != n * 4 || numel(anchors) != n * 4 || numel(logits) % n != 0) {
      shape_error(task, "a raw head needs deltas [n, 4], logits [n, C] and anchors [n, 4]; got " +
                            shape_text(deltas.shape) + ", " + shape_text(logits.shape) + ", " +
                            shape_text(anchors.shape));
    }
    DecodeOptions options{task.activation, task.box_weights, task.score_threshold, task.background_class};
    return decode_anchors(deltas.values.data(), logits.values.data(), anchors.values.data(), n, numel(logits) / n,
                          options);
  }
  const TaskTensor& boxes = outputs[0];
  const TaskTensor& scores = outputs[1];
  const int64_t n = numel(scores);
  if (numel(boxes) != n * 4 || (outputs.size() == 3 && numel(outputs[2]) != n)) {
    shape_error(task, "decoded detections need boxes [n, 4], scores [n] and labels [n]; got " +
                          shape_text(boxes.shape) + ", " + shape_text(scores.shape) +
                          (outputs.size() == 3 ? ", " + shape_text(outputs[2].shape) : std::string()));
  }
  std::vector<int64_t> labels;
  if (outputs.size() == 3) {
    for (float value : outputs[2].values) {
      labels.push_back(static_cast<int64_t>(value));
    }
  }
  return detections_from_boxes(boxes.values.data(), scores.values.data(), labels.empty() ? nullptr : labels.data(), n,
                               task.score_threshold);
}

TaskVerdict detect(const TaskSpec& task, const std::vector<Detection>& reference_candidates,
                   const std::vector<Detection>& target_candidates, NmsMode mode) {
  std::vector<Detection> reference = reference_candidates;
  std::vector<Detection> target = target_candidates;
  if (task.apply_nms) {
    reference = non_max_suppression(reference, mode, task.iou_threshold, task.max_detections);
    target = non_max_suppression(target, mode, task.iou_threshold, task.max_detections);
  }
  DetectionComparison result = compare_detections(reference, target, task.match_iou);
  TaskVerdict verdict;
  verdict.output = task_output_name(task, mode);
  verdict.result.kind = "detection";
  verdict.result.adapter = std::string(to_string(task.format)) +
                           (task.apply_nms ? std::string("+nms=") + to_string(mode) : std::string("+no_nms"));
  auto& metrics = verdict.result.metrics;
  metrics["reference_detections"] = static_cast<double>(result.reference_count);
  metrics["target_detections"] = static_cast<double>(result.target_count);
  metrics["matched"] = static_cast<double>(result.matched);
  metrics["matched_fraction"] = result.matched_fraction;
  metrics["mean_iou"] = result.mean_iou;
  metrics["max_score_delta"] = result.max_score_delta;
  metrics["map50"] = result.map50;
  std::string why;
  require_at_least(why, "matched_fraction", result.matched_fraction, task.tolerances.min_matched_fraction);
  if (result.matched > 0) {
    require_at_least(why, "mean_iou", result.mean_iou, task.tolerances.min_mean_iou);
  }
  require_at_most(why, "max_score_delta", result.max_score_delta, task.tolerances.max_score_delta);
  require_at_least(why, "map50", result.map50, task.tolerances.min_map50);
  if (result.matched < std::max(result.reference_count, result.target_count)) {
    verdict.result.findings.push_back(std::to_string(result.reference_count - result.matched) + " of " +
                                      std::to_string(result.reference_count) + " reference detections unmatched, " +
                                      std::to_string(result.target_count - result.matched) + " of " +
                                      std::to_string(result.target_count) + " target detections unmatched");
  }
  return finish(std::move(verdict), why);
}

}  // namespace

std::vector<TaskVerdict> evaluate_task(const TaskSpec& task, const std::vector<TaskTensor>& reference,
                                       const std::vector<TaskTensor>& target, const std::string& input) {
  if (reference.size() != task.outputs.size() || target.size() != task.outputs.size()) {
    shape_error(task, "expected " + std::to_string(task.outputs.size()) + " outputs per backend");
  }
  if (task.kind == TaskKind::k_classification) {
    return {classify(task, reference[0], target[0], input)};
  }
  if (task.kind == TaskKind::k_segmentation) {
    return {segment(task, reference[0], target[0])};
  }
  const std::vector<Detection> reference_candidates = candidates(task, reference);
  const std::vector<Detection> target_candidates = candidates(task, target);
  std::vector<TaskVerdict> verdicts;
  if (!task.apply_nms) {
    verdicts.push_back(detect(task, reference_candidates, target_candidates, NmsMode::k_native));
    return verdicts;
  }
  for (NmsMode mode : task.nms) {
    verdicts.push_back(detect(task, reference_candidates, target_candidates, mode));
  }
  note_restoring_adapter(verdicts);
  return verdicts;
}

void note_restoring_adapter(std::vector<TaskVerdict>& verdicts) {
  TaskVerdict* native = nullptr;
  TaskVerdict* stable = nullptr;
  for (TaskVerdict& verdict : verdicts) {
    if (verdict.output == "task:detection[native]") {
      native = &verdict;
    } else if (verdict.output == "task:detection[stable]") {
      stable = &verdict;
    }
  }
  if (native && stable && native->status == CheckStatus::k_fail_task && stable->status == CheckStatus::k_pass) {
    const std::string note =
        "stable NMS (score, then x1, y1, x2, y2, class) restores the agreement that native NMS order lost";
    native->result.findings.push_back(note);
    stable->result.findings.push_back(note);
    native->message += "; " + note;
  }
}

}  // namespace driftgate

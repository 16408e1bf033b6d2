// Tier 3: what an experiment's `task:` section asks for.
//
// Users care whether the answer changes (the class, the boxes, the mask), not only
// whether tensors are close. A task spec names the adapter (classification,
// detection, segmentation), which output leaves it reads, its parameters and the
// task tolerances a target must meet. It lives in core (torch-free) so configs are
// validated by any driftgate build; the adapters themselves are in tasks/.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace driftgate {

class YamlReader;

enum class TaskKind { k_classification, k_detection, k_segmentation };

// NMS candidate order: `stable` sorts by score descending, then x1, y1, x2, y2, class
// (a stable sort, so equal keys keep their order); `native` sorts by score only and
// keeps ties in the order the backend produced them, as torchvision's NMS does.
enum class NmsMode { k_stable, k_native };

// What the detection outputs are: `boxes` (decoded boxes [N,4] xyxy, scores [N] and
// optional labels [N]), or `anchors` (a raw head: box deltas [N,4], class logits
// [N,C] and anchors [N,4] xyxy, decoded by driftgate).
enum class DetectionFormat { k_boxes, k_anchors };

// How raw class logits become scores (anchors format only).
enum class ScoreActivation { k_none, k_sigmoid, k_softmax };

const char* to_string(TaskKind kind);
const char* to_string(NmsMode mode);
const char* to_string(DetectionFormat format);
const char* to_string(ScoreActivation activation);

// Task-level tolerances: a target fails the task (status fail_task) when any
// metric of its kind is on the wrong side. Defaults demand the same answer.
struct TaskTolerances {
  double min_top1_agreement = 1.0;    // classification: fraction of rows with the same top-1 (ties excused)
  double min_topk_overlap = 0.0;      // classification: mean |topk(ref) ∩ topk(tgt)| / k
  double min_matched_fraction = 1.0;  // detection: matched / max(#ref, #tgt)
  double min_mean_iou = 0.5;          // detection: mean IoU of matched pairs
  double max_score_delta = std::numeric_limits<double>::infinity();  // detection: max |score diff| of matches
  double min_map50 = 0.0;            // detection: mAP@0.5 of the target, the reference as ground truth
  double min_pixel_agreement = 0.0;  // segmentation: fraction of pixels with the same argmax (ties included)
  double min_miou = 0.0;             // segmentation: mean IoU of the two masks over present classes
  int64_t max_confident_flips = 0;   // segmentation: flipped pixels whose reference margin exceeds epsilon
};

struct TaskSpec {
  TaskKind kind = TaskKind::k_classification;
  // Output leaf paths the adapter reads ("out", "out[0]", "out[1][0]['boxes']"):
  // classification and segmentation: [logits]; detection boxes: [boxes, scores] or
  // [boxes, scores, labels]; detection anchors: [deltas, logits, anchors].
  std::vector<std::string> outputs;
  double epsilon = 0.0;  // logits (or scores) within epsilon of each other are ties
  int top_k = 5;
  DetectionFormat format = DetectionFormat::k_boxes;
  std::vector<NmsMode> nms{NmsMode::k_stable};  // one task check per mode
  bool apply_nms = true;                        // false: the outputs are already post-NMS (full detection models)
  double iou_threshold = 0.5;                   // NMS suppression threshold
  double match_iou = 0.5;                       // matching reference and target detections
  double score_threshold = 0.05;
  ScoreActivation activation = ScoreActivation::k_sigmoid;
  std::array<double, 4> box_weights{1.0, 1.0, 1.0, 1.0};  // dx, dy, dw, dh divisors (torchvision BoxCoder)
  int64_t background_class = -1;                          // a class index never reported (SSD's 0); -1: none
  int64_t max_detections = 100;                           // after NMS, per image
  // `labels:` file, resolved: per input name, the true class of each batch row.
  std::string labels_path;
  std::map<std::string, std::vector<int64_t>> labels;
  TaskTolerances tolerances;
  std::string origin;  // "configs/x.yaml:30:3"
};

// The output name of a task check: "task:classification", "task:segmentation",
// "task:detection[stable]", "task:detection[native]"; "task:detection" without NMS.
std::string task_output_name(const TaskSpec& task, NmsMode mode);

// The keys a `task:` mapping accepts (for did-you-mean and the schema test).
const std::vector<std::string>& task_keys();

// Parses the `task:` mapping of the experiment `reader` reads; relative files resolve
// against `base_dir`. Throws driftgate::Error "<path>:<line>:<col>: <message>".
TaskSpec parse_task(const YamlReader& reader, const YAML::Node& node, const std::string& base_dir);

// Parses a labels file: one line per input, "<input name> <class> [<class> ...]",
// '#' starts a comment. Throws driftgate::Error "<file>:<line>: ..." on bad lines.
std::map<std::string, std::vector<int64_t>> parse_labels(const std::string& text, const std::string& file);

}  // namespace driftgate

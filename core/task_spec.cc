#include "core/task_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "core/file_util.h"
#include "core/input_file.h"
#include "core/yaml_reader.h"

namespace driftgate {
namespace {

const std::vector<std::string> k_keys = {
    "kind",       "outputs",     "epsilon",          "top_k",          "format",
    "nms",        "apply_nms",   "iou_threshold",    "match_iou",      "score_threshold",
    "activation", "box_weights", "background_class", "max_detections", "labels",
    "tolerances"};
const std::vector<std::string> k_tolerance_keys = {"min_top1_agreement",  "min_topk_overlap", "min_matched_fraction",
                                                   "min_mean_iou",        "max_score_delta",  "min_map50",
                                                   "min_pixel_agreement", "min_miou",         "max_confident_flips"};

const std::vector<std::string> k_kinds = {"classification", "detection", "segmentation"};
const std::vector<std::string> k_modes = {"stable", "native"};
const std::vector<std::string> k_formats = {"boxes", "anchors"};
const std::vector<std::string> k_activations = {"none", "sigmoid", "softmax"};

void parse_tolerances(const YamlReader& reader, const YAML::Node& node, TaskTolerances& tolerances) {
  reader.expect_map(node, "task tolerances", k_tolerance_keys);
  const double inf = std::numeric_limits<double>::infinity();
  auto fraction = [&](const char* key, double& value) {
    if (node[key]) {
      value = reader.number(node[key], key, 0.0, 1.0);
    }
  };
  fraction("min_top1_agreement", tolerances.min_top1_agreement);
  fraction("min_topk_overlap", tolerances.min_topk_overlap);
  fraction("min_matched_fraction", tolerances.min_matched_fraction);
  fraction("min_mean_iou", tolerances.min_mean_iou);
  fraction("min_map50", tolerances.min_map50);
  fraction("min_pixel_agreement", tolerances.min_pixel_agreement);
  fraction("min_miou", tolerances.min_miou);
  if (node["max_score_delta"]) {
    tolerances.max_score_delta = reader.number(node["max_score_delta"], "max_score_delta", 0.0, inf);
  }
  if (node["max_confident_flips"]) {
    tolerances.max_confident_flips =
        reader.integer(node["max_confident_flips"], "max_confident_flips", 0, std::numeric_limits<int64_t>::max());
  }
}

// How many output paths each kind (and detection format) reads.
void check_outputs(const YamlReader& reader, const YAML::Node& node, const TaskSpec& task) {
  const size_t n = task.outputs.size();
  if (task.kind != TaskKind::k_detection) {
    if (n != 1) {
      reader.fail(node.Mark(),
                  std::string(to_string(task.kind)) + " reads one output (the logits), got " + std::to_string(n));
    }
    return;
  }
  if (task.format == DetectionFormat::k_anchors && n != 3) {
    reader.fail(node.Mark(), "detection with format 'anchors' reads three outputs: [deltas, logits, anchors], got " +
                                 std::to_string(n));
  }
  if (task.format == DetectionFormat::k_boxes && (n < 2 || n > 3)) {
    reader.fail(node.Mark(), "detection with format 'boxes' reads [boxes, scores] or [boxes, scores, labels], got " +
                                 std::to_string(n) + " outputs");
  }
}

void parse_detection_keys(const YamlReader& reader, const YAML::Node& node, TaskSpec& task) {
  if (node["format"]) {
    task.format = static_cast<DetectionFormat>(reader.choice(node["format"], "detection format", k_formats));
  }
  if (node["nms"]) {
    task.nms.clear();
    const YAML::Node nms = node["nms"];
    std::vector<YAML::Node> items;
    if (nms.IsSequence() && nms.size() > 0) {
      for (const auto& item : nms) {
        items.push_back(item);
      }
    } else if (nms.IsScalar()) {
      items.push_back(nms);
    } else {
      reader.fail(nms.Mark(), "nms must be 'stable', 'native' or a list of both");
    }
    for (const YAML::Node& item : items) {
      auto mode = static_cast<NmsMode>(reader.choice(item, "nms mode", k_modes));
      if (std::find(task.nms.begin(), task.nms.end(), mode) != task.nms.end()) {
        reader.fail(item.Mark(), std::string("nms lists '") + to_string(mode) + "' twice");
      }
      task.nms.push_back(mode);
    }
  }
  if (node["apply_nms"]) {
    task.apply_nms = reader.boolean(node["apply_nms"], "apply_nms");
  }
  if (node["iou_threshold"]) {
    task.iou_threshold = reader.number(node["iou_threshold"], "iou_threshold", 0.0, 1.0);
  }
  if (node["match_iou"]) {
    task.match_iou = reader.number(node["match_iou"], "match_iou", 0.0, 1.0);
  }
  if (node["score_threshold"]) {
    task.score_threshold = reader.number(node["score_threshold"], "score_threshold", -1e30, 1e30);
  }
  if (node["activation"]) {
    task.activation = static_cast<ScoreActivation>(reader.choice(node["activation"], "activation", k_activations));
  }
  if (const YAML::Node weights = node["box_weights"]) {
    if (!weights.IsSequence() || weights.size() != 4) {
      reader.fail(weights.Mark(), "box_weights must be 4 numbers [wx, wy, ww, wh] (torchvision's BoxCoder weights)");
    }
    for (size_t i = 0; i < 4; ++i) {
      task.box_weights[i] = reader.number(weights[i], "a box weight", 1e-6, 1e6);
    }
  }
  if (node["background_class"]) {
    task.background_class = reader.integer(node["background_class"], "background_class", -1, 1 << 20);
  }
  if (node["max_detections"]) {
    task.max_detections = reader.integer(node["max_detections"], "max_detections", 1, 1 << 20);
  }
  if (!task.apply_nms && node["nms"]) {
    reader.fail(node["nms"].Mark(),
                "'nms' chooses the NMS order, but 'apply_nms: false' says the outputs are already "
                "post-NMS; remove one of them");
  }
  if (task.format == DetectionFormat::k_anchors && !task.apply_nms) {
    reader.fail(node["apply_nms"].Mark(), "a raw head (format 'anchors') needs NMS; remove 'apply_nms: false'");
  }
}

}  // namespace

const char* to_string(TaskKind kind) { return k_kinds[static_cast<size_t>(kind)].c_str(); }
const char* to_string(NmsMode mode) { return k_modes[static_cast<size_t>(mode)].c_str(); }
const char* to_string(DetectionFormat format) { return k_formats[static_cast<size_t>(format)].c_str(); }
const char* to_string(ScoreActivation activation) { return k_activations[static_cast<size_t>(activation)].c_str(); }

std::string task_output_name(const TaskSpec& task, NmsMode mode) {
  if (task.kind == TaskKind::k_detection && !task.apply_nms) {
    return "task:detection";
  }
  if (task.kind == TaskKind::k_detection) {
    return std::string("task:detection[") + to_string(mode) + "]";
  }
  return std::string("task:") + to_string(task.kind);
}

const std::vector<std::string>& task_keys() { return k_keys; }

TaskSpec parse_task(const YamlReader& reader, const YAML::Node& node, const std::string& base_dir) {
  reader.expect_map(node, "task", k_keys);
  TaskSpec task;
  task.origin = reader.location(node);
  if (!node["kind"]) {
    reader.fail(node.Mark(), "task needs the key 'kind' (one of: " + YamlReader::join(k_kinds) + ")");
  }
  task.kind = static_cast<TaskKind>(reader.choice(node["kind"], "task kind", k_kinds));
  if (!node["outputs"]) {
    reader.fail(node.Mark(),
                "task needs the key 'outputs': the output paths it reads, e.g. [out] or [\"out[0]\", \"out[1]\"]");
  }
  task.outputs = reader.strings(node["outputs"], "outputs");
  const bool detection = task.kind == TaskKind::k_detection;
  for (const char* key : {"format", "nms", "apply_nms", "iou_threshold", "match_iou", "score_threshold", "activation",
                          "box_weights", "background_class", "max_detections"}) {
    if (node[key] && !detection) {
      reader.fail(node[key].Mark(), std::string("'") + key + "' applies to task kind 'detection' only");
    }
  }
  if (node["top_k"] && task.kind != TaskKind::k_classification) {
    reader.fail(node["top_k"].Mark(), "'top_k' applies to task kind 'classification' only");
  }
  if (node["labels"] && task.kind != TaskKind::k_classification) {
    reader.fail(node["labels"].Mark(), "'labels' applies to task kind 'classification' only");
  }
  if (detection) {
    parse_detection_keys(reader, node, task);
  }
  check_outputs(reader, node["outputs"], task);
  if (node["epsilon"]) {
    task.epsilon = reader.number(node["epsilon"], "epsilon", 0.0, 1e30);
  }
  if (node["top_k"]) {
    task.top_k = static_cast<int>(reader.integer(node["top_k"], "top_k", 1, 1000));
  }
  if (const YAML::Node labels = node["labels"]) {
    task.labels_path = resolve_path(base_dir, reader.scalar(labels, "labels"));
    std::string text;
    try {
      text = read_input_file(task.labels_path, k_labels_file);
    } catch (const Error& e) {
      reader.fail(labels.Mark(), "labels file '" + labels.Scalar() + "' cannot be read (" + e.what() + ")");
    }
    task.labels = parse_labels(text, task.labels_path);
  }
  if (node["tolerances"]) {
    parse_tolerances(reader, node["tolerances"], task.tolerances);
  }
  return task;
}

std::map<std::string, std::vector<int64_t>> parse_labels(const std::string& text, const std::string& file) {
  std::map<std::string, std::vector<int64_t>> labels;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) {
      continue;
    }
    std::vector<int64_t> classes;
    std::string word;
    while (words >> word) {
      size_t used = 0;
      int64_t value = -1;
      try {
        value = std::stoll(word, &used);
      } catch (const std::out_of_range&) {
        throw Error(file + ":" + std::to_string(number) + ": class index '" + word +
                    "' is out of range (class indices are 0 to " + std::to_string(INT64_MAX) + ")");
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size() || value < 0) {
        throw Error(file + ":" + std::to_string(number) + ": '" + word +
                    "' is not a class index (a whole number >= 0); lines read '<input name> <class> [<class> ...]'");
      }
      classes.push_back(value);
    }
    if (classes.empty()) {
      throw Error(file + ":" + std::to_string(number) + ": input '" + name +
                  "' has no class; lines read '<input name> <class> [<class> ...]'");
    }
    if (!labels.emplace(name, classes).second) {
      throw Error(file + ":" + std::to_string(number) + ": input '" + name + "' is labelled twice");
    }
  }
  return labels;
}

}  // namespace driftgate

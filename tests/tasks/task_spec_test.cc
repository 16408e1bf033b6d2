#include "core/task_spec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <climits>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/yaml_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/unix_socket.h"

namespace driftgate {
namespace {

TaskSpec parse(const std::string& yaml) { return parse_task(YamlReader("x.yaml"), YAML::Load(yaml), "."); }

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

// Issue 35: the task section is read by the experiment's reader (core/yaml_reader.h), so
// its mappings and values are refused in the experiment's words, saying what they got.
TEST(TaskSpec, MappingsAndValuesAreRefusedInTheExperimentsWords) {
  EXPECT_EQ(error_of("[kind, outputs]"), "x.yaml:1:1: task must be a mapping of keys to values, got a list");
  EXPECT_EQ(error_of("{kind: classification, outputs: out, [a]: 1}"), "x.yaml:1:38: keys of task must be plain words");
  EXPECT_EQ(error_of("{kind: [classification], outputs: out}"),
            "x.yaml:1:8: task kind must be a single value, got a list");
  EXPECT_EQ(error_of("{kind: classification, outputs: out, top_k: [5]}"),
            "x.yaml:1:45: top_k must be a single value, got a list");
  EXPECT_EQ(error_of("{kind: detection, outputs: [a, b], apply_nms: maybe}"),
            "x.yaml:1:47: apply_nms must be true or false, got 'maybe'");
  EXPECT_EQ(error_of("{kind: classification, outputs: out, tolerances: 1}"),
            "x.yaml:1:50: task tolerances must be a mapping of keys to values, got '1'");
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
  // 2^63 and 2^64: whole numbers, but no int64 holds them (2^63 - 1 does).
  EXPECT_EQ(parse_labels("a 9223372036854775807\n", "l.txt").at("a"), std::vector<int64_t>{INT64_MAX});
  for (const std::string word : {"9223372036854775808", "18446744073709551616"}) {
    try {
      parse_labels("ok 1\nb " + word + "\n", "l.txt");
      FAIL() << word << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "l.txt:2: class index '" + word + "' is out of range (class indices are 0 to 9223372036854775807)");
    }
  }
}

// Issue 24: the task block read 1e-400 as 0 and refused 2^64 as "not a whole number";
// it now says what the experiment's readers say (tests/core/experiment_test.cc).
TEST(TaskSpec, NumbersOutsideADoubleOrInt64AreOutOfRange) {
  const std::string range =
      "): a double holds 0 and magnitudes from 2.2250738585072014e-308 to 1.7976931348623157e+308; write a number "
      "in that range";
  EXPECT_EQ(error_of("{kind: classification, outputs: out, epsilon: 1e-400}"),
            "x.yaml:1:47: epsilon '1e-400' is out of range (it underflows to 0" + range);
  EXPECT_EQ(error_of("{kind: detection, outputs: [a, b], tolerances: {max_score_delta: 1e400}}"),
            "x.yaml:1:66: max_score_delta '1e400' is out of range (it overflows" + range);
  EXPECT_EQ(error_of("{kind: detection, outputs: [a, b], match_iou: 2.5e-320}"),
            "x.yaml:1:47: match_iou '2.5e-320' is out of range (it underflows to a denormal, losing digits" + range);
  // 2^64 = 18446744073709551616; int64's maximum is 2^63 - 1.
  EXPECT_EQ(error_of("{kind: segmentation, outputs: out, tolerances: {max_confident_flips: 18446744073709551616}}"),
            "x.yaml:1:70: max_confident_flips must be between 0 and 9223372036854775807, got 18446744073709551616 "
            "(out of range)");
  // -(2^63 + 1) in hexadecimal; 1 << 20 = 1048576.
  EXPECT_EQ(error_of("{kind: detection, outputs: [a, b], background_class: -0x8000000000000001}"),
            "x.yaml:1:54: background_class must be between -1 and 1048576, got -0x8000000000000001 (out of range)");
  EXPECT_EQ(error_of("{kind: classification, outputs: out, top_k: 2.0}"),
            "x.yaml:1:45: top_k must be a whole number, got '2.0'");
  EXPECT_EQ(error_of("{kind: classification, outputs: out, epsilon: [1]}"),
            "x.yaml:1:47: epsilon must be a number, got 'a collection'");
  // Zero digits are 0, and the smallest normal double is read as itself.
  EXPECT_EQ(parse("{kind: classification, outputs: out, epsilon: 0.0e-999}").epsilon, 0.0);
  EXPECT_EQ(parse("{kind: classification, outputs: out, epsilon: 2.2250738585072014e-308}").epsilon,
            std::numeric_limits<double>::min());
  EXPECT_EQ(parse("{kind: detection, outputs: [a, b], tolerances: {max_score_delta: .inf}}").tolerances.max_score_delta,
            std::numeric_limits<double>::infinity());
}

// Issue 24: a labels path that is a FIFO or a socket is named as such, without blocking.
TEST(TaskSpec, LabelsFileThatIsNotARegularFileIsNamed) {
  test::TempDir dir;
  const std::string fifo = dir / "labels.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_of("{kind: classification, outputs: out, labels: " + fifo + "}"),
            "x.yaml:1:46: labels file '" + fifo + "' cannot be read (" + fifo +
                ": a FIFO (named pipe), not a regular file; driftgate reads a labels file only from a regular file "
                "(save the data to a file and pass that))");
  const std::string socket_path = dir / "labels.sock";
  const test::BoundUnixSocket bound(socket_path);
  EXPECT_EQ(error_of("{kind: classification, outputs: out, labels: " + socket_path + "}"),
            "x.yaml:1:46: labels file '" + socket_path + "' cannot be read (" + socket_path +
                ": a socket, not a regular file; driftgate reads a labels file only from a regular file (save the "
                "data to a file and pass that))");
}

}  // namespace
}  // namespace driftgate

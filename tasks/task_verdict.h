// Tier 3 verdicts: runs an experiment's task adapter on two backends' outputs and
// judges the metrics against the task tolerances.
//
// The runner converts the output leaves the task names into TaskTensors (float32,
// contiguous) and gets back one verdict per task check: one for classification and
// segmentation, one per NMS mode for detection. Torch-free, so every rule here is
// unit-tested without LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/record.h"
#include "core/task_spec.h"

namespace driftgate {

// One output leaf as plain floats (integers such as labels converted exactly).
struct TaskTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;  // row-major
};

struct TaskVerdict {
  std::string output;                        // task_output_name(): "task:classification", "task:detection[stable]", ...
  CheckStatus status = CheckStatus::k_pass;  // k_pass or k_fail_task
  std::string message;                       // why it failed; empty on pass
  TaskResult result;
};

// `reference` and `target` hold one TaskTensor per task.outputs entry, in that
// order. `input` names the input (for the labels). Throws driftgate::Error naming
// the task's origin when shapes do not fit the task kind.
std::vector<TaskVerdict> evaluate_task(const TaskSpec& task, const std::vector<TaskTensor>& reference,
                                       const std::vector<TaskTensor>& target, const std::string& input);

// For detection with both NMS modes: the verdicts where `native` failed and
// `stable` passed get the finding "stable NMS restores agreement" (on both checks).
void note_restoring_adapter(std::vector<TaskVerdict>& verdicts);

}  // namespace driftgate

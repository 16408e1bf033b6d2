// Tier 3 in the runner: reads the output leaves an experiment's `task:` names from
// both backends' outputs, converts them to plain float buffers and asks the task
// adapters (tasks/task_verdict.h) for the verdicts.
//
// It exists so the adapters stay torch-free and unit-testable while the runner
// still judges the real outputs: a missing leaf or a non-tensor leaf is a verdict
// (status unsupported, naming the task), never a silent pass.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "core/experiment.h"
#include "tasks/task_verdict.h"

namespace driftgate {

// The task check outputs of `task`, in verdict order: "task:classification",
// "task:detection[native]", "task:detection[stable]", ...
std::vector<std::string> task_output_names(const TaskSpec& task);

// One verdict per task check; a leaf that is missing, not a tensor or of a shape the
// adapter cannot read gives verdicts with status k_unsupported and the reason.
std::vector<TaskVerdict> judge_task(const TaskSpec& task, const c10::IValue& reference, const c10::IValue& target,
                                    const std::string& input);

// The leaf at `path` of `output` as float32 values (throws driftgate::Error naming
// the path and the leaves there are when it is missing or not a tensor).
TaskTensor task_tensor(const c10::IValue& output, const std::string& path);

}  // namespace driftgate

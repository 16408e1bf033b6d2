#include "runner/tier3.h"

#include <ATen/ATen.h>

#include "core/error.h"
#include "runner/tier1.h"

namespace driftgate {

std::vector<std::string> task_output_names(const TaskSpec& task) {
  if (task.kind != TaskKind::k_detection || !task.apply_nms) {
    return {task_output_name(task, NmsMode::k_stable)};
  }
  std::vector<std::string> names;
  for (NmsMode mode : task.nms) {
    names.push_back(task_output_name(task, mode));
  }
  return names;
}

TaskTensor task_tensor(const c10::IValue& output, const std::string& path) {
  std::string available;
  for (const OutputLeaf& leaf : flatten_output(output)) {
    if (leaf.path != path) {
      available += (available.empty() ? "" : ", ") + leaf.path;
      continue;
    }
    if (!leaf.value.isTensor()) {
      throw Error("output '" + path + "' is not a tensor (" + leaf.value.tagKind() + ")");
    }
    at::Tensor tensor = leaf.value.toTensor().detach().to(at::kCPU).to(at::kFloat).contiguous();
    TaskTensor result;
    result.shape = tensor.sizes().vec();
    const float* data = tensor.data_ptr<float>();
    result.values.assign(data, data + tensor.numel());
    return result;
  }
  throw Error("the model has no output '" + path + "' (its outputs: " + available + ")");
}

std::vector<TaskVerdict> judge_task(const TaskSpec& task, const c10::IValue& reference, const c10::IValue& target,
                                    const std::string& input) {
  try {
    std::vector<TaskTensor> reference_tensors;
    std::vector<TaskTensor> target_tensors;
    for (const std::string& path : task.outputs) {
      reference_tensors.push_back(task_tensor(reference, path));
      target_tensors.push_back(task_tensor(target, path));
    }
    return evaluate_task(task, reference_tensors, target_tensors, input);
  } catch (const Error& e) {
    std::vector<TaskVerdict> verdicts;
    for (const std::string& name : task_output_names(task)) {
      TaskVerdict verdict;
      verdict.output = name;
      verdict.status = CheckStatus::k_unsupported;
      const std::string message = e.what();
      verdict.message = message.rfind(task.origin, 0) == 0 ? message
                                                           : task.origin + ": task '" + to_string(task.kind) +
                                                                 "': " + message + "; fix the task's 'outputs' paths";
      verdicts.push_back(std::move(verdict));
    }
    return verdicts;
  }
}

}  // namespace driftgate

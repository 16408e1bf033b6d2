// JSON of the tier-3 parts of a check record (TaskResult, Mitigation), kept out
// of record.cc so each file stays one concept. Used by record.cc only.
#pragma once

#include <nlohmann/json.hpp>

#include "core/record.h"

namespace driftgate {

nlohmann::ordered_json task_result_to_json(const TaskResult& task);
// Throws driftgate::Error on a missing or mistyped field.
TaskResult task_result_from_json(const nlohmann::ordered_json& json);

nlohmann::ordered_json mitigation_to_json(const Mitigation& mitigation);
Mitigation mitigation_from_json(const nlohmann::ordered_json& json);

}  // namespace driftgate

// `driftgate run --mitigate`: the automatic mitigation search.
//
// For a target whose checks fail, it tries the fallbacks the paper recommends and
// LibTorch offers (force float32, native kernels instead of oneDNN, contiguous
// instead of channels-last, plain eager instead of graph rewriting, and for
// detection the stable NMS adapter), alone and in small combinations, smallest
// sets first. The smallest set that restores tier-1 agreement (every check passes)
// or tier-3 agreement (the task checks pass, when a task check failed) wins; among
// sets of one size, tier-1 before tier-3, then the cheapest in latency; it is recorded on every failing check of the
// target with its latency against the failing target, and printed.
// Torch-free: the forwards run through a callback (the runner's own experiment run).
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.h"
#include "core/record.h"

namespace driftgate {

enum class Fallback { k_fp32, k_onednn_off, k_contiguous, k_eager, k_stable_nms };

// "fp32", "onednn_off", "contiguous", "eager", "stable_nms".
const char* to_string(Fallback fallback);

// The fallbacks that change something for `target`: fp32 for another dtype or
// autocast, onednn_off where oneDNN is on, contiguous for channels-last, eager for a
// rewritten graph, stable_nms where `native_nms_failed` (a detection task's native
// NMS check failed).
std::vector<Fallback> applicable_fallbacks(const BackendSpec& target, bool native_nms_failed);

// Every subset of `fallbacks` with 1..max_size members: by size, then in the order given.
std::vector<std::vector<Fallback>> fallback_sets(const std::vector<Fallback>& fallbacks, size_t max_size);

// `target` with the backend fallbacks of `set` applied, named "<target>+fp32+onednn_off".
BackendSpec apply_fallbacks(const BackendSpec& target, const std::vector<Fallback>& set);

// Runs an experiment (the same inputs, other targets) and returns its records.
using VariantRunner = std::function<std::vector<CheckRecord>(const Experiment&)>;

// For each target of `experiment` with failing checks in `records` (failures that
// compared something: not crashes, skips, unsupported outputs or a nondeterministic
// reference), searches fallback sets of up to 3 members and sets `mitigation` on each
// of its failing records. Writes one line per target to `log`.
void mitigate_failures(const Experiment& experiment, std::vector<CheckRecord>& records, const VariantRunner& run,
                       std::ostream& log);

}  // namespace driftgate

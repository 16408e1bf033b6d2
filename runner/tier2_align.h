// Tier 2 alignment: which captured value of the target is which of the reference.
//
// Backends that change only runtime settings (threads, oneDNN, BLAS, channels-last,
// autocast) run the reference's graph: their values align by position, exactly.
// Backends that rewrite the graph (freeze, optimize_for_inference, XNNPACK) move,
// fuse and rename nodes, and naive name matching gave 20-34 false alarms per model.
// Those align at fusion-stable module boundaries: a key made of the producing
// module and the modules that consume the value; a target value whose node lost its
// callstack is matched on the consumer side alone. What is left is matched at block
// level (a leaf module stands for its parent block, where rewrites fuse conv + bn + relu
// and move callstacks between leaves), for values that leave their block only. Keys
// that occur a different number of times on the two sides match nothing. A reference
// value with no counterpart is "fused / not observable", never divergence.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runner/tier2_capture.h"

namespace driftgate {

enum class AlignmentKind { k_position, k_boundary };
const char* to_string(AlignmentKind kind);

struct Alignment {
  AlignmentKind kind = AlignmentKind::k_position;
  std::vector<std::optional<size_t>> target_of;  // per reference point: the target's point, if observed
  size_t observed = 0;                           // reference points with a counterpart
};

// "producing module -> consuming modules": the boundary key of a point.
std::string boundary_key(const CapturePoint& point);

// Position alignment when `same_graph` and both graphs have the same op kinds in the
// same order; boundary alignment otherwise.
Alignment align_points(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target,
                       bool same_graph);

// The reverse map: per target point, the reference point aligned with it.
std::vector<std::optional<size_t>> reference_of(const Alignment& alignment, size_t target_points);

}  // namespace driftgate

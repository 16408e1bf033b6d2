// Tier 2 alignment: which captured value of the target is the same function of the
// input as which value of the reference.
//
// Backends that change only runtime settings (threads, oneDNN, BLAS, channels-last,
// autocast, dtype) run the reference's graph: their values align by position, exactly.
// Backends that rewrite the graph (freeze, optimize_for_inference, XNNPACK) fold and
// fuse ops (conv + batch norm, conv + relu, add + relu), prepack weights and insert
// layout conversions, so some values of the reference no longer exist. Comparing a
// reference value with a target value that computes something else (a convolution's
// output before its batch norm with the folded convolution's output) is a false alarm;
// leaving a real value unobserved hides where a defect starts. So a pair is compared
// only where the two graphs are shown to compute the same thing, derived from the
// graphs themselves:
//
//  1. Nodes are matched by where they come from in the model's code (callstack and
//     source location, which graph passes keep when they rewrite a node). A matched
//     target node is unchanged when it is the same op on the same constant inputs
//     (weights compared by value); otherwise it changed (a folded convolution, a
//     prepacked one, a fused conv + relu that kept the relu's callstack). Target nodes
//     without a match are new (mkldnn convolutions, add + relu). Reference nodes without
//     a match were absorbed (a folded batch norm) or removed (dropout).
//  2. Reference value r and target value t are the same function of the input when
//     (a) the matched nodes upstream of r are exactly those upstream of t, and so are
//         those downstream, and
//     (b) every absorbed reference node sits on the same side of both cuts: an absorbed
//         node u can only live in a changed or new target node c that lies between
//         the matches of u's matched ancestors and of its nearest matched descendants;
//         u upstream of r needs all such c upstream of t, u not upstream of r needs
//         none of them upstream of t. An unchanged node absorbs nothing.
//     Where an absorbed node could live in more than one target node, the graphs
//     usually tell which (a new node of the same op, the node holding a weight of the
//     absorbed convolution's shape, folding into the node before, the only node both
//     inputs of an add reach): see find_absorbers. So the folded convolution's output
//     pairs with the batch norm's output (the batch norm can only be in the changed
//     convolution), never with the convolution's own output before the batch norm,
//     which is not observable.
//  3. Layout conversions (to_mkldnn, to_dense, ...) are the same values: never paired
//     themselves, never able to absorb an op.
// A reference value with no counterpart is "not observable", never divergent. Where
// more than one target value qualifies, none is the reference node's own match and
// they are not a chain (the last of which is taken), the value is not observed rather
// than guessed.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runner/tier2_capture.h"

namespace driftgate {

// k_onnx_scope: an ONNX Runtime target, paired at module exits (runner/tier2_onnx.h).
enum class AlignmentKind { k_position, k_boundary, k_onnx_scope };
const char* to_string(AlignmentKind kind);

struct Alignment {
  AlignmentKind kind = AlignmentKind::k_position;
  std::vector<std::optional<size_t>> target_of;  // per reference point: the target's point, if observed
  size_t observed = 0;                           // reference points with a counterpart
};

// Where a node comes from in the model's code (callstack, source location, which output):
// what matching two graphs' nodes goes by first.
std::string code_of(const CapturePoint& point);

// Position alignment when `same_graph` and both lists have the same ops from the same code
// in the same order; the same-function alignment above otherwise. The lists are the points
// of two graphs, or the runs of two forwards (unrolled_points). `target_code`, when given,
// holds code_of() of every node of the target's graph, run or not: a reference run whose node
// the target's graph has but did not run as often (another branch, other loop counts) pairs
// with nothing, never with another node that happens to compute alike.
Alignment align_points(const std::vector<CapturePoint>& reference, const std::vector<CapturePoint>& target,
                       bool same_graph, const std::set<std::string>* target_code = nullptr);

// The reverse map: per target point, the first reference point aligned with it (a
// removed identity op, such as dropout, leaves two reference values equal to one).
std::vector<std::optional<size_t>> reference_of(const Alignment& alignment, size_t target_points);

}  // namespace driftgate

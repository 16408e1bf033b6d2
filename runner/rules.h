// The verdict of a tolerance rule on one output, and the message that explains it.
//
// It exists so that a failure reads like PyTorch's assert_close and Polygraphy: how
// many elements mismatched, the greatest absolute and relative difference with the
// index and both values, what was allowed, and the minimum tolerance that would have
// passed, so the reader can tell at a glance whether the drift is rounding or a bug.
// Values print with 9 significant digits, so reference and target never look equal.
// Torch-free: the statistics come from runner/tier1.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/record.h"

namespace driftgate {

// The worst mismatching element under the rule (as assert_close reports it: only
// elements that fail count), and the largest |a-b|/|b| over all finite elements.
struct MismatchDetail {
  double abs = 0.0;
  std::vector<int64_t> abs_index;  // empty when nothing mismatched
  double abs_reference = 0.0;
  double abs_target = 0.0;
  double rel = 0.0;  // |a-b|/|b|, infinite where b == 0
  std::vector<int64_t> rel_index;
  double max_rel_unfloored = 0.0;  // Polygraphy's "minimum required" rel
};

// "" when the statistics pass `tolerance` (its rule applied to the recorded
// mismatches, or to the oracle errors for the oracle rule), else the message.
// `target_dtype` chooses the oracle rule's multiplier. The oracle rule needs
// stats.oracle; callers report its absence themselves.
std::string rule_failure(const Tier1Stats& stats, const MismatchDetail& detail, const Tolerance& tolerance,
                         const std::string& target_dtype);

// %.9g.
std::string format_value(double value);
// Python's tuple spelling of an index: "(0, 5)", "(3,)", "()".
std::string format_index(const std::vector<int64_t>& index);

}  // namespace driftgate

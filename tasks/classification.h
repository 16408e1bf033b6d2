// Tier 3 classification adapter: does the target give the same answer?
//
// Compares two logit matrices [rows, classes] row by row: top-1 agreement,
// top-k overlap, and every top-1 flip with the reference's logit margin between
// its own choice and the target's ("flip at a margin of 3e-6" ties a tier-1
// difference to a task change). Tie-aware: when the reference's logits of the two
// classes are within epsilon, the swap is a tie, not a disagreement. With labels,
// the accuracy of each side. Plain float buffers, no LibTorch: unit-tested anywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace driftgate {

struct ClassificationOptions {
  double epsilon = 0.0;  // reference logits within epsilon are ties
  int top_k = 5;         // clamped to the number of classes
};

struct ClassificationFlip {
  int64_t row = 0;
  int64_t reference_class = 0;
  int64_t target_class = 0;
  double reference_margin = 0.0;  // reference[reference_class] - reference[target_class] (>= 0)
};

struct ClassificationResult {
  int64_t rows = 0;
  int64_t top1_agree = 0;  // same top-1, or a tie swap
  int64_t tie_swaps = 0;   // different top-1 within epsilon of the reference's top
  double top1_agreement = 1.0;
  double topk_overlap = 1.0;                 // mean over rows of |topk(ref) ∩ topk(tgt)| / k
  int top_k = 0;                             // the k used
  std::vector<ClassificationFlip> flips;     // disagreements beyond epsilon, in row order
  std::optional<double> reference_accuracy;  // with labels
  std::optional<double> target_accuracy;
};

// The index of the largest value; the lowest index among equal values. NaN never wins.
int64_t argmax(const float* values, int64_t count);

// The k largest, by value descending then index ascending.
std::vector<int64_t> top_k_indices(const float* values, int64_t count, int k);

// `reference` and `target` hold rows * classes floats, row-major. `labels`, when
// not null, holds `rows` class indices. Throws driftgate::Error on rows or classes < 1,
// or a label count other than rows.
ClassificationResult compare_classification(const float* reference, const float* target, int64_t rows, int64_t classes,
                                            const ClassificationOptions& options,
                                            const std::vector<int64_t>* labels = nullptr);

}  // namespace driftgate

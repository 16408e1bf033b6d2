#include "tasks/classification.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace driftgate {

int64_t argmax(const float* values, int64_t count) {
  int64_t best = 0;
  for (int64_t i = 1; i < count; ++i) {
    if (std::isnan(values[best]) || values[i] > values[best]) {
      best = std::isnan(values[i]) ? best : i;
    }
  }
  return best;
}

std::vector<int64_t> top_k_indices(const float* values, int64_t count, int k) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  const auto key = [values](int64_t i) { return std::isnan(values[i]) ? -INFINITY : values[i]; };
  const size_t keep = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [&](int64_t a, int64_t b) { return key(a) > key(b) || (key(a) == key(b) && a < b); });
  order.resize(keep);
  return order;
}

ClassificationResult compare_classification(const float* reference, const float* target, int64_t rows, int64_t classes,
                                            const ClassificationOptions& options, const std::vector<int64_t>* labels) {
  if (rows < 1 || classes < 1) {
    throw Error("classification needs logits of shape [rows, classes] with both at least 1, got [" +
                std::to_string(rows) + ", " + std::to_string(classes) + "]");
  }
  if (labels && static_cast<int64_t>(labels->size()) != rows) {
    throw Error("the labels give " + std::to_string(labels->size()) + " classes for a batch of " +
                std::to_string(rows) + " rows; give one class per row");
  }
  ClassificationResult result;
  result.rows = rows;
  result.top_k = static_cast<int>(std::min<int64_t>(options.top_k, classes));
  double overlap_sum = 0.0;
  int64_t reference_correct = 0;
  int64_t target_correct = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const float* ref = reference + row * classes;
    const float* tgt = target + row * classes;
    const int64_t ref_top = argmax(ref, classes);
    const int64_t tgt_top = argmax(tgt, classes);
    const double margin = static_cast<double>(ref[ref_top]) - static_cast<double>(ref[tgt_top]);
    if (ref_top == tgt_top) {
      ++result.top1_agree;
    } else if (margin <= options.epsilon) {
      ++result.top1_agree;
      ++result.tie_swaps;
    } else {
      result.flips.push_back({row, ref_top, tgt_top, margin});
    }
    std::vector<int64_t> ref_k = top_k_indices(ref, classes, result.top_k);
    std::vector<int64_t> tgt_k = top_k_indices(tgt, classes, result.top_k);
    std::sort(ref_k.begin(), ref_k.end());
    std::sort(tgt_k.begin(), tgt_k.end());
    std::vector<int64_t> common;
    std::set_intersection(ref_k.begin(), ref_k.end(), tgt_k.begin(), tgt_k.end(), std::back_inserter(common));
    overlap_sum += static_cast<double>(common.size()) / static_cast<double>(result.top_k);
    if (labels) {
      reference_correct += ref_top == (*labels)[static_cast<size_t>(row)] ? 1 : 0;
      target_correct += tgt_top == (*labels)[static_cast<size_t>(row)] ? 1 : 0;
    }
  }
  result.top1_agreement = static_cast<double>(result.top1_agree) / static_cast<double>(rows);
  result.topk_overlap = overlap_sum / static_cast<double>(rows);
  if (labels) {
    result.reference_accuracy = static_cast<double>(reference_correct) / static_cast<double>(rows);
    result.target_accuracy = static_cast<double>(target_correct) / static_cast<double>(rows);
  }
  return result;
}

}  // namespace driftgate

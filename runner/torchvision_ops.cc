#include "runner/torchvision_ops.h"

#include <ATen/Functions.h>
#include <torch/library.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace driftgate {
namespace {

template <typename Scalar>
std::vector<int64_t> nms_kernel(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  const int64_t n = boxes.size(0);
  at::Tensor dense_boxes = boxes.contiguous();
  at::Tensor dense_scores = scores.contiguous();
  const Scalar* box = dense_boxes.data_ptr<Scalar>();
  const Scalar* score = dense_scores.data_ptr<Scalar>();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [score](int64_t a, int64_t b) { return score[a] > score[b]; });
  std::vector<Scalar> area(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    area[i] = (box[4 * i + 2] - box[4 * i + 0]) * (box[4 * i + 3] - box[4 * i + 1]);
  }
  std::vector<char> suppressed(static_cast<size_t>(n), 0);
  std::vector<int64_t> kept;
  for (size_t a = 0; a < order.size(); ++a) {
    const int64_t i = order[a];
    if (suppressed[i]) {
      continue;
    }
    kept.push_back(i);
    for (size_t b = a + 1; b < order.size(); ++b) {
      const int64_t j = order[b];
      if (suppressed[j]) {
        continue;
      }
      const Scalar width =
          std::max<Scalar>(0, std::min(box[4 * i + 2], box[4 * j + 2]) - std::max(box[4 * i + 0], box[4 * j + 0]));
      const Scalar height =
          std::max<Scalar>(0, std::min(box[4 * i + 3], box[4 * j + 3]) - std::max(box[4 * i + 1], box[4 * j + 1]));
      const Scalar intersection = width * height;
      const Scalar iou = intersection / (area[i] + area[j] - intersection);
      if (iou > iou_threshold) {
        suppressed[j] = 1;
      }
    }
  }
  return kept;
}

}  // namespace

at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, "torchvision::nms: boxes must be [N, 4], got ", boxes.sizes());
  TORCH_CHECK(scores.dim() == 1 && scores.size(0) == boxes.size(0), "torchvision::nms: scores must be [N] with N ",
              boxes.size(0), ", got ", scores.sizes());
  TORCH_CHECK(boxes.scalar_type() == scores.scalar_type(), "torchvision::nms: boxes and scores must share a dtype");
  at::Tensor cpu_boxes = boxes.cpu();
  at::Tensor cpu_scores = scores.cpu();
  std::vector<int64_t> kept;
  if (cpu_boxes.scalar_type() == at::kDouble) {
    kept = nms_kernel<double>(cpu_boxes, cpu_scores, iou_threshold);
  } else {
    // torchvision's CPU kernel takes float and double only; other dtypes are compared in float32.
    kept = nms_kernel<float>(cpu_boxes.to(at::kFloat), cpu_scores.to(at::kFloat), iou_threshold);
  }
  return at::tensor(kept, at::kLong).to(boxes.device());
}

void register_torchvision_ops() {}

}  // namespace driftgate

TORCH_LIBRARY(torchvision, m) {
  m.def("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor", &driftgate::nms);
}

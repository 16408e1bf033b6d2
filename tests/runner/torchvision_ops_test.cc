#include "runner/torchvision_ops.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/script.h>

#include "runner/backend.h"
#include "test_models.h"

namespace driftgate {
namespace {

// The definition of NMS, written the slow way.
std::vector<int64_t> brute_force_nms(const at::Tensor& boxes, const at::Tensor& scores, double threshold) {
  auto box = boxes.accessor<float, 2>();
  auto score = scores.accessor<float, 1>();
  std::vector<int64_t> order(static_cast<size_t>(boxes.size(0)));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  std::vector<int64_t> kept;
  for (int64_t i : order) {
    bool keep = true;
    for (int64_t k : kept) {
      float w = std::max(0.0f, std::min(box[i][2], box[k][2]) - std::max(box[i][0], box[k][0]));
      float h = std::max(0.0f, std::min(box[i][3], box[k][3]) - std::max(box[i][1], box[k][1]));
      float inter = w * h;
      float area_i = (box[i][2] - box[i][0]) * (box[i][3] - box[i][1]);
      float area_k = (box[k][2] - box[k][0]) * (box[k][3] - box[k][1]);
      keep = keep && !(inter / (area_k + area_i - inter) > threshold);
    }
    if (keep) {
      kept.push_back(i);
    }
  }
  return kept;
}

TEST(TorchvisionOps, NmsMatchesTheDefinition) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(7);
  at::Tensor corners = at::rand({200, 2}, generator) * 100;
  at::Tensor sizes = at::rand({200, 2}, generator) * 30 + 1;
  at::Tensor boxes = at::cat({corners, corners + sizes}, 1);
  at::Tensor scores = at::rand({200}, generator);
  for (double threshold : {0.1, 0.5, 0.9}) {
    at::Tensor kept = nms(boxes, scores, threshold);
    EXPECT_EQ(kept.scalar_type(), at::kLong);
    std::vector<int64_t> got(kept.data_ptr<int64_t>(), kept.data_ptr<int64_t>() + kept.numel());
    EXPECT_EQ(got, brute_force_nms(boxes, scores, threshold)) << threshold;
  }
  EXPECT_EQ(nms(at::zeros({0, 4}), at::zeros({0}), 0.5).numel(), 0);
}

TEST(TorchvisionOps, TiesKeepTheLowerIndexFirst) {
  at::Tensor boxes =
      at::tensor({0.0f, 0.0f, 10.0f, 10.0f, 0.0f, 0.0f, 10.0f, 10.0f, 50.0f, 50.0f, 60.0f, 60.0f}).reshape({3, 4});
  at::Tensor scores = at::tensor({0.5f, 0.5f, 0.5f});
  at::Tensor kept = nms(boxes, scores, 0.5);
  EXPECT_EQ(std::vector<int64_t>(kept.data_ptr<int64_t>(), kept.data_ptr<int64_t>() + kept.numel()),
            (std::vector<int64_t>{0, 2}));
}

// Resolves "torchvision.nms" in TorchScript source defined from C++.
struct TorchvisionResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name, torch::jit::GraphFunction&,
                                                         const torch::jit::SourceRange&) override {
    if (name == "torchvision") {
      return std::make_shared<torch::jit::BuiltinModule>("torchvision");
    }
    if (name == "torch") {
      return std::make_shared<torch::jit::BuiltinModule>("aten");
    }
    return nullptr;
  }
};

TEST(TorchvisionOps, ModelsCallingTorchvisionNmsLoadAndRun) {
  std::string dir = testing::fresh_dir("torchvision_nms");
  torch::jit::Module module("Detector");
  module.define(
      "def forward(self, x):\n"
      "    boxes = torch.cat([x, x + 5.0], 1)\n"
      "    return torchvision.nms(boxes, x[:, 0], 0.5)\n",
      std::make_shared<TorchvisionResolver>());
  module.save(dir + "/detector.pt");
  BackendSpec spec;
  spec.name = "cpu_fp32";
  BackendInstance instance = BackendInstance::load(spec, BackendSource{"x.yaml", dir + "/detector.pt", 1});
  at::Tensor input = at::tensor({0.0f, 0.0f, 1.0f, 1.0f, 40.0f, 40.0f}).reshape({3, 2});
  at::Tensor kept = instance.forward(input).toTensor();
  // Box 2 (score 40) first; box 1 overlaps box 0 (IoU 16/34 < 0.5), so all stay.
  EXPECT_EQ(std::vector<int64_t>(kept.data_ptr<int64_t>(), kept.data_ptr<int64_t>() + kept.numel()),
            (std::vector<int64_t>{2, 1, 0}));
}

}  // namespace
}  // namespace driftgate

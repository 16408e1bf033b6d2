// driftgate's own torchvision::nms, so full torchvision detection models load.
//
// TorchScript files of torchvision's detection models (SSDlite, RetinaNet, ...)
// call torchvision::nms; plain LibTorch does not have it and refuses the file at
// load ("Unknown builtin op: torchvision::nms"). Linking libtorchvision would tie
// driftgate to one torchvision build, so the runner registers a CPU implementation
// with torchvision's exact schema. It is deterministic: ties in score keep the
// lower index first (torchvision's own kernel uses an unstable sort).
#pragma once

#include <ATen/core/Tensor.h>

namespace driftgate {

// Greedy non-maximum suppression of `boxes` ([N, 4], x1 y1 x2 y2) by `scores`
// ([N]): the int64 indices kept, by decreasing score; a box is dropped when its
// IoU with a kept one exceeds `iou_threshold`.
at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold);

// Makes sure the operator registration (a static initializer in this file) is
// linked into the binary; BackendInstance::load calls it.
void register_torchvision_ops();

}  // namespace driftgate

"""Detection fixtures for driftgate's tier 3 (imported by tools/export_models.py).

SSDlite320-MobileNetV3 and RetinaNet (torchvision's, on a ResNet18-FPN backbone to keep
the demo fast on two cores) with seeded random weights (no downloads) at a small input
(128x128), each exported twice:
  *_head.pt  backbone + head as raw outputs, traced: (box deltas [1, N, 4], class
             logits [1, N, C], anchors [N, 4] xyxy) for driftgate's decoder and NMS;
  *_head.onnx (SSDlite's, where export_onnx is given: onnx and onnxruntime are installed)
             the same head for the onnxruntime backends;
  *.pt       the full torchvision model, scripted: forward(List[Tensor]) returns
             (losses, detections) and uses torchvision::nms, which driftgate registers.
And the tie fixture (tie_detector.pt): 16 pairs of overlapping boxes with tied,
quantized scores whose pre-NMS order comes from a stable sort of raw logits that
differ by 1e-5 within a pair; float32 sees the difference, bfloat16 rounds it
away, so `native` NMS keeps different boxes on the two and `stable` NMS the same.
"""
import os

import torch
import torch.nn as nn

SIZE = 128
CLASSES = 5


class RawHead(nn.Module):
    """Backbone + head of a torchvision detector, with its anchors for SIZE x SIZE."""

    def __init__(self, model, anchors):
        super().__init__()
        self.backbone = model.backbone
        self.head = model.head
        self.register_buffer("anchors", anchors)

    def forward(self, x):
        features = list(self.backbone(x).values())
        out = self.head(features)
        return out["bbox_regression"], out["cls_logits"], self.anchors


def anchors_of(model, example):
    from torchvision.models.detection.image_list import ImageList
    with torch.no_grad():
        features = list(model.backbone(example).values())
        return model.anchor_generator(ImageList(example, [(SIZE, SIZE)]), features)[0]


def export_head(model, name, example, out, log, export_onnx=None):
    """NAME_head.pt (and, given export_onnx, NAME_head.onnx: the same head for the onnxruntime
    backends): the detector's backbone + head, traced at example's size."""
    model.eval()
    head = RawHead(model, anchors_of(model, example)).eval()
    with torch.no_grad():
        traced = torch.jit.trace(head, example, check_trace=False)
    path = os.path.join(out, f"{name}_head.pt")
    traced.save(path)
    log(f"{path}: raw head, {head.anchors.shape[0]} anchors")
    if export_onnx is not None:
        export_onnx(head, example, os.path.join(out, f"{name}_head.onnx"), output_of=lambda y: y[1])


def export_pair(model, name, example, out, log, export_onnx=None):
    export_head(model, name, example, out, log, export_onnx)
    scripted = torch.jit.script(model)
    path = os.path.join(out, f"{name}.pt")
    scripted.save(path)
    log(f"{path}: full model (List[Tensor] input)")


def demo_ssdlite(generator, randomize_batchnorm, calibrate_batchnorm):
    """SSDlite with random affine BatchNorm parameters and running statistics measured on a
    random batch through backbone + head: with random statistics alone its raw outputs were
    the same for every image (they differed by 3e-9; tests/tools/export_models_test.py)."""
    from torchvision.models.detection import ssdlite320_mobilenet_v3_large
    ssd = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=CLASSES)
    ssd.transform.fixed_size = (SIZE, SIZE)
    ssd.transform.min_size = (SIZE,)
    ssd.transform.max_size = SIZE
    randomize_batchnorm(ssd, generator)
    calibrate_batchnorm(RawHead(ssd, torch.zeros(1, 4)), torch.randn(4, 3, SIZE, SIZE, generator=generator))
    return ssd


def export_detection(out, log, randomize_batchnorm, calibrate_batchnorm, export_onnx=None):
    from torchvision.models.detection import RetinaNet
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7
    generator = torch.Generator().manual_seed(3)
    torch.manual_seed(3)
    example = torch.rand(1, 3, SIZE, SIZE, generator=generator)
    ssd = demo_ssdlite(generator, randomize_batchnorm, calibrate_batchnorm)
    export_pair(ssd, "ssdlite", example, out, log, export_onnx)  # and, given export_onnx, ssdlite_head.onnx
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, returned_layers=[2, 3, 4],
                                   extra_blocks=LastLevelP6P7(256, 256))
    retina = RetinaNet(backbone, num_classes=CLASSES, min_size=SIZE, max_size=SIZE)
    with torch.no_grad():
        # The focal-loss prior (-4.6) puts every random score under the 0.05 threshold.
        retina.head.classification_head.cls_logits.bias.zero_()
    export_pair(retina, "retinanet", example, out, log)


class TieDetector(nn.Module):
    """The same fixture as tests/runner/tier3_test.cc's save_tie_detector."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.arange(48, dtype=torch.float32).sin().mul(0.3).reshape(1, 3, 4, 4),
                                   requires_grad=False)
        levels = [0.5, 0.625, 0.75, 0.875]
        delta, boxes, scores = [], [], []
        for k in range(16):
            delta.append(1e-5 if k % 2 == 0 else -1e-5)
            x, y = float((k % 4) * 40), float((k // 4) * 40)
            for shift in (0.0, 8.0):
                boxes.append([x + shift, y, x + shift + 20.0, y + 20.0])
                scores.append(levels[k % 4])
        self.register_buffer("delta", torch.tensor(delta))
        self.register_buffer("boxes", torch.tensor(boxes))
        self.register_buffer("scores", torch.tensor(scores))

    def forward(self, x):
        base = torch.conv2d(x, self.weight, None, [4, 4]).flatten()
        raw = torch.stack([base, base + self.delta], 1).flatten()
        _, order = torch.sort(raw, stable=True, dim=0, descending=True)
        return self.boxes.index_select(0, order), self.scores.index_select(0, order)


def export_tie(out, log):
    path = os.path.join(out, "tie_detector.pt")
    torch.jit.script(TieDetector().eval()).save(path)
    log(f"{path}: tie fixture (16 pairs of tied boxes)")

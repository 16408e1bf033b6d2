#!/usr/bin/python3
"""The demo exporter's models must give O(1) outputs that depend on the input.

Seeded random init makes several torchvision models degenerate: outputs ~1e-14
(efficientnet_b0), ~1e-9 (mobilenet_v3_small) or exactly 0 (ViT), and random BatchNorm
statistics plus a rescaled head only hide it: the outputs become O(1) but the same for
every image (they differed by ~1e-7), so every backend agrees and a drift test passes
vacuously. Here each model is prepared as tools/export_models.py prepares the demo's and
run on two inputs it has never seen; the outputs must be O(1) and differ by O(1).
Run by CTest with Debian's /usr/bin/python3 (python3-torch, python3-torchvision).
"""
import os
import sys
import unittest

import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import export_models  # noqa: E402


def outputs(model, size, output_of=lambda y: y):
    """The model's outputs on a uniform and a normal image, neither seen while preparing it."""
    model.eval()  # as export() traces it: BatchNorm with its running statistics
    first = torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(5))
    second = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        return output_of(model(first)).float(), output_of(model(second)).float()


class DemoModelsTest(unittest.TestCase):
    def setUp(self):
        # torchvision initializes weights from the global generator, whose seed is random per
        # process; tools/export_models.py seeds it, and so does each test here.
        torch.manual_seed(0)

    def assert_informative(self, name, first, second):
        scale = float(first.std())
        spread = float((first - second).std())
        self.assertGreater(scale, 0.2, f"{name}: output std {scale:.3g} is not O(1)")
        self.assertLess(scale, 5.0, f"{name}: output std {scale:.3g} is not O(1)")
        self.assertGreater(spread, 0.1 * scale,
                           f"{name}: two different inputs give outputs that differ by {spread:.3g} "
                           f"(output std {scale:.3g}): the model ignores its input")

    def classifier(self, name_or_model, size):
        generator = torch.Generator().manual_seed(0)
        model = export_models.demo_classifier(name_or_model, generator, size)
        example = torch.randn(1, 3, size, size, generator=generator)
        model.eval()  # export() does this before rescale_head
        export_models.rescale_head(model, example, lambda y: y)
        return model

    def test_mobilenet_v3_small(self):
        self.assert_informative("mobilenet_v3_small", *outputs(self.classifier("mobilenet_v3_small", 224), 224))

    def test_efficientnet_b0(self):
        self.assert_informative("efficientnet_b0", *outputs(self.classifier("efficientnet_b0", 160), 160))

    def test_resnet18(self):
        self.assert_informative("resnet18", *outputs(self.classifier("resnet18", 160), 160))

    def test_vision_transformer_with_its_zero_head(self):
        # vit_b_16's architecture at a size a test can afford; torchvision zero-initializes its head.
        torch.manual_seed(0)
        vit = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                   hidden_dim=32, mlp_dim=64, num_classes=100)
        self.assertFalse(vit.heads.head.weight.any(), "the case this test is about: an all-zero head")
        self.assert_informative("VisionTransformer", *outputs(self.classifier(vit, 32), 32))

    def test_ssdlite_raw_head_as_export_detection_prepares_it(self):
        import export_detection
        ssd = export_detection.demo_ssdlite(torch.Generator().manual_seed(3), export_models.randomize_batchnorm,
                                            export_models.calibrate_batchnorm)
        head = export_detection.RawHead(ssd, torch.zeros(1, 4))
        size = export_detection.SIZE
        for index, what in ((0, "box deltas"), (1, "class logits")):
            first, second = outputs(head, size, lambda y, i=index: y[i])
            spread = float((first - second).std())
            self.assertGreater(spread, 0.01, f"ssdlite {what}: two different inputs differ by {spread:.3g}")

    def test_lraspp_segmentation_as_export_demo_prepares_it(self):
        generator = torch.Generator().manual_seed(0)
        seg = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
        export_models.randomize_batchnorm(seg, generator)
        export_models.calibrate_batchnorm(seg, torch.randn(4, 3, 128, 128, generator=generator))
        out = lambda y: y["out"]  # noqa: E731
        seg.eval()
        export_models.rescale_head(seg, torch.randn(1, 3, 128, 128, generator=generator), out)
        self.assert_informative("lraspp_mobilenet_v3_large", *outputs(seg, 128, out))


if __name__ == "__main__":
    torch.set_num_threads(1)
    unittest.main(verbosity=2)

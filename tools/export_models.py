#!/usr/bin/python3
"""Exports the TorchScript models driftgate's demo and tests run on.

Models are generated, never committed: real torchvision architectures with seeded
random weights. Seeded random init gives degenerate outputs for several models
(efficientnet_b0 ~1e-14, mobilenet_v3_small ~2e-9, vit_b_16 exactly 0), which would
make any tolerance pass, so every BatchNorm gets random affine parameters and, for
the demo models, running statistics measured on a random batch (calibrate_batchnorm),
a zero-initialized head (ViT's) gets random weights, and the head is rescaled so
outputs are O(1) and depend on the input (tests/tools/export_models_test.py).

Usage (Debian's interpreter, which has python3-torch and python3-torchvision):
  /usr/bin/python3 tools/export_models.py demo  --out models/      # the demo suite (and, with torch >= 2.6,
                                                                   # AOTInductor packages: NAME.pt2)
  /usr/bin/python3 tools/export_models.py test  --out DIR          # tiny models for tests
  /usr/bin/python3 tools/export_models.py perturb IN.pt OUT.pt [--scale 1.01] [--parameter NAME]
  /usr/bin/python3 tools/export_models.py image --out FILE.png [--size 96] [--seed 0]
  /usr/bin/python3 tools/export_models.py detection --out models/  # SSDlite, RetinaNet, tie fixture (tier 3)
  /usr/bin/python3 tools/export_models.py tie --out DIR            # the tie fixture alone (tests)
  /usr/bin/python3 tools/export_models.py digits --out models/     # a CNN trained on scikit-learn's digits,
                                                                   # test images and their labels (tools/export_digits.py)
  /usr/bin/python3 tools/export_models.py photos --out models/images  # skimage.data's chelsea and astronaut
"""
import argparse
import os
import sys
import zlib
import struct

import torch
import torch.nn as nn


def log(message):
    print(f"export_models: {message}", file=sys.stderr)


def randomize_batchnorm(model, generator):
    """Gives every BatchNorm non-trivial statistics so eval-mode outputs are not degenerate."""
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            n = module.num_features
            with torch.no_grad():
                module.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
                if module.affine:
                    module.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                    module.bias.copy_(torch.randn(n, generator=generator) * 0.1)


def calibrate_batchnorm(model, batch):
    """Sets every BatchNorm's running statistics to those its input has when `batch` runs.

    Random statistics alone leave deep models almost input-independent: with them, two
    different images gave mobilenet_v3_small outputs (std 1) that differed by 3e-7,
    efficientnet_b0 by 2e-7 and lraspp's by 0.004, so every backend agreed on a constant
    and the demo measured nothing. With measured statistics each layer passes an O(1),
    input-dependent signal on, as in a trained network. Dropout and stochastic depth stay
    in eval mode; affine parameters are kept."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    momenta = [m.momentum for m in norms]
    model.eval()
    for module in norms:
        module.reset_running_stats()
        module.momentum = None  # a cumulative average: after one batch, exactly its statistics
        module.train()
    with torch.no_grad():
        model(batch)
    for module, momentum in zip(norms, momenta):
        module.momentum = momentum
    model.eval()


def last_linear(model):
    linears = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    return linears[-1]


def rescale_head(model, example, output_of):
    """Scales the last layer so the output's standard deviation is about 1."""
    head = last_linear(model)
    with torch.no_grad():
        if not head.weight.any():
            # torchvision's ViT starts with an all-zero head: every output would be exactly 0.
            generator = torch.Generator().manual_seed(0)
            fan_in = head.weight[0].numel()
            head.weight.copy_(torch.randn(head.weight.shape, generator=generator) * fan_in**-0.5)
        std = float(output_of(model(example)).float().std())
        if std == 0.0 or std != std:
            raise RuntimeError("model output is constant even after BatchNorm randomization")
        head.weight.mul_(1.0 / std)
        if head.bias is not None:
            head.bias.mul_(1.0 / std)
        return float(output_of(model(example)).float().std())


def export(model, example, path, output_of=lambda y: y, strict=True):
    model.eval()
    std = rescale_head(model, example, output_of)
    with torch.no_grad():
        traced = torch.jit.trace(model, example, strict=strict, check_trace=False)
    traced.save(path)
    log(f"{path}: output std {std:.3f}")


def can_compile_aoti():
    """AOTInductor packages (the aoti backend) need torch >= 2.6 with a C++ compiler and
    Python's headers (Debian 13: python3-dev, python3-setuptools, g++; tools/debian13.sh)."""
    inductor = getattr(torch, "_inductor", None)
    if inductor is None:
        try:
            import torch._inductor as inductor
        except ImportError:
            return False
    return hasattr(inductor, "aoti_compile_and_package")


def export_aoti(model, example, path):
    """The model's AOTInductor package for the aoti backend: torch.export of the same eager
    model (and weights) the TorchScript file was traced from, compiled for the CPU at
    example's shape. Call it after export(), which rescales the head."""
    model.eval()
    with torch.no_grad():
        program = torch.export.export(model, (example,))
        torch._inductor.aoti_compile_and_package(program, package_path=path)
    log(f"{path}: AOTInductor package")


class TinyConvNet(nn.Module):
    """conv-bn-relu twice, pool, linear: every backend driftgate has changes its numerics."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1, stride=2), nn.BatchNorm2d(16), nn.ReLU())
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


class TinyDictNet(nn.Module):
    """Returns a dict, as detection and segmentation models do: each key must be compared."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
        self.seg = nn.Conv2d(4, 3, 1)
        self.cls = nn.Linear(4, 5)

    def forward(self, x):
        f = self.body(x)
        return {"logits": self.cls(f.mean(dim=(2, 3))), "mask": self.seg(f)}


def export_demo(out):
    import torchvision
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    example = torch.randn(1, 3, 224, 224, generator=generator)
    aoti = can_compile_aoti()  # torch >= 2.6: also each model's package for the aoti backend
    for name in ("resnet18", "mobilenet_v3_small"):
        model = demo_classifier(name, generator)
        export(model, example, os.path.join(out, f"{name}.pt"))
        if aoti:
            export_aoti(model, example, os.path.join(out, f"{name}.pt2"))
    seg = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    randomize_batchnorm(seg, generator)
    calibrate_batchnorm(seg, torch.randn(4, 3, 160, 160, generator=generator))
    small = torch.randn(1, 3, 160, 160, generator=generator)
    export(seg, small, os.path.join(out, "lraspp_mobilenet_v3_large.pt"), output_of=lambda y: y["out"], strict=False)
    if aoti:
        export_aoti(seg, small, os.path.join(out, "lraspp_mobilenet_v3_large.pt2"))


def demo_classifier(name_or_model, generator, size=224):
    """A torchvision classifier (a name, or a model already built) with random affine BatchNorm
    parameters and running statistics measured on a random batch of `size`x`size` images."""
    import torchvision
    model = name_or_model
    if isinstance(name_or_model, str):
        model = getattr(torchvision.models, name_or_model)(weights=None)
    randomize_batchnorm(model, generator)
    calibrate_batchnorm(model, torch.randn(8, 3, size, size, generator=generator))
    return model


def export_test(out):
    generator = torch.Generator().manual_seed(1)
    torch.manual_seed(1)
    example = torch.randn(1, 3, 16, 16, generator=generator)
    for name, model in (("tiny_conv", TinyConvNet()), ("tiny_dict", TinyDictNet())):
        randomize_batchnorm(model, generator)
        output_of = (lambda y: y["logits"]) if name == "tiny_dict" else (lambda y: y)
        export(model, example, os.path.join(out, f"{name}.pt"), output_of=output_of, strict=name != "tiny_dict")


def perturb(source, target, scale, only=None):
    """Multiplies one floating-point parameter by `scale`: a 'changed model' for tests.

    The first one, or the one named `only` ("layer2.0.conv1.weight"): tier 2's fixture,
    a model whose divergence starts at one known layer (`driftgate explain --target-model`)."""
    module = torch.jit.load(source)
    names = [name for name, parameter in module.named_parameters() if parameter.is_floating_point()]
    if only is not None and only not in names:
        raise SystemExit(f"export_models: {source} has no floating-point parameter '{only}' (e.g. {', '.join(names[:5])})")
    for name, parameter in module.named_parameters():
        if parameter.is_floating_point() and (only is None or name == only):
            with torch.no_grad():
                parameter.mul_(scale)
            module.save(target)
            log(f"{target}: scaled {name} by {scale}")
            return
    raise RuntimeError(f"{source} has no floating-point parameter")


def write_png(path, size, seed):
    """A deterministic RGB test image (gradients and a disc), PNG without any imaging library."""
    g = torch.Generator().manual_seed(seed)
    ys, xs = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    cx, cy = (torch.rand(2, generator=g) * size).tolist()
    disc = ((xs - cx) ** 2 + (ys - cy) ** 2) < (size / 4) ** 2
    r = (xs * 255 // max(1, size - 1)).to(torch.uint8)
    gch = (ys * 255 // max(1, size - 1)).to(torch.uint8)
    b = torch.where(disc, 220, 40).to(torch.uint8)
    pixels = torch.stack([r, gch, b], dim=-1)
    raw = b"".join(b"\x00" + bytes(pixels[y].flatten().tolist()) for y in range(size))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("demo", "test"):
        p = sub.add_parser(name)
        p.add_argument("--out", required=True)
    for name in ("digits", "photos"):
        p = sub.add_parser(name)
        p.add_argument("--out", required=True)
    for name in ("detection", "tie"):
        p = sub.add_parser(name)
        p.add_argument("--out", required=True)
    p = sub.add_parser("perturb")
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--scale", type=float, default=1.01)
    p.add_argument("--parameter", default=None, help="the parameter to scale (default: the first floating-point one)")
    p = sub.add_parser("image")
    p.add_argument("--out", required=True)
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.command in ("demo", "test"):
        os.makedirs(args.out, exist_ok=True)
        (export_demo if args.command == "demo" else export_test)(args.out)
    elif args.command in ("digits", "photos"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from export_digits import export_digits, export_photos
        os.makedirs(args.out, exist_ok=True)
        (export_digits if args.command == "digits" else export_photos)(args.out, log)
    elif args.command in ("detection", "tie"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from export_detection import export_detection, export_tie
        os.makedirs(args.out, exist_ok=True)
        if args.command == "detection":
            export_detection(args.out, log, randomize_batchnorm, calibrate_batchnorm)
        export_tie(args.out, log)
    elif args.command == "perturb":
        perturb(args.source, args.target, args.scale, args.parameter)
    else:
        write_png(args.out, args.size, args.seed)


if __name__ == "__main__":
    main()

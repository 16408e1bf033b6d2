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
                                                                   # AOTInductor packages: NAME.pt2; with
                                                                   # onnx and onnxruntime, ONNX files: NAME.onnx)
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
import time
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


def can_export_onnx():
    """ONNX files (the onnxruntime backends) need the onnx and onnxruntime Python packages
    (Debian 13: python3-onnx, python3-onnxruntime; tools/debian13.sh). Debian 12 has neither."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


ONNX_OPSET = 17
ONNX_SPEC_KEY = "driftgate_out_spec"


def plain_output(value):
    """The output as the TorchScript file returns it: OrderedDicts (torchvision's segmentation
    models) become dicts, so the tree spec names builtins.dict, tuples stay tuples."""
    if isinstance(value, dict):
        return {key: plain_output(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(plain_output(item) for item in value)
    return value


def leaf_paths(value, path="out"):
    """driftgate's names for the output's tensors (runner/tier1.cc: out, out[0], out['boxes']), in
    torch.utils._pytree's flattening order (dicts in insertion order, as the ONNX exporter's)."""
    if isinstance(value, dict):
        return [name for key, item in value.items() for name in leaf_paths(item, f"{path}['{key}']")]
    if isinstance(value, (tuple, list)):
        return [name for i, item in enumerate(value) for name in leaf_paths(item, f"{path}[{i}]")]
    return [path]


def export_onnx(model, example, path, output_of=lambda y: y):
    """The model's ONNX file for the onnxruntime backends: torch.onnx.export (the TorchScript-based
    exporter, opset 17, fixed shapes: example's) of the same eager model and weights the
    TorchScript file was traced from; call it after export(), which rescales the head. The graph
    input is "input"; its outputs are named by driftgate's output paths (out, out[0],
    out['out']), and the metadata key driftgate_out_spec holds the TorchScript output's
    structure (torch.utils._pytree.treespec_dumps) to rebuild it from the flat outputs in the
    graph's output order. Checked once with onnxruntime: each output must be the eager one
    (loosely: the exporter folds BatchNorm into the convolutions)."""
    import onnx
    import onnxruntime
    from torch.utils import _pytree as pytree
    started = time.monotonic()
    model.eval()
    with torch.no_grad():
        eager = plain_output(model(example))
    flat, spec = pytree.tree_flatten(eager)
    names = leaf_paths(eager)
    if len(names) != len(flat) or not all(isinstance(t, torch.Tensor) for t in flat):
        raise RuntimeError(f"{path}: the output's leaves are not all tensors ({pytree.treespec_dumps(spec)})")
    with torch.no_grad():
        torch.onnx.export(model, (example,), path, opset_version=ONNX_OPSET, input_names=["input"],
                          output_names=names, dynamo=False)
    proto = onnx.load(path)
    graph_outputs = [output.name for output in proto.graph.output]
    if graph_outputs != names:
        raise RuntimeError(f"{path}: the ONNX graph's outputs are {graph_outputs}, expected {names}")
    entry = proto.metadata_props.add()
    entry.key, entry.value = ONNX_SPEC_KEY, pytree.treespec_dumps(spec)
    onnx.save(proto, path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    results = session.run(None, {"input": example.numpy()})
    for name, expected, got in zip(names, flat, results):
        got = torch.from_numpy(got)
        scale = float(expected.abs().max()) or 1.0
        if got.shape != expected.shape or float((got - expected).abs().max()) > 1e-3 * scale:
            raise RuntimeError(f"{path}: onnxruntime's {name} is not the eager model's")
    log(f"{path}: ONNX opset {ONNX_OPSET}, outputs {', '.join(names)}, output std {float(output_of(eager).float().std()):.3f} "
        f"({time.monotonic() - started:.1f} s)")


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
    onnx = can_export_onnx()  # onnx and onnxruntime (Debian 13): also each model's ONNX file
    for name in ("resnet18", "mobilenet_v3_small"):
        model = demo_classifier(name, generator)
        export(model, example, os.path.join(out, f"{name}.pt"))
        if aoti:
            export_aoti(model, example, os.path.join(out, f"{name}.pt2"))
        if onnx:
            export_onnx(model, example, os.path.join(out, f"{name}.onnx"))
    seg = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    randomize_batchnorm(seg, generator)
    calibrate_batchnorm(seg, torch.randn(4, 3, 160, 160, generator=generator))
    small = torch.randn(1, 3, 160, 160, generator=generator)
    export(seg, small, os.path.join(out, "lraspp_mobilenet_v3_large.pt"), output_of=lambda y: y["out"], strict=False)
    if aoti:
        export_aoti(seg, small, os.path.join(out, "lraspp_mobilenet_v3_large.pt2"))
    if onnx:
        export_onnx(seg, small, os.path.join(out, "lraspp_mobilenet_v3_large.onnx"), output_of=lambda y: y["out"])


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
            export_detection(args.out, log, randomize_batchnorm, calibrate_batchnorm,
                             export_onnx if can_export_onnx() else None)
        export_tie(args.out, log)
    elif args.command == "perturb":
        perturb(args.source, args.target, args.scale, args.parameter)
    else:
        write_png(args.out, args.size, args.seed)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Writes the saved tensors for tests/runner/saved_inputs_test.cc (Debian's python3-torch
and python3-numpy; generated, never committed).

1. docs/configuration.md's claim that a config's `random: {seed: S, distribution: normal}` input is
   torch.randn(shape, generator=torch.Generator().manual_seed(S)) (and `uniform` is
   torch.rand the same way): for several seeds and shapes, Python's tensors saved as .npy,
   which the C++ test compares bit for bit with driftgate's make_random_input.
2. .npy files as NumPy itself writes them (format versions 1.0, 2.0 and 3.0, big-endian),
   with the same values beside them as raw little-endian float32 (values.f32); and one file per
   dtype driftgate reads (float16 ... bool, some big-endian) with its raw little-endian bytes
   beside it (NAME.raw), and a uint16 file, which driftgate refuses.
3. channels_last as PyTorch does it: a model with a 3x3, a depthwise and a 1x1 convolution
   (whose weights have ambiguous strides), scripted and saved in NCHW, then
   `model.to(memory_format=torch.channels_last)` on `x.to(memory_format=torch.channels_last)`
   in Python, one intra-op thread: its output and the strides each conv weight got, which the
   C++ test compares with driftgate's `channels_last` backend on the saved file.

  /usr/bin/python3 tests/runner/saved_inputs.py OUT_DIR
writes OUT_DIR/manifest.json and the files it names.
"""
import copy
import json
import os
import sys

import numpy as np
import torch
from numpy.lib import format as npy_format

CASES = [  # (distribution, seed, shape)
    ("normal", 0, [1, 3, 8, 8]),
    ("normal", 7, [2, 5]),
    # A seed beyond 32 bits: PyTorch's mt19937 keeps its low 32 bits (123456789012 and
    # 123456789012 % 2**32 give the same tensor), and driftgate, using the same generator, does too.
    ("normal", 123456789012, [1, 3, 32, 32]),
    ("normal", 3, [17]),  # an odd count (randn fills pairs: the last one is a special case)
    ("uniform", 0, [1, 3, 8, 8]),
    ("uniform", 42, [4, 9]),
]


def main(out):
    os.makedirs(out, exist_ok=True)
    manifest = {"random": [], "numpy": []}
    for distribution, seed, shape in CASES:
        generator = torch.Generator().manual_seed(seed)
        make = torch.randn if distribution == "normal" else torch.rand
        tensor = make(shape, generator=generator)
        name = f"{distribution}_{seed}_{'x'.join(map(str, shape))}.npy"
        np.save(os.path.join(out, name), tensor.numpy())
        manifest["random"].append({"file": name, "distribution": distribution, "seed": seed, "shape": shape})

    values = np.random.default_rng(5).standard_normal((1, 3, 4, 6)).astype(np.float32)
    values.astype("<f4").tofile(os.path.join(out, "values.f32"))
    for name, version, dtype in [("v1.npy", (1, 0), "<f4"), ("v2.npy", (2, 0), "<f4"),
                                 ("v3.npy", (3, 0), "<f4"), ("big_endian.npy", (1, 0), ">f4")]:
        with open(os.path.join(out, name), "wb") as f:
            npy_format.write_array(f, values.astype(dtype), version=version)
        manifest["numpy"].append({"file": name, "shape": list(values.shape)})
    np.save(os.path.join(out, "float64.npy"), values.astype(np.float64))
    manifest["dtypes"] = []
    integers = np.random.default_rng(6).integers(-100, 100, size=(2, 5))
    for dtype in ["<f2", "<f8", ">f8", "|i1", "<i2", ">i4", "<i8", ">i8", "|u1", "|b1"]:
        kind = np.dtype(dtype)
        array = (values[0, 0] if kind.kind == "f" else np.abs(integers) % 2 if kind.kind == "b" else
                 np.abs(integers) if kind.kind == "u" else integers).astype(dtype)
        name = f"dtype_{dtype[0].replace('<', 'le').replace('>', 'be').replace('|', 'na')}_{dtype[1:]}"
        np.save(os.path.join(out, name + ".npy"), array)
        array.astype(kind.newbyteorder("<")).tofile(os.path.join(out, name + ".raw"))
        manifest["dtypes"].append({"file": name + ".npy", "raw": name + ".raw", "dtype": str(array.dtype.name),
                                   "shape": list(array.shape)})
    np.save(os.path.join(out, "uint16.npy"), np.zeros((2, 3), dtype=np.uint16))
    np.save(os.path.join(out, "fortran.npy"), np.asfortranarray(values[0, 0]))
    manifest["channels_last"] = channels_last(out)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


class Blocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pointwise = torch.nn.Conv2d(8, 16, 1)
        self.bn2 = torch.nn.BatchNorm2d(16)

    def forward(self, x):
        x = torch.relu(self.bn1(self.stem(x)))
        x = torch.relu(self.depthwise(x))
        return torch.relu(self.bn2(self.pointwise(x)))


def channels_last(out):
    torch.set_num_threads(1)
    torch.manual_seed(11)
    model = Blocks().eval()
    with torch.no_grad():
        for bn in (model.bn1, model.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
    torch.jit.script(model).save(os.path.join(out, "blocks.pt"))
    x = torch.randn(2, 3, 12, 12, generator=torch.Generator().manual_seed(3))
    np.save(os.path.join(out, "blocks_input.npy"), x.numpy())
    converted = copy.deepcopy(model).to(memory_format=torch.channels_last)
    with torch.no_grad():
        y = converted(x.to(memory_format=torch.channels_last))
    np.save(os.path.join(out, "blocks_channels_last.npy"), y.contiguous().numpy())
    strides = {name: list(p.stride()) for name, p in converted.named_parameters() if p.dim() == 4}
    return {"model": "blocks.pt", "input": "blocks_input.npy", "output": "blocks_channels_last.npy",
            "output_shape": list(y.shape), "weight_strides": strides}


if __name__ == "__main__":
    main(sys.argv[1])

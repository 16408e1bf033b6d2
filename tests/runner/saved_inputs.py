#!/usr/bin/python3
"""Writes the saved tensors for tests/runner/saved_inputs_test.cc (Debian's python3-torch
and python3-numpy; generated, never committed).

1. The README's claim that a config's `random: {seed: S, distribution: normal}` input is
   torch.randn(shape, generator=torch.Generator().manual_seed(S)) (and `uniform` is
   torch.rand the same way): for several seeds and shapes, Python's tensors saved as .npy,
   which the C++ test compares bit for bit with driftgate's make_random_input.
2. .npy files as NumPy itself writes them (format versions 1.0, 2.0 and 3.0, big-endian),
   with the same values beside them as raw little-endian float32 (values.f32).

  /usr/bin/python3 tests/runner/saved_inputs.py OUT_DIR
writes OUT_DIR/manifest.json and the files it names.
"""
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
    np.save(os.path.join(out, "fortran.npy"), np.asfortranarray(values[0, 0]))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/python3
"""Writes tensor pairs and torch.testing.assert_close's verdicts on them, for
driftgate's agreement test (tests/runner/assert_close_agreement_test.cc).

Generated data, never committed: run by CTest before the test (Debian's python3-torch).
Pairs are (reference, target) outputs of tiny models run on the CPU backends driftgate
has (float32 eager as the reference; oneDNN off, channels-last, frozen, 2 threads,
bfloat16, float64), plus synthetic pairs with planted mismatches. Each pair is judged
at several tolerances, including None (assert_close's per-dtype defaults). For each
(pair, tolerance) it records what assert_close said: pass or not, the mismatch count
and greatest absolute difference from its message, and the exact minimum atol (at the
rtol used) and minimum rtol (at the atol used) found by asking assert_close itself.

  /usr/bin/python3 tests/runner/assert_close_pairs.py OUT_DIR
writes OUT_DIR/pairs.pt (torch.save of [reference0, target0, reference1, ...]) and
OUT_DIR/expected.json.
"""
import json
import math
import os
import re
import struct
import sys

import torch
import torch.nn as nn
from torch.testing._comparison import default_tolerances

TOLERANCES = [None, (1e-6, 1e-6), (1e-5, 1.3e-6), (1e-4, 1e-4), (1e-3, 0.0), (0.0, 1e-3), (1e-2, 1e-2)]


def models():
    torch.manual_seed(3)
    conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 4, 3, padding=1, stride=2))
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 32), nn.GELU(), nn.Linear(32, 10))
    depthwise = nn.Sequential(nn.Conv2d(3, 3, 3, groups=3, padding=1), nn.BatchNorm2d(3), nn.Hardswish(),
                              nn.AdaptiveAvgPool2d(2))
    norm = nn.Sequential(nn.Conv2d(3, 6, 1), nn.GroupNorm(2, 6), nn.SiLU(), nn.Conv2d(6, 2, 3))
    result = []
    for name, model in (("conv", conv), ("mlp", mlp), ("depthwise", depthwise), ("norm", norm)):
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
        result.append((name, model.eval()))
    return result


def targets(model, x):
    """The outputs of each CPU backend on x, each from its own copy of the model."""
    import copy
    with torch.no_grad():
        outputs = {}
        with torch.backends.mkldnn.flags(enabled=False):
            outputs["onednn_off"] = copy.deepcopy(model)(x)
        cl = copy.deepcopy(model).to(memory_format=torch.channels_last)
        outputs["channels_last"] = cl(x.contiguous(memory_format=torch.channels_last)).contiguous()
        frozen = torch.jit.freeze(torch.jit.script(copy.deepcopy(model)))
        outputs["frozen"] = frozen(x)
        torch.set_num_threads(2)
        outputs["threads_2"] = copy.deepcopy(model)(x)
        torch.set_num_threads(1)
        outputs["bf16"] = copy.deepcopy(model).to(torch.bfloat16)(x.to(torch.bfloat16))
        outputs["fp64"] = copy.deepcopy(model).to(torch.float64)(x.to(torch.float64))
    return outputs


def synthetic():
    """Pairs with planted differences: a few large, many tiny, near-zero references."""
    g = torch.Generator().manual_seed(11)
    pairs = []
    for scale in (1e-7, 1e-5, 1e-3):
        reference = torch.randn(6, 48, generator=g)
        target = reference + torch.randn(6, 48, generator=g) * scale
        target[0, 5] += 50 * scale
        pairs.append((f"noise_{scale:g}", reference, target))
    reference = torch.randn(100, generator=g) * 1e-3
    reference[7] = 0.0
    pairs.append(("near_zero", reference, reference + 2e-6))
    # Pairs that torch 2.x compares in a 16-bit dtype or, for integers, in float32 (the
    # default dtype isclose converts them to), where rounding decides more boundaries.
    for dtype in (torch.bfloat16, torch.float16):
        reference = torch.randn(8, 40, generator=g) * 3
        target = reference * (1 + torch.randn(8, 40, generator=g) * 1e-2)
        pairs.append((f"synthetic_{dtype}".replace("torch.", ""), reference.to(dtype), target.to(dtype)))
    reference = torch.randint(-2**28, 2**28, (200,), generator=g)
    pairs.append(("int64", reference, reference + torch.randint(-40, 40, (200,), generator=g)))
    return pairs


def passes(actual, expected, atol, rtol):
    try:
        torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, check_dtype=False)
        return True, ""
    except AssertionError as error:
        return False, str(error)


def bits(value):
    return struct.unpack("<q", struct.pack("<d", value))[0]


def from_bits(pattern):
    return struct.unpack("<d", struct.pack("<q", pattern))[0]


def smallest_passing(passes_at, estimate):
    """The smallest non-negative float64 v with passes_at(v), passes_at being monotone in v:
    from the estimate, doubled until it passes, then a bisection over the bit patterns of
    non-negative doubles (ordered as the values are): about 64 calls whatever the distance
    between the estimate and the answer (stepping one ulp at a time took hours where the
    estimate was far off, as with torch 2.6's comparisons in a mixed pair's common dtype)."""
    high = max(estimate, 0.0)
    while not passes_at(high):
        high = high * 2.0 if high > 0.0 else 5e-324
        if math.isinf(high):
            return math.inf
    if passes_at(0.0):
        return 0.0
    low_bits, high_bits = 0, bits(high)  # passes_at(from_bits(low_bits)) is false
    while high_bits - low_bits > 1:
        middle = (low_bits + high_bits) // 2
        if passes_at(from_bits(middle)):
            high_bits = middle
        else:
            low_bits = middle
    return from_bits(high_bits)


def minimum_atol(actual, expected, rtol):
    """The smallest float64 atol with which assert_close passes at rtol."""
    a, b = actual.double(), expected.double()
    estimate = max(0.0, float(((a - b).abs() - rtol * b.abs()).max()))
    return smallest_passing(lambda atol: passes(actual, expected, atol, rtol)[0], estimate)


def minimum_rtol(actual, expected, atol):
    a, b = actual.double(), expected.double()
    diff, scale = (a - b).abs(), b.abs()
    over = diff > atol
    if bool((over & (scale == 0)).any()):
        return math.inf
    estimate = max(0.0, float(((diff - atol) / scale)[over].max())) if bool(over.any()) else 0.0
    return smallest_passing(lambda rtol: passes(actual, expected, atol, rtol)[0], estimate)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    pairs = []
    g = torch.Generator().manual_seed(5)
    for name, model in models():
        for i in range(2):
            x = torch.randn(1, 3, 8, 8, generator=g)
            with torch.no_grad():
                reference = model(x)
            for backend, target in targets(model, x).items():
                pairs.append((f"{name}/x{i}/{backend}", reference, target))
    pairs.extend(synthetic())
    tensors = []
    cases = []
    for index, (name, reference, target) in enumerate(pairs):
        tensors += [reference.contiguous(), target.contiguous()]
        for tolerance in TOLERANCES:
            if tolerance is None:
                rtol, atol = default_tolerances(target, reference)
                given = None
            else:
                atol, rtol = tolerance
                given = {"atol": atol, "rtol": rtol}
            ok, message = passes(target, reference, atol, rtol)
            case = {"pair": index, "name": name, "tolerance": given, "atol": atol, "rtol": rtol, "passed": ok,
                    "mismatches": 0, "greatest_abs": 0.0,
                    "min_atol": minimum_atol(target, reference, rtol),
                    "min_rtol": minimum_rtol(target, reference, atol)}
            if not ok:
                count = re.search(r"Mismatched elements: (\d+) / (\d+)", message)
                greatest = re.search(r"Greatest absolute difference: (\S+) at index", message)
                case["mismatches"] = int(count.group(1))
                case["greatest_abs"] = float(greatest.group(1))
            cases.append(case)
    torch.save(tensors, os.path.join(out, "pairs.pt"))
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"generated_by": "tests/runner/assert_close_pairs.py", "torch": torch.__version__,
                   "cases": cases}, f, indent=0)
    failing = sum(1 for case in cases if not case["passed"])
    print(f"assert_close_pairs: {len(pairs)} pairs, {len(cases)} cases ({failing} failing) -> {out}")


if __name__ == "__main__":
    main()

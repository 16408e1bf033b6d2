#!/usr/bin/python3
"""The paper's Python protocol on a driftgate suite, for bench/run to time against driftgate.

  /usr/bin/python3 bench/python_protocol.py CONFIG.yaml... [--atol 1e-6,1e-5,1e-4,1e-3] [--rtol 1e-5]

For each atol value the whole suite is re-run from scratch, as the protocol does: per
experiment, load the reference and every target from the TorchScript file with the
backend's settings (bench/runner_overhead.py's plain_work), run one forward per input and
compare each target output with the reference's by torch.testing.assert_close(atol, rtol).
Prints the pass count per atol and the total wall time; asserts nothing.
"""
import os
import sys
import time

import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner_overhead import DTYPES, backend, image_input, random_input  # noqa: E402


def load(path, spec):
    model = torch.jit.load(path).eval()
    dtype = DTYPES[spec.get("dtype", "float32")]
    if not spec.get("autocast") and dtype != torch.float32:
        model = model.to(dtype)
    if spec.get("memory_format") == "channels_last":
        model = model.to(memory_format=torch.channels_last)
    graph = spec.get("graph", "eager")
    if graph == "frozen":
        model = torch.jit.freeze(model, optimize_numerics=spec.get("optimize_numerics", True))
    elif graph == "optimized":
        model = torch.jit.optimize_for_inference(model)
    return model


def forward(model, spec, x):
    torch.set_num_threads(spec.get("threads", 1))
    dtype = DTYPES[spec.get("dtype", "float32")]
    with torch.backends.mkldnn.flags(enabled=spec.get("onednn", True)), torch.no_grad(), \
            torch.cpu.amp.autocast(enabled=bool(spec.get("autocast")), dtype=torch.bfloat16):
        x = x if spec.get("autocast") else x.to(dtype)
        if spec.get("memory_format") == "channels_last":
            x = x.contiguous(memory_format=torch.channels_last)
        out = model(x)
    return out if isinstance(out, torch.Tensor) else out["out"] if isinstance(out, dict) else out[0]


def one_pass(configs, atol, rtol):
    passed = total = 0
    for config in configs:
        base = os.path.dirname(config)
        with open(config) as f:
            experiment = yaml.safe_load(f)
        inputs = [image_input(i, base) if "image" in i else random_input(i) for i in experiment["inputs"]]
        custom = experiment.get("backends", {})
        reference_spec = backend(experiment.get("reference", "cpu_fp32"), custom)
        model_path = os.path.join(base, experiment["model"])
        reference = load(model_path, reference_spec)
        expected = [forward(reference, reference_spec, x).float() for x in inputs]
        for name in experiment["targets"]:
            spec = backend(name, custom)
            if spec is None or spec.get("device") == "cuda" or spec.get("graph") in ("fused", "xnnpack"):
                continue
            target = load(model_path, spec)
            for x, want in zip(inputs, expected):
                total += 1
                try:
                    torch.testing.assert_close(forward(target, spec, x).float(), want, atol=atol, rtol=rtol)
                    passed += 1
                except AssertionError:
                    pass
    return passed, total


def main():
    args = sys.argv[1:]
    atols, rtol = [1e-6, 1e-5, 1e-4, 1e-3], 1e-5
    if "--atol" in args:
        i = args.index("--atol")
        atols = [float(v) for v in args[i + 1].split(",")]
        del args[i:i + 2]
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    start = time.perf_counter()
    for atol in atols:
        passed, total = one_pass(args, atol, rtol)
        print(f"atol {atol:g}: {passed}/{total} comparisons pass")
    print(f"python protocol: {len(atols)} passes in {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

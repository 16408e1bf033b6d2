#!/usr/bin/python3
"""Prints driftgate run's overhead over plain forward passes of the same work.

  /usr/bin/python3 bench/runner_overhead.py DRIFTGATE configs/*.yaml [--in-process] [--tier1-only]
      [--repeat N] [--trace]

Runs `DRIFTGATE run CONFIGS -o <tmp> -q` and times it; then does the same work by hand
with Debian's torch (the same LibTorch 1.13 underneath): per experiment, load every
backend (reference, targets, the float64 oracle) from the model file with the same
settings (dtype or autocast, channels-last, freeze / optimize_for_inference /
optimize_for_mobile, oneDNN flag, threads) and run per input the forwards driftgate runs
(runner/backend_run.cc): `repeats`, untimed warm-up up to `latency: warmup` in all, then
`latency: runs` timed ones (one forward for the oracle), timing only that. Prints both wall times and their ratio (driftgate / plain);
the ratio includes process start-up, input decoding, isolation, comparison and writing.
Backends the runner skips (CUDA, float16 on the CPU, nnc_fused) are skipped here too.
--tier1-only runs driftgate on copies of the configs (beside them, removed afterwards) with
`activations: off`, so tier-2 localization of failing checks, which the plain side does not
do, is left out of the ratio.
--repeat N alternates the two sides N times (default 1) and prints the median times and
the median of the per-try ratios: a busy machine moves single runs by tens of percent.
CPU time (user + sys: driftgate's process and its forked children; the plain side's
process during the timed parts) is printed beside wall time, with its own ratio. --trace prints the plain side's load and forwards per backend and
runs driftgate with --trace-timing, so the two sides can be compared phase by phase.
Nothing is asserted: this is a measurement.
"""
import ctypes
import os
import subprocess
import sys
import tempfile
import time

import torch
import torchvision  # noqa: F401 (registers torchvision::nms: full detection models need it at load)
import yaml

BUILTIN = {
    "cpu_fp32": {}, "onednn_off": {"onednn": False}, "channels_last": {"memory_format": "channels_last"},
    "frozen": {"graph": "frozen"}, "frozen_exact": {"graph": "frozen", "optimize_numerics": False},
    "optimized": {"graph": "optimized"}, "xnnpack": {"graph": "xnnpack"}, "threads_2": {"threads": 2},
    "threads_4": {"threads": 4}, "cpu_fp64": {"dtype": "float64"}, "cpu_bf16": {"dtype": "bfloat16"},
    "cpu_bf16_autocast": {"dtype": "bfloat16", "autocast": True},
}
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}


def blas_thread_setter():
    """openblas_set_num_threads of the BLAS torch loaded, or None (the reference BLAS has no threads).

    torch.set_num_threads leaves OpenBLAS's own pool at the core count; driftgate sets it to each
    backend's threads (runner/blas_threads.h), so the plain side does the same.
    """
    try:
        return ctypes.CDLL("libblas.so.3").openblas_set_num_threads
    except (OSError, AttributeError):
        return None


SET_BLAS_THREADS = blas_thread_setter()


def backend(name, custom):
    if name in custom:
        spec = dict(backend(custom[name].get("base", "cpu_fp32"), custom))
        spec.update({k: v for k, v in custom[name].items() if k not in ("base", "description")})
        return spec
    return BUILTIN.get(name)


def random_input(spec):
    r = spec["random"]
    g = torch.Generator().manual_seed(r.get("seed", 0))
    shape = r["shape"]
    return torch.rand(shape, generator=g) if r.get("distribution") == "uniform" else torch.randn(shape, generator=g)


def image_input(spec, base):
    from torchvision.io import read_image
    x = read_image(os.path.join(base, spec["image"]))[:3].float().div(255).unsqueeze(0)
    if "resize" in spec:
        size = spec["resize"] if isinstance(spec["resize"], list) else [spec["resize"]] * 2
        x = torch.nn.functional.interpolate(x, size=size, mode="bilinear", align_corners=False)
    mean = torch.tensor(spec.get("mean", [0.0, 0.0, 0.0])).view(1, 3, 1, 1)
    std = torch.tensor(spec.get("std", [1.0, 1.0, 1.0])).view(1, 3, 1, 1)
    return (x - mean) / std


def plain_work(config, trace=False):
    """Loads and runs every backend of `config` as driftgate does; returns (wall s, CPU s) of that."""
    base = os.path.dirname(config)
    with open(config) as f:
        experiment = yaml.safe_load(f)
    inputs = [image_input(i, base) if "image" in i else random_input(i) for i in experiment["inputs"]]
    custom = experiment.get("backends", {})
    names = [experiment.get("reference", "cpu_fp32")] + experiment["targets"]
    specs = [backend(n, custom) for n in names]
    # What driftgate's ForwardPlan runs per (backend, input): max(repeats, warmup) + runs.
    latency = experiment.get("latency", {})
    per_input = max(experiment.get("repeats", 2), 1, latency.get("warmup", 3)) + latency.get("runs", 10)
    repeats = [per_input] * len(specs)
    if experiment.get("oracle", True):
        specs.append({"dtype": "float64"})
        repeats.append(1)
    names.append("oracle_fp64")
    total = 0.0
    total_cpu = 0.0
    for name, spec, count in zip(names, specs, repeats):
        if spec is None or spec.get("device") == "cuda" or spec.get("graph") == "fused":
            continue
        start = time.perf_counter()
        start_cpu = time.process_time()
        model = torch.jit.load(os.path.join(base, experiment["model"])).eval()
        dtype = DTYPES[spec.get("dtype", "float32")]
        if not spec.get("autocast") and dtype != torch.float32:
            model = model.to(dtype)
        if spec.get("memory_format") == "channels_last":
            model = model.to(memory_format=torch.channels_last)
        torch.set_num_threads(spec.get("threads", 1))
        if SET_BLAS_THREADS is not None:
            SET_BLAS_THREADS(spec.get("threads", 1))
        with torch.backends.mkldnn.flags(enabled=spec.get("onednn", True)):
            graph = spec.get("graph", "eager")
            if graph == "frozen":
                model = torch.jit.freeze(model, optimize_numerics=spec.get("optimize_numerics", True))
            elif graph == "optimized":
                model = torch.jit.optimize_for_inference(model)
            elif graph == "xnnpack":
                from torch.utils.mobile_optimizer import optimize_for_mobile
                model = optimize_for_mobile(model)
            # torchvision detection models take List[Tensor]: the batch as a list of images, as driftgate passes it.
            arguments = model.forward.schema.arguments
            as_list = len(arguments) > 1 and str(arguments[1].type) == "List[Tensor]"
            loaded, loaded_cpu = time.perf_counter(), time.process_time()
            if trace:
                print(f"trace: plain: {config}: {name}: load: {(loaded - start) * 1e3:.1f} ms wall, "
                      f"{(loaded_cpu - start_cpu) * 1e3:.1f} ms CPU", file=sys.stderr)
            with torch.no_grad(), torch.cpu.amp.autocast(enabled=bool(spec.get("autocast")), dtype=torch.bfloat16):
                for index, x in enumerate(inputs):
                    x = x if spec.get("autocast") else x.to(dtype)
                    if spec.get("memory_format") == "channels_last":
                        x = x.contiguous(memory_format=torch.channels_last)
                    before, before_cpu = time.perf_counter(), time.process_time()
                    argument = list(x.unbind(0)) if as_list else x
                    for _ in range(count):
                        model(argument)
                    if trace:
                        print(f"trace: plain: {config}: {name}: input {index}: {count} forwards: "
                              f"{(time.perf_counter() - before) * 1e3:.1f} ms wall, "
                              f"{(time.process_time() - before_cpu) * 1e3:.1f} ms CPU", file=sys.stderr)
        total += time.perf_counter() - start
        total_cpu += time.process_time() - start_cpu
    return total, total_cpu


def run_driftgate(driftgate, configs, extra):
    """Runs driftgate on `configs`; returns (wall s, CPU s of it and its forked children)."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        proc = subprocess.Popen([driftgate, "run", *configs, "-o", os.path.join(tmp, "run.jsonl"), "-q", *extra])
        _, _, usage = os.wait4(proc.pid, 0)
        return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    driftgate = sys.argv[1]
    args = sys.argv[2:]
    repeat = 1
    if "--repeat" in args:
        at = args.index("--repeat")
        repeat = max(1, int(args[at + 1]))
        del args[at:at + 2]
    tier1_only = "--tier1-only" in args
    trace = "--trace" in args
    extra = [a for a in args if a.startswith("--") and a not in ("--tier1-only", "--trace")]
    configs = [a for a in args if not a.startswith("--")]
    copies = []
    try:
        run_configs = configs
        if tier1_only:
            for config in configs:
                with open(config) as f:
                    document = yaml.safe_load(f)
                document["activations"] = "off"
                handle, copy = tempfile.mkstemp(suffix=".yaml", prefix=".bench-", dir=os.path.dirname(config) or ".")
                with os.fdopen(handle, "w") as f:
                    yaml.safe_dump(document, f)
                copies.append(copy)
            run_configs = copies
        runs, plains = [], []
        for _ in range(repeat):
            runs.append(run_driftgate(driftgate, run_configs, extra + (["--trace-timing"] if trace else [])))
            works = [plain_work(c, trace) for c in configs]
            plains.append((sum(w[0] for w in works), sum(w[1] for w in works)))
    finally:
        for copy in copies:
            os.unlink(copy)
    if tier1_only:
        extra.append("--tier1-only")
    runner, runner_cpu = median([r[0] for r in runs]), median([r[1] for r in runs])
    plain, plain_cpu = median([p[0] for p in plains]), median([p[1] for p in plains])
    # Each try pairs a driftgate run with the plain work right after it: the ratios are the
    # median of the per-try ratios (for one try, simply its ratios).
    ratio = median([r[0] / p[0] for r, p in zip(runs, plains)])
    cpu_ratio = median([r[1] / p[1] for r, p in zip(runs, plains)])
    if repeat > 1:
        for index, (r, p) in enumerate(zip(runs, plains)):
            print(f"  try {index + 1}: driftgate {r[0]:.2f} s ({r[1]:.2f} s CPU), plain {p[0]:.2f} s ({p[1]:.2f} s CPU): "
                  f"{r[0] / p[0]:.2f} wall, {r[1] / p[1]:.2f} CPU")
    label = "median of " + str(repeat) if repeat > 1 else "one try"
    print(f"driftgate run {' '.join(extra) or '(isolated)'}: {runner:.2f} s; plain loads + forwards: {plain:.2f} s; "
          f"overhead ratio {ratio:.2f} ({label}); CPU {runner_cpu:.2f} s vs {plain_cpu:.2f} s: "
          f"CPU ratio {cpu_ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

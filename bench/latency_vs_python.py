#!/usr/bin/python3
"""driftgate's latency table against a Python steady-state measurement of the same forwards.

  /usr/bin/python3 bench/latency_vs_python.py DRIFTGATE CONFIG.yaml... [--runs N] [--warmup W]

Runs `DRIFTGATE run CONFIGS` (its latency: the experiment's `latency:` settings, by default 3
warm-up then 10 timed forwards), then measures each backend the Python way with Debian's torch
(the same LibTorch underneath): load the TorchScript file with the backend's settings
(bench/python_protocol.py's load), W untimed forwards, then N timed ones (default 30), median
and interquartile range (numpy's linear interpolation, as driftgate). Prints both per
(experiment, input, backend), the ratio to the reference on each side, and whether the two
medians agree within the larger of the two spreads (IQR, at least 5% of the median: a busy
2-core machine moves single forwards by more). Backends Python cannot build this way (custom
ones other than dtype/format/graph/threads settings) are left out. Asserts nothing.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_protocol import forward, load  # noqa: E402
from runner_overhead import SET_BLAS_THREADS, backend, image_input, random_input  # noqa: E402


def quantile(sorted_values, q):
    rank = q * (len(sorted_values) - 1)
    below = int(rank)
    above = min(below + 1, len(sorted_values) - 1)
    return sorted_values[below] + (rank - below) * (sorted_values[above] - sorted_values[below])


def python_latency(model, spec, x, warmup, runs):
    if SET_BLAS_THREADS is not None:
        SET_BLAS_THREADS(spec.get("threads", 1))
    for _ in range(warmup):
        forward(model, spec, x)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        forward(model, spec, x)
        times.append((time.perf_counter() - start) * 1000.0)
    times.sort()
    return quantile(times, 0.5), quantile(times, 0.75) - quantile(times, 0.25)


def driftgate_latency(driftgate, configs):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.jsonl")
        subprocess.run([driftgate, "run", *configs, "-o", out, "-q"], check=False)
        table = {}
        with open(out) as f:
            for line in f:
                record = json.loads(line)
                if record.get("type") != "check":
                    continue
                t = record["timings_ms"]
                key = (record["experiment"], record["input"])
                if t["reference"] > 0:
                    table.setdefault(key + (record["reference"],), (t["reference"], t.get("reference_iqr")))
                if t["target"] > 0:
                    table.setdefault(key + (record["target"],), (t["target"], t.get("target_iqr")))
        return table


def main():
    args = sys.argv[1:]
    runs, warmup = 30, 3
    if "--runs" in args:
        i = args.index("--runs")
        runs = int(args[i + 1])
        del args[i:i + 2]
    if "--warmup" in args:
        i = args.index("--warmup")
        warmup = int(args[i + 1])
        del args[i:i + 2]
    driftgate, configs = args[0], args[1:]
    torch.set_num_threads(1)
    started = time.time()
    measured = driftgate_latency(driftgate, configs)
    print(f"driftgate run: {time.time() - started:.1f} s")
    print(f"{'experiment':24} {'input':8} {'backend':18} {'driftgate ms [IQR]':>20} {'python ms [IQR]':>20}"
          f" {'x ref (dg / py)':>16}  agree")
    agree = total = 0
    for config in configs:
        base = os.path.dirname(config)
        with open(config) as f:
            experiment = yaml.safe_load(f)
        custom = experiment.get("backends", {})
        names = [experiment.get("reference", "cpu_fp32")] + list(experiment["targets"])
        inputs = {i["name"]: image_input(i, base) if "image" in i else random_input(i) for i in experiment["inputs"]}
        model_path = os.path.join(base, experiment["model"])
        for input_name, x in inputs.items():
            reference_py = reference_dg = None
            for name in names:
                spec = backend(name, custom)
                key = (experiment["name"], input_name, name)
                if spec is None or key not in measured or spec.get("device", "cpu") != "cpu":
                    continue
                model = load(model_path, spec)
                py_median, py_iqr = python_latency(model, spec, x, warmup, runs)
                dg_median, dg_iqr = measured[key]
                if reference_py is None:
                    reference_py, reference_dg = py_median, dg_median
                spread = max(dg_iqr or 0.0, py_iqr, 0.05 * py_median)
                ok = abs(dg_median - py_median) <= spread
                agree += ok
                total += 1
                ratio = f"x{dg_median / reference_dg:.2f} / x{py_median / reference_py:.2f}"
                print(f"{experiment['name']:24} {input_name:8} {name:18} {dg_median:12.2f} [{dg_iqr:5.2f}]"
                      f" {py_median:12.2f} [{py_iqr:5.2f}] {ratio:>16}  {'yes' if ok else 'NO'}")
    print(f"{agree} of {total} medians agree within the spread")


if __name__ == "__main__":
    main()

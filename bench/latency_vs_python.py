#!/usr/bin/python3
"""driftgate's latency table against a Python steady-state measurement of the same forwards.

  /usr/bin/python3 bench/latency_vs_python.py DRIFTGATE CONFIG.yaml... [--runs N] [--warmup W] [--repeat R]

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


def option(args, name, default):
    if name in args:
        i = args.index(name)
        value = int(args[i + 1])
        del args[i:i + 2]
        return value
    return default


def main():
    args = sys.argv[1:]
    runs = option(args, "--runs", 30)
    warmup = option(args, "--warmup", 3)
    repeat = option(args, "--repeat", 3)
    driftgate, configs = args[0], args[1:]
    torch.set_num_threads(1)
    dg_tries, py_tries = {}, {}  # key -> [(median, iqr)] per try
    for _ in range(repeat):
        started = time.time()
        for key, value in driftgate_latency(driftgate, configs).items():
            dg_tries.setdefault(key, []).append(value)
        print(f"driftgate run: {time.time() - started:.1f} s", flush=True)
        for config in configs:
            base = os.path.dirname(config)
            with open(config) as f:
                experiment = yaml.safe_load(f)
            custom = experiment.get("backends", {})
            names = [experiment.get("reference", "cpu_fp32")] + list(experiment["targets"])
            inputs = {i["name"]: image_input(i, base) if "image" in i else random_input(i)
                      for i in experiment["inputs"]}
            model_path = os.path.join(base, experiment["model"])
            for input_name, x in inputs.items():
                for name in names:
                    spec = backend(name, custom)
                    key = (experiment["name"], input_name, name)
                    if spec is None or key not in dg_tries or spec.get("device", "cpu") != "cpu":
                        continue
                    py_tries.setdefault(key, []).append(python_latency(load(model_path, spec), spec, x, warmup, runs))
    print(f"{'experiment':24} {'input':8} {'backend':18} {'driftgate ms [spread]':>22} {'python ms [spread]':>22}"
          f" {'x ref (dg / py)':>16}  agree")
    agree = total = 0
    reference = {}
    for key in py_tries:
        dg = summarize(dg_tries[key])
        py = summarize(py_tries[key])
        experiment, input_name, name = key
        reference.setdefault((experiment, input_name), (dg[0], py[0]))
        ref_dg, ref_py = reference[(experiment, input_name)]
        ok = abs(dg[0] - py[0]) <= max(dg[1], py[1], 0.05 * py[0])
        agree += ok
        total += 1
        ratio = f"x{dg[0] / ref_dg:.2f} / x{py[0] / ref_py:.2f}"
        print(f"{experiment:24} {input_name:8} {name:18} {dg[0]:12.2f} [{dg[1]:6.2f}] {py[0]:12.2f} [{py[1]:6.2f}]"
              f" {ratio:>16}  {'yes' if ok else 'NO'}")
    print(f"{agree} of {total} medians agree within the spread ({repeat} tries per side)")


def summarize(tries):
    """(median of the tries' medians, spread: the larger of their median IQR and their range)."""
    medians = sorted(t[0] for t in tries)
    iqrs = [t[1] for t in tries if t[1] is not None]
    spread = max(statistics.median(iqrs) if iqrs else 0.0, medians[-1] - medians[0])
    return statistics.median(medians), spread


if __name__ == "__main__":
    main()

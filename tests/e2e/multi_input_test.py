#!/usr/bin/python3
"""Models whose forward takes several arguments of integer and float dtypes (issue 36, part 1),
checked against an independent computation in Python (Debian's torch).

The models are tools/sequence_models.py's: TinyEncoder(ids, attention_mask, token_type_ids),
TinyLM(ids), TinyMaskedLM(ids, attention_mask) and Recommender(categorical, dense), built with
seeded weights and saved scripted or traced. Their inputs come from .npy files (int64 ids, a
float32 dense part), `random_int` (torch.randint with a seeded generator) and `fill`
(torch.full). Python rebuilds every input from the config and runs each target as its backend
does: cpu_bf16 and cpu_fp64 convert the floating-point parameters and floating-point arguments
only (ids and masks stay int64; in bfloat16 these models fail, in Python too: a crash_target),
cpu_bf16_autocast runs under CPU autocast, channels_last leaves these 2-D arguments alone, onednn_off
disables oneDNN, frozen and optimized are torch.jit.freeze and torch.jit.optimize_for_inference.
driftgate's recorded max_abs (|a-b| in float64) must equal Python's exactly, and its verdict
torch.testing.assert_close's with the config's atol and rtol.

Then the errors: a misspelt argument name (exit 2, forward's schema and a did-you-mean, no run
file); float32 ids (LibTorch's embedding refuses them: crash_ref with LibTorch's message, exit 1);
ids outside the embedding (crash_ref, LibTorch's message); a uint16 .npy (exit 2, naming the NumPy
call that converts it).

Environment: DRIFTGATE (the binary). Exit 0 when every check holds.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, HERE)
import sequence_models  # noqa: E402
from e2e_support import check, summary, work_dir, assert_close_passes, read_checks  # noqa: E402

TOLERANCE = 1e-4
TARGETS = ["cpu_bf16", "cpu_bf16_autocast", "cpu_fp64", "channels_last", "onednn_off", "frozen", "optimized"]
POSITIONS = 16


def build(work):
    """(name, model file, forward's arguments as Python builds them, args YAML) per experiment."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    cases = []

    encoder = sequence_models.TinyEncoder().eval()
    ids = torch.randint(1, 128, (1, POSITIONS), generator=generator)
    np.save(os.path.join(work, "encoder_ids.npy"), ids.numpy())
    mask = torch.ones(1, POSITIONS, dtype=torch.int64)
    mask[0, -3:] = 0
    np.save(os.path.join(work, "encoder_mask.npy"), mask.numpy())
    types = torch.full((1, POSITIONS), 1, dtype=torch.int64)
    torch.jit.script(encoder).save(os.path.join(work, "encoder.pt"))
    cases.append(("encoder", "encoder.pt", (ids, mask, types),
                  "{token_type_ids: {fill: {shape: [1, %d], value: 1, dtype: int64}}, "
                  "ids: {tensor: encoder_ids.npy}, attention_mask: {tensor: encoder_mask.npy}}" % POSITIONS))

    lm = sequence_models.TinyLM().eval()
    lm_ids = torch.randint(0, 64, (1, POSITIONS), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.jit.trace(lm, (lm_ids,)).save(os.path.join(work, "lm.pt"))
    cases.append(("lm", "lm.pt", (lm_ids,),
                  "{ids: {random_int: {shape: [1, %d], low: 0, high: 64, seed: 3}}}" % POSITIONS))

    masked = sequence_models.TinyMaskedLM().eval()
    masked_ids = torch.randint(5, 60, (1, POSITIONS), generator=torch.Generator().manual_seed(7))
    masked_mask = torch.ones(1, POSITIONS, dtype=torch.int64)
    torch.jit.script(masked).save(os.path.join(work, "masked_lm.pt"))
    cases.append(("masked_lm", "masked_lm.pt", (masked_ids, masked_mask),
                  "{ids: {random_int: {shape: [1, %d], low: 5, high: 60, seed: 7}}, "
                  "attention_mask: {fill: {shape: [1, %d], value: 1, dtype: int64}}}" % (POSITIONS, POSITIONS)))

    recommender = sequence_models.Recommender().eval()
    categorical = torch.randint(0, 100, (2, 4), generator=generator)
    dense = torch.randn(2, 6, generator=generator)
    np.save(os.path.join(work, "dense.npy"), dense.numpy())
    with torch.no_grad():
        torch.jit.trace(recommender, (categorical, dense)).save(os.path.join(work, "recommender.pt"))
    np.save(os.path.join(work, "categorical.npy"), categorical.numpy())
    cases.append(("recommender", "recommender.pt", (categorical, dense),
                  "{dense: {tensor: dense.npy}, categorical: {tensor: categorical.npy}}"))
    return cases


def run_target(path, target, args):
    """The target's output as its backend computes it."""
    module = torch.jit.load(path).eval()
    floating = {"cpu_bf16": torch.bfloat16, "cpu_fp64": torch.float64}.get(target)
    if floating is not None:
        module = module.to(floating)
        args = tuple(a.to(floating) if a.is_floating_point() else a for a in args)
    if target == "frozen":
        module = torch.jit.freeze(module)
    if target == "optimized":
        module = torch.jit.optimize_for_inference(module)
    args = tuple(a.clone() for a in args)
    with torch.no_grad(), torch.backends.mkldnn.flags(enabled=target != "onednn_off"), \
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=target == "cpu_bf16_autocast"):
        return module(*args)


def driftgate_run(driftgate, config, run_file):
    return subprocess.run([driftgate, "run", config, "-o", run_file, "-q"], capture_output=True, text=True)


def main():
    driftgate = os.environ.get("DRIFTGATE", "driftgate")
    torch.set_num_threads(1)  # driftgate's backends run on one thread unless told otherwise
    work = work_dir("dg_multi_input_")
    cases = build(work)
    configs = []
    for name, model, _args, yaml_args in cases:
        config = os.path.join(work, f"{name}.yaml")
        with open(config, "w") as out:
            out.write(f"name: {name}\nmodel: {model}\ninputs:\n  - name: x\n    args: {yaml_args}\n"
                      f"targets: [{', '.join(TARGETS)}]\noracle: false\nrepeats: 1\n"
                      f"latency: {{warmup: 0, runs: 1}}\ntolerance: {{atol: {TOLERANCE}, rtol: {TOLERANCE}}}\n")
        configs.append(config)

    run_file = os.path.join(work, "run.jsonl")
    result = subprocess.run([driftgate, "run", *configs, "-o", run_file, "-q"], capture_output=True, text=True)
    check(result.returncode in (0, 1), f"driftgate run exits 0 or 1, got {result.returncode}: "
          f"{result.stderr.strip()[-2000:]}")
    checks = read_checks(run_file) if os.path.exists(run_file) else {}
    passes = fails = 0
    for name, model, args, _yaml in cases:
        path = os.path.join(work, model)
        reference = run_target(path, "cpu_fp32", args)
        for target in TARGETS:
            record = checks.get(f"{name}/x/cpu_fp32~{target}/out")
            try:
                output = run_target(path, target, args)
            except RuntimeError as error:
                # The model itself fails on this backend (TinyEncoder in bfloat16: its float32
                # padding mask promotes the scores, and matmul refuses float32 by bfloat16).
                said = str(error).strip().splitlines()[-1]
                check(record is not None and record["status"] == "crash_target" and said in record["message"],
                      f"{name} {target}: Python fails ({said}); driftgate: "
                      f"{record and (record['status'], record['message'][:300])}")
                continue
            want = float((reference.double() - output.double()).abs().max())
            # LibTorch 1.13's assert_close compares two dtypes in float64 (runner/isclose_arithmetic.h).
            passed = assert_close_passes(output.double(), reference.double(), TOLERANCE)
            if record is None:
                check(False, f"{name}: no check for {target} (ids: {sorted(checks)[:8]})")
                continue
            got = record.get("stats", {}).get("max_abs")
            check(got == want and (record["status"] == "pass") == passed,
                  f"{name} {target}: driftgate max_abs {got!r} status {record['status']}; Python max_abs {want!r} "
                  f"assert_close {'passes' if passed else 'fails'}")
            passes, fails = passes + passed, fails + (not passed)
    check(passes > 0 and fails > 0, f"the cases hold both verdicts ({passes} pass, {fails} fail)")

    # The run header lists each input's arguments with dtype, shape, source and hash.
    with open(run_file) as lines:
        header = json.loads(lines.readline())
    encoder = next(e for e in header["experiments"] if e["name"] == "encoder")
    listed = {a["name"]: a for a in encoder.get("input_args", [{}])[0].get("args", [])}
    check(listed.get("ids", {}).get("dtype") == "int64" and listed["ids"].get("shape") == [1, POSITIONS] and
          len(listed["ids"].get("hash", "")) == 40 and listed.get("token_type_ids", {}).get("source") == "fill(1)",
          f"the header lists the encoder's arguments: {encoder.get('input_args')}")

    # A misspelt argument: exit 2, the schema and a did-you-mean, nothing written.
    bad = os.path.join(work, "misspelt.yaml")
    with open(bad, "w") as out:
        out.write("name: misspelt\nmodel: masked_lm.pt\ninputs:\n  - name: x\n    args: {ids: {tensor: encoder_ids.npy}, "
                  "atention_mask: {tensor: encoder_mask.npy}}\ntargets: [frozen]\n")
    bad_run = os.path.join(work, "misspelt.jsonl")
    result = driftgate_run(driftgate, bad, bad_run)
    check(result.returncode == 2 and "forward has no argument 'atention_mask'; did you mean 'attention_mask'?"
          in result.stderr and "forward(Tensor ids, Tensor attention_mask) -> Tensor" in result.stderr and
          not os.path.exists(bad_run),
          f"misspelt argument: exit {result.returncode}, stderr {result.stderr!r}")

    # float32 ids: the model's own failure, recorded as crash_ref with LibTorch's message.
    np.save(os.path.join(work, "float_ids.npy"), cases[1][2][0].numpy().astype(np.float32))
    np.save(os.path.join(work, "big_ids.npy"), np.full((1, POSITIONS), 500, dtype=np.int64))
    for label, ids_file, words in (("float_ids", "float_ids.npy", "Expected tensor for argument #1 'indices'"),
                                   ("big_ids", "big_ids.npy", "index out of range")):
        config = os.path.join(work, f"{label}.yaml")
        with open(config, "w") as out:
            out.write(f"name: {label}\nmodel: lm.pt\ninputs:\n  - name: x\n    args: {{ids: {{tensor: {ids_file}}}}}\n"
                      "targets: [frozen]\noracle: false\nrepeats: 1\nlatency: {warmup: 0, runs: 1}\n")
        crash_run = os.path.join(work, f"{label}.jsonl")
        result = driftgate_run(driftgate, config, crash_run)
        records = read_checks(crash_run) if os.path.exists(crash_run) else {}
        statuses = {r["status"] for r in records.values()}
        messages = " ".join(r.get("message", "") for r in records.values())
        check(result.returncode == 1 and statuses == {"crash_ref"} and words in messages,
              f"{label}: exit {result.returncode}, statuses {statuses}, messages {messages[:400]!r}, "
              f"stderr {result.stderr[-400:]!r}")

    # A uint16 .npy: refused, naming the NumPy call that converts it.
    np.save(os.path.join(work, "u16.npy"), np.zeros((1, POSITIONS), dtype=np.uint16))
    config = os.path.join(work, "u16.yaml")
    with open(config, "w") as out:
        out.write("name: u16\nmodel: lm.pt\ninputs:\n  - name: x\n    args: {ids: {tensor: u16.npy}}\n"
                  "targets: [frozen]\n")
    result = driftgate_run(driftgate, config, os.path.join(work, "u16.jsonl"))
    check(result.returncode == 2 and "holds uint16" in result.stderr and
          "numpy.save(path, array.astype(numpy.int64))" in result.stderr and
          not os.path.exists(os.path.join(work, "u16.jsonl")),
          f"uint16: exit {result.returncode}, stderr {result.stderr!r}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())

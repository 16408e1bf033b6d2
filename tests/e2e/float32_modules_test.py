#!/usr/bin/python3
"""`float32_modules` against an independent Python computation (issue 25).

A backend {base: cpu_bf16, float32_modules: [...]} must compute what this script computes its own
way, with eager PyTorch (Debian's python3-torch, the same 1.13 library LibTorch is): the torchvision
model loaded with the exported file's weights, cast to bfloat16 as a whole with .to(), then each
listed submodule replaced by a deep copy of the float32 original (its exact float32 weights, never
a round trip through bfloat16), a forward pre-hook casting its floating-point inputs to float32 and
a forward hook casting its output to bfloat16 unless forward returns it or only another listed
module reads it (directly or through operations that read nothing else, which run in float32); the input cast to bfloat16, unless the module that reads it is listed (it then
reads the float32 input, as in the reference). driftgate instead keeps
the listed modules' parameters out of its dtype conversion and inserts casts into the TorchScript
graph. Both run on one thread on the same kernels, so the greatest absolute difference from the
float32 model that driftgate records (tier 1's max_abs, and where it is) must equal Python's
max |fp32 - mixed| exactly (both differences are exact in float64); the same for plain cpu_bf16
(which shows the two computations are comparable at all), and the mixed result must differ from
plain bfloat16's. Also: the mixed backend frozen without numerics changes gives the same numbers,
tier 2 on the mixed backend observes every reference layer (the inserted casts are conversions of
one value), and a module name the model lacks stops the run with exit 2 and the nearest names.

Models: resnet18 (64x64; layer1.0.relu is called twice per forward) and mobilenet_v3_small (96x96),
seeded weights and measured BatchNorm statistics as tools/export_models.py makes the demo models.

Environment: DRIFTGATE (the binary). Exit 0 when every comparison holds.
"""
import copy
import json
import os
import subprocess
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # driftgate runs OpenBLAS on the backend's threads too
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import export_models  # noqa: E402  (the exporter: how every demo model is made)
from e2e_support import check, read_checks, summary, work_dir  # noqa: E402

CASES = [
    # (name, architecture, input size, float32_modules, the modules that read the model's input,
    #  the listed modules whose output stays float32: it is what forward returns, or only another
    #  listed module reads it)
    ("resnet18", "resnet18", 64, ["layer1.0.relu", "layer4.1.conv2", "fc"], ["conv1"], ["fc"]),
    ("mobilenet_v3_small", "mobilenet_v3_small", 96, ["features.12", "classifier.3"], ["features.0.0"],
     ["classifier.3"]),
    # The first convolution listed: it reads the float32 input itself, not a bfloat16 copy.
    ("mobilenet_first", "mobilenet_v3_small", 96, ["features.0.0", "classifier.3"], ["features.0.0"],
     ["classifier.3"]),
    # classifier.1 reads classifier.0's float32 output, not a copy rounded to bfloat16.
    ("mobilenet_chain", "mobilenet_v3_small", 96, ["classifier.0", "classifier.1", "classifier.3"], ["features.0.0"],
     ["classifier.0", "classifier.3"]),
    # The flatten between avgpool and classifier.0 (forward's own torch.flatten) reads only a
    # listed module's output: it runs in float32 too, so classifier.0 reads avgpool's float32 output.
    ("mobilenet_flatten", "mobilenet_v3_small", 96, ["avgpool", "classifier.0", "classifier.3"], ["features.0.0"],
     ["avgpool", "classifier.3"]),
]



def submodule(model, name):
    for part in name.split("."):
        model = getattr(model, part)
    return model


def mixed_model(eager, listed, keep, round_trip=False):
    """The model in bfloat16 except the listed modules: float32 copies of the originals (with
    round_trip, their weights pass through bfloat16 first: what driftgate must not do); the
    outputs of the modules in `keep` are not cast back to bfloat16."""
    mixed = copy.deepcopy(eager).to(torch.bfloat16)
    for name in listed:
        parent_name, _, leaf = name.rpartition(".")
        parent = submodule(mixed, parent_name) if parent_name else mixed
        original = copy.deepcopy(submodule(eager, name))
        if round_trip:
            original = original.to(torch.bfloat16).to(torch.float32)

        def to_float32(_module, inputs):
            return tuple(x.float() if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs)

        def to_bfloat16(_module, _inputs, output):
            return output.to(torch.bfloat16)

        original.register_forward_pre_hook(to_float32)
        if name not in keep:
            original.register_forward_hook(to_bfloat16)
        setattr(parent, leaf, original)
    return mixed.eval()


def max_abs(reference, target):
    """max |reference - target| in float64 and its index, as tier 1 records them (first maximum)."""
    diff = (reference.double() - target.double()).abs()
    flat = int(torch.argmax(diff.reshape(-1)))
    return float(diff.reshape(-1)[flat]), [int(i) for i in np.unravel_index(flat, diff.shape)]


def main():
    driftgate = os.environ.get("DRIFTGATE", "driftgate")
    torch.set_num_threads(1)  # driftgate's backends run on one thread unless told otherwise
    work = work_dir("dg_float32_modules_")
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    configs = []
    expected = {}
    for name, arch, size, listed, readers, keep in CASES:
        model = export_models.demo_classifier(arch, generator, size=size)
        example = torch.randn(1, 3, size, size, generator=generator)
        path = os.path.join(work, f"{name}.pt")
        export_models.export(model, example, path)
        x = torch.randn(1, 3, size, size, generator=generator)
        np.save(os.path.join(work, f"{name}.npy"), x.numpy())

        eager = getattr(torchvision.models, arch)(weights=None)
        eager.load_state_dict(torch.jit.load(path).state_dict())
        eager.eval()
        with torch.no_grad():
            reference = eager(x)
            plain = copy.deepcopy(eager).to(torch.bfloat16).eval()(x.to(torch.bfloat16))
            x_mixed = x if all(reader in listed for reader in readers) else x.to(torch.bfloat16)
            mixed = mixed_model(eager, listed, keep)(x_mixed)
            round_trip = mixed_model(eager, listed, keep, round_trip=True)(x_mixed)
        expected[name] = {
            "cpu_bf16": max_abs(reference, plain),
            "mixed": max_abs(reference, mixed),
            "mixed_frozen": max_abs(reference, mixed),
            "round_trip": max_abs(reference, round_trip),
        }
        config = os.path.join(work, f"{name}.yaml")
        with open(config, "w") as out:
            out.write(f"name: {name}\nmodel: {name}.pt\ninputs: [{{name: x, tensor: {name}.npy}}]\n"
                      "targets: [cpu_bf16, mixed, mixed_frozen]\noracle: false\nlatency: {warmup: 2, runs: 1}\n"
                      f"activations: {'always' if name == 'mobilenet_v3_small' else 'off'}\n"
                      f"backends:\n  mixed: {{base: cpu_bf16, float32_modules: [{', '.join(listed)}]}}\n"
                      "  mixed_frozen: {base: mixed, graph: frozen, optimize_numerics: false}\n")
        configs.append(config)

    run_file = os.path.join(work, "run.jsonl")
    result = subprocess.run([driftgate, "run", *configs, "-o", run_file, "-q"], capture_output=True, text=True)
    check(result.returncode == 1, f"driftgate run exits 1 (failing bfloat16 checks), got {result.returncode}: "
          f"{result.stderr.strip()[-2000:]}")
    if result.returncode not in (0, 1):
        return summary()
    records = read_checks(run_file)

    for arch, _arch, _size, listed, _readers, _keep in CASES:
        values = expected[arch]
        for target in ("cpu_bf16", "mixed", "mixed_frozen"):
            record = records.get(f"{arch}/x/cpu_fp32~{target}/out")
            if record is None:
                check(False, f"{arch}: no check for {target} (ids: {sorted(records)})")
                continue
            stats = record.get("stats", {})
            want, where = values[target]
            check(stats.get("max_abs") == want and stats.get("max_abs_index") == where,
                  f"{arch} {target}: driftgate max_abs {stats.get('max_abs')!r} at {stats.get('max_abs_index')}, "
                  f"Python {want!r} at {where}")
        check(values["mixed"][0] != values["cpu_bf16"][0],
              f"{arch}: float32_modules {listed} changes max_abs ({values['mixed'][0]!r} vs cpu_bf16's "
              f"{values['cpu_bf16'][0]!r})")
        if values["round_trip"][0] != values["mixed"][0]:
            print(f"     {arch}: weights round-tripped through bfloat16 would give {values['round_trip'][0]!r}: "
                  "the comparison above tells exact float32 weights from them")

    # Tier 2 on the mixed backend: every reference layer has a counterpart; the casts pair with nothing.
    localization = records.get("mobilenet_v3_small/x/cpu_fp32~mixed/out", {}).get("localization")
    check(localization is not None and localization.get("not_observable") == 0 and
          localization.get("observed") == localization.get("layers") and not localization.get("note"),
          "tier 2 on the mixed backend observes every layer: " +
          json.dumps({k: v for k, v in (localization or {}).items() if k != "profile"}))

    # A name the model lacks: a config error (exit 2, nothing written) naming the nearest names.
    bad = os.path.join(work, "bad.yaml")
    with open(bad, "w") as out:
        out.write("name: bad\nmodel: mobilenet_v3_small.pt\ninputs: [{name: x, tensor: mobilenet_v3_small.npy}]\n"
                  "targets: [mixed]\nbackends:\n  mixed: {base: cpu_bf16, float32_modules: [classifier.9]}\n")
    bad_run = os.path.join(work, "bad.jsonl")
    result = subprocess.run([driftgate, "run", bad, "-o", bad_run, "-q"], capture_output=True, text=True)
    want = (f"error: {bad}: backend 'mixed': float32_modules: model '{work}/mobilenet_v3_small.pt' has no module "
            "'classifier.9'; the nearest it has: classifier.0, classifier.1, classifier.2 (named_modules() lists "
            "them all)\n")
    check(result.returncode == 2 and result.stderr == want and not os.path.exists(bad_run),
          f"unknown module: exit {result.returncode}, stderr {result.stderr!r}, run file written: "
          f"{os.path.exists(bad_run)}")

    return summary()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The onnxruntime backends (an ONNX file run by ONNX Runtime in driftgate-ort) against an
independent computation in Python: torch loads the TorchScript file, onnxruntime (Python) the
ONNX file exported from the same eager model (tools/export_models.py's export_onnx), both get
torch.randn(shape, generator=torch.Generator().manual_seed(S)) (what driftgate's
`random: {seed: S, distribution: normal}` is), and per output the test computes what driftgate's
tier 1 records: max |target - reference| and the verdict of torch.testing.assert_close with the
check's atol and rtol. Four torchvision models: resnet18, mobilenet_v3_small,
lraspp_mobilenet_v3_large (a dict output: the flat ONNX outputs must come back under the
TorchScript model's key) and SSDlite's detection head (a tuple of three), each against both
providers (cpu, dnnl) at the four graph optimization levels (disable, basic, extended, all), on
one intra-op thread: there the same ONNX Runtime gives the same bits in C++ and in Python, so
the target's value at driftgate's max_abs index must be Python's exactly, and max_abs (the exact
difference, computed in float64 on both sides) must be equal, not just close.

Where driftgate was built without ONNX Runtime (Debian 12: no libonnxruntime; this interpreter
then has no onnx either) the same configs must record the onnxruntime targets as skipped with a
reason and exit 0; a config naming an onnxruntime backend without `onnx_model:` is a config
error (exit 2, nothing written) in both.

Usage: onnxruntime_test.py [DRIFTGATE]   (default: $DRIFTGATE, else driftgate on PATH)
"""
import json
import re
import os
import subprocess
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402
import torchvision  # noqa: E402

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
sys.path.insert(0, TOOLS)
import export_detection  # noqa: E402  (the exporter: how every demo model and ONNX file is made)
import export_models  # noqa: E402
from e2e_support import check, summary, work_dir, assert_close_passes, read_checks  # noqa: E402


def classifier(name):
    return lambda: getattr(torchvision.models, name)(weights=None)


def lraspp():
    return torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)


# (name, builder, input size, kind): kind says how the exporter makes the TorchScript and ONNX files.
CASES = [
    ("resnet18", classifier("resnet18"), 64, "tensor"),
    ("mobilenet_v3_small", classifier("mobilenet_v3_small"), 64, "tensor"),
    ("lraspp", lraspp, 64, "dict"),
    ("ssdlite_head", None, export_detection.SIZE, "detection"),
]
LEVELS = ["disable", "basic", "extended", "all"]
ORT_LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
              "all": "ORT_ENABLE_ALL"}
# target -> (provider, level, threads, the backend's YAML or None for a builtin). The builtins run
# every optimization on one thread; the custom backends name their level (and one its threads).
TARGETS = {
    "ort_cpu_disable": ("cpu", "disable", 1, "{base: onnxruntime, optimization: disable}"),
    "ort_cpu_basic": ("cpu", "basic", 1, "{base: onnxruntime, optimization: basic, threads: 1}"),
    "ort_cpu_extended": ("cpu", "extended", 1, "{base: onnxruntime, optimization: extended}"),
    "onnxruntime": ("cpu", "all", 1, None),
    "ort_dnnl_disable": ("dnnl", "disable", 1, "{base: onnxruntime_dnnl, optimization: disable}"),
    "ort_dnnl_basic": ("dnnl", "basic", 1, "{base: onnxruntime, provider: dnnl, optimization: basic}"),
    "ort_dnnl_extended": ("dnnl", "extended", 1, "{base: onnxruntime_dnnl, optimization: extended}"),
    "onnxruntime_dnnl": ("dnnl", "all", 1, None),
}
# One tolerance for every check: tight enough that some ONNX Runtime outputs (1e-5..4e-5 from
# TorchScript here: the exporter folds BatchNorm into the convolutions, ONNX Runtime's kernels
# differ) fail it, loose enough that others pass.
TOLERANCE = 1e-5
SEED = 7


def leaves(output, path="out"):
    """The TorchScript output's tensors by the names driftgate's check ids give them (dict keys
    sorted, as runner/tier1.cc does)."""
    if isinstance(output, dict):
        return {name: leaf for key in sorted(output) for name, leaf in leaves(output[key], f"{path}['{key}']").items()}
    if isinstance(output, (tuple, list)):
        return {name: leaf for i, item in enumerate(output) for name, leaf in leaves(item, f"{path}[{i}]").items()}
    return {path: output}


def session(path, provider, level, threads):
    """What driftgate-ort opens (ort/worker.cc): the same session options and provider."""
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, ORT_LEVELS[level])
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # driftgate-ort sets the oneDNN provider's use_arena (its C struct's field); Python's provider
    # options have no such key (1.21: "Invalid OneDNN EP option: use_arena", and it falls back to the
    # CPU provider alone), and the arena only decides where buffers live, not what is computed.
    providers = ["DnnlExecutionProvider", "CPUExecutionProvider"] if provider == "dnnl" else ["CPUExecutionProvider"]
    result = onnxruntime.InferenceSession(path, options, providers=providers)
    # Opening the oneDNN provider sets OpenMP's thread count (omp_set_num_threads) to the machine's
    # cores whatever intra_op_num_threads says, and torch takes its intra-op threads from OpenMP:
    # every later torch.jit.load(...)(x) here would run on those (1x1 convolutions through oneDNN,
    # not OpenBLAS; other summation orders: SSDlite's head then differed from driftgate's one-thread
    # cpu_fp32 by ~1e-5). Back to the one thread of driftgate's reference.
    torch.set_num_threads(1)
    check(result.get_providers()[0] == providers[0], f"{path}: onnxruntime opened it with {providers[0]} "
          f"(got {result.get_providers()})")
    return result


def build(work, name, builder, size, kind, generator, onnx):
    """NAME.pt and (with onnx) NAME.onnx in work, made by the exporter's functions."""
    export_onnx = export_models.export_onnx if onnx else None
    if kind == "detection":
        ssd = export_detection.demo_ssdlite(generator, export_models.randomize_batchnorm,
                                            export_models.calibrate_batchnorm)
        example = torch.randn(1, 3, size, size, generator=generator)
        export_detection.export_head(ssd, "ssdlite", example, work, export_models.log, export_onnx)
        return
    model = builder()
    export_models.randomize_batchnorm(model, generator)
    export_models.calibrate_batchnorm(model, torch.randn(4, 3, size, size, generator=generator))
    example = torch.randn(1, 3, size, size, generator=generator)
    output_of = (lambda y: y["out"]) if kind == "dict" else (lambda y: y)
    export_models.export(model, example, os.path.join(work, f"{name}.pt"), output_of=output_of,
                         strict=kind != "dict")
    if onnx:
        export_onnx(model, example, os.path.join(work, f"{name}.onnx"), output_of=output_of)


def write_config(work, name, size, onnx_model, model=None, targets=None):
    path = os.path.join(work, f"{name}.yaml")
    targets = targets or list(TARGETS)
    custom = "".join(f"  {target}: {TARGETS[target][3]}\n" for target in targets if TARGETS[target][3])
    with open(path, "w") as out:
        out.write(f"name: {name}\nmodel: {model or name}.pt\n" +
                  (f"onnx_model: {onnx_model}\n" if onnx_model else "") +
                  f"inputs: [{{name: x, random: {{shape: [1, 3, {size}, {size}], seed: {SEED}, distribution: normal}}}}]\n"
                  f"targets: [{', '.join(targets)}]\n" + (f"backends:\n{custom}" if custom else "") +
                  f"tolerance: {{atol: {TOLERANCE}, rtol: {TOLERANCE}}}\n"
                  "oracle: false\nactivations: off\nlatency: {warmup: 1, runs: 1}\n")
    return path


def run_bad(driftgate, work, config, name):
    run_file = os.path.join(work, f"{name}.jsonl")
    result = subprocess.run([driftgate, "run", config, "-o", run_file, "-q"], capture_output=True, text=True)
    return result, os.path.exists(run_file)


def main():
    driftgate = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DRIFTGATE", "driftgate")
    torch.set_num_threads(1)  # driftgate's reference, cpu_fp32, runs on one thread
    torch.manual_seed(0)  # torchvision's initialization: the same weights, so the same verdicts, every run
    onnx = export_models.can_export_onnx()
    print(f"torch {torch.__version__}: onnx and onnxruntime {'are' if onnx else 'are not'} installed here")
    if onnx:
        import onnxruntime
        providers = onnxruntime.get_available_providers()
        print(f"onnxruntime {onnxruntime.__version__}: {', '.join(providers)}")
        check("DnnlExecutionProvider" in providers, "onnxruntime has the oneDNN provider (DnnlExecutionProvider)")
    work = work_dir("dg_onnxruntime_")
    generator = torch.Generator().manual_seed(0)
    configs, expected = [], {}
    for name, builder, size, kind in CASES:
        build(work, name, builder, size, kind, generator, onnx)
        configs.append(write_config(work, name, size, f"{name}.onnx"))
        if not onnx:
            continue
        x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(SEED))
        with torch.no_grad():
            reference = leaves(torch.jit.load(os.path.join(work, f"{name}.pt"))(x))
        for target, (provider, level, threads, _yaml) in TARGETS.items():
            ort = session(os.path.join(work, f"{name}.onnx"), provider, level, threads)
            names = [output.name for output in ort.get_outputs()]
            check(sorted(names) == sorted(reference), f"{name}: the ONNX outputs {names} are the TorchScript "
                  f"output's leaves {sorted(reference)}")
            outputs = dict(zip(names, ort.run(None, {"input": x.numpy()})))
            values = {}
            for key, want in reference.items():
                got = torch.from_numpy(outputs[key])
                # The exact difference, as driftgate records it: float32 - float32 in float64 (a
                # float32 subtraction would round it, e.g. 1.8671127557754517 for 1.8671127706766129).
                exact = (got.double() - want.double()).abs().max().item()
                values[key] = (exact, assert_close_passes(got, want, TOLERANCE), got)
            expected[(name, target)] = values
            print(f"     Python: {name} {target}: " +
                  ", ".join(f"{key} max_abs {max_abs:.3g} {'pass' if passed else 'fail'}"
                            for key, (max_abs, passed, _got) in values.items()))

    run_file = os.path.join(work, "run.jsonl")
    result = subprocess.run([driftgate, "run", *configs, "-o", run_file, "-q"], capture_output=True, text=True)
    checks = read_checks(run_file) if os.path.exists(run_file) else {}
    if not onnx:
        # No onnx here: driftgate was built without ONNX Runtime (Debian 12), and the ONNX files
        # named by the configs could not be exported. Every onnxruntime target is skipped, saying why.
        check(result.returncode == 0, f"driftgate without ONNX Runtime: exit 0 (onnxruntime skipped), got "
              f"{result.returncode}: {result.stderr.strip()[-1500:]}")
        for name, _builder, _size, _kind in CASES:
            for target in TARGETS:
                records = [r for i, r in checks.items() if i.startswith(f"{name}/x/cpu_fp32~{target}/")]
                check(len(records) > 0 and all(r["status"] == "skipped" and "ONNX Runtime" in r.get("message", "")
                                               for r in records),
                      f"{name} {target}: skipped naming ONNX Runtime: "
                      f"{[(r['status'], r.get('message')) for r in records]}")
    else:
        # driftgate's exit follows the verdicts; those of the cases with an exact reference are known.
        verdicts = [passed for values in expected.values() for _, passed, _got in values.values()]
        want_exit = 0 if all(verdicts) else 1
        # Both verdicts among the outputs that differ (SSDlite's anchors, a constant, never do).
        differing = [passed for values in expected.values() for max_abs, passed, _got in values.values() if max_abs > 0]
        check(any(differing) and not all(differing), "the cases hold both verdicts (some checks pass assert_close, "
              f"some fail it): {sum(differing)} of {len(differing)} differing outputs pass")
        check(result.returncode == want_exit or (want_exit == 0 and result.returncode == 1),
              f"driftgate run exits {want_exit}, got {result.returncode}: "
              f"{result.stderr.strip()[-2000:]}")
        for (name, target), values in expected.items():
            case_max = 0.0
            for key, (max_abs, passed, python_target) in values.items():
                record = checks.get(f"{name}/x/cpu_fp32~{target}/{key}")
                if record is None:
                    check(False, f"{name}: no check {target} {key} (ids: {sorted(checks)[:12]} ...)")
                    continue
                stats = record.get("stats", {})
                got = stats.get("max_abs")
                # One intra-op thread: the same ONNX Runtime gives the same bits in driftgate-ort and in
                # this process, so the target's value where driftgate found the largest difference must
                # be this process's, exactly (and names the right output of the flat ONNX ones).
                index = stats.get("max_abs_index")
                want_target = python_target[tuple(index)].item() if index is not None else None
                check(stats.get("max_abs_target") == want_target,
                      f"{name} {target} {key}: driftgate's target value at {index} {stats.get('max_abs_target')!r}, "
                      f"onnxruntime in Python {want_target!r}")
                # And with the same LibTorch on one thread (see session()) the reference too, so
                # max_abs must be equal and the verdict the same.
                close = got == max_abs and (record["status"] == "pass") == passed
                check(close,
                      f"{name} {target} {key}: driftgate max_abs {got!r} status {record['status']}; Python max_abs "
                      f"{max_abs!r} assert_close {'passes' if passed else 'fails'}")
                case_max = max(case_max, max_abs)
            # The exported graph differs from TorchScript's (BatchNorm folded): a zero would mean the
            # target ran the TorchScript model, or the comparison saw one side twice.
            check(case_max > 0.0, f"{name} {target}: ONNX Runtime differs from TorchScript somewhere "
                  f"(max over outputs {case_max!r})")
        # --mitigate on a failing ONNX Runtime target (resnet18 at level all, a tolerance nothing
        # passes): it tries ort_basic (the same provider at level basic) and eager (the TorchScript
        # model itself), never onednn_off (LibTorch's flag); the ort_basic variant's difference is
        # what onnxruntime in Python computes at level basic, and eager is the reference exactly.
        tight = write_config(work, "mitigate", 64, "resnet18.onnx", model="resnet18", targets=["onnxruntime"])
        with open(tight) as f:
            text = f.read().replace(f"atol: {TOLERANCE}, rtol: {TOLERANCE}", "atol: 1.0e-9, rtol: 0.0")
        with open(tight, "w") as f:
            f.write(text)
        result = subprocess.run([driftgate, "run", tight, "-o", os.path.join(work, "mitigate.jsonl"), "--mitigate"],
                                capture_output=True, text=True)
        lines = result.stderr + result.stdout
        variants = sorted(set(re.findall(r"cpu_fp32~onnxruntime\+([a-z_+]+):", lines)))
        check(result.returncode == 1 and variants == ["eager", "ort_basic"],
              f"--mitigate on onnxruntime: exit 1, variants eager and ort_basic, got exit {result.returncode}, "
              f"{variants}: {lines.strip()[-800:]}")
        basic = re.search(r"cpu_fp32~onnxruntime\+ort_basic: .*?max \|a-b\| (\S+) vs reference", lines)
        want = expected[("resnet18", "ort_cpu_basic")]["out"][0]
        check(basic is not None and basic.group(1) == f"{want:.3g}",
              f"--mitigate's ort_basic variant: max |a-b| {basic.group(1) if basic else None} vs onnxruntime's "
              f"level basic in Python {want:.3g}")
        eager = re.search(r"cpu_fp32~onnxruntime\+eager: .*?max \|a-b\| (\S+) vs reference", lines)
        check(eager is not None and eager.group(1) == "0", f"--mitigate's eager variant is the reference: "
              f"{eager.group(1) if eager else None}")

        # The worker's threads hold for oneDNN too: its provider sets OpenMP to every core when the
        # session is created (as it did to this process: see session()); the worker puts it back and
        # reports what OpenMP then says.
        worker = os.path.join(os.path.dirname(os.path.abspath(driftgate)), "driftgate-ort")
        for provider, threads in (("dnnl", 1), ("dnnl", 2), ("cpu", 1)):
            started = subprocess.run([worker, os.path.join(work, "resnet18.onnx"), provider, "all", str(threads)],
                                     input=b"", capture_output=True)
            announce = json.loads(started.stdout.decode().splitlines()[0]) if started.stdout else {}
            want = (threads,) if provider == "dnnl" else (threads, -1)
            check(started.returncode == 0 and announce.get("openmp_threads") in want,
                  f"driftgate-ort {provider} threads {threads}: OpenMP runs {announce.get('openmp_threads')} "
                  f"(want {want}), exit {started.returncode}, {started.stderr.decode()[-300:]!r}")

        # A worker that dies in a forward: the check is crash_target, saying how the worker ended
        # (DRIFTGATE_ORT_WORKER names the worker; this one announces itself, then takes SIGSEGV).
        fake = os.path.join(work, "dying-worker.sh")
        with open(fake, "w") as f:
            f.write("#!/bin/bash\necho '{\"ok\": true, \"ort_version\": \"0\", \"input\": {\"name\": \"input\", "
                    "\"shape\": [1, 3, 64, 64]}, \"outputs\": [\"out\"], \"openmp_threads\": -1, "
                    "\"out_spec\": null}'\nread -r line\nkill -SEGV $$\n")
        os.chmod(fake, 0o755)
        dying = os.path.join(work, "dying.jsonl")
        result = subprocess.run([driftgate, "run", tight, "-o", dying, "-q"], capture_output=True, text=True,
                                env=dict(os.environ, DRIFTGATE_ORT_WORKER=fake))
        records = list(read_checks(dying).values()) if os.path.exists(dying) else []
        check(len(records) == 1 and records[0]["status"] == "crash_target" and
              "killed by signal 11" in records[0].get("message", ""),
              f"a worker killed in its forward: crash_target naming the signal, got "
              f"{[(r['status'], r.get('message')) for r in records]} (exit {result.returncode})")

        # ONNX files that are not there, not ONNX, or with several outputs but no driftgate_out_spec:
        # a model-file error (exit 2, nothing written).
        import onnx as onnx_lib
        proto = onnx_lib.load(os.path.join(work, "ssdlite_head.onnx"))
        del proto.metadata_props[:]
        onnx_lib.save(proto, os.path.join(work, "no_spec.onnx"))
        for name, onnx_model, model, size in (("missing", "missing.onnx", "resnet18", 64),
                                              ("not_onnx", "resnet18.pt", "resnet18", 64),
                                              ("no_spec", "no_spec.onnx", "ssdlite_head", export_detection.SIZE)):
            bad = write_config(work, f"bad_{name}", size, onnx_model, model=model, targets=["onnxruntime"])
            result, written = run_bad(driftgate, work, bad, f"bad_{name}")
            check(result.returncode == 2 and os.path.join(work, onnx_model) in result.stderr and not written,
                  f"onnx_model {onnx_model}: exit {result.returncode} (want 2, naming the file, nothing written), "
                  f"{result.stderr.strip()[-600:]!r}")

    # Naming an onnxruntime backend without an ONNX file: a config error, with or without ONNX Runtime.
    for target in ("onnxruntime", "ort_dnnl_basic"):
        bad = write_config(work, "bad", 64, None, model="resnet18", targets=[target])
        result, written = run_bad(driftgate, work, bad, "bad")
        check(result.returncode == 2 and "'onnx_model: PATH.onnx'" in result.stderr and not written,
              f"{target} without onnx_model: exit {result.returncode}, {result.stderr.strip()[-600:]!r}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())

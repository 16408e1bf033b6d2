#!/usr/bin/python3
"""Tier 2 on a scripted model, the export the README recommends (torch.jit.script): LibTorch 1.13's
optimize_for_inference defect on mobilenet_v3_small is named and confirmed with the right group, a
control upstream of it is not confirmed, and the frozen graph of the same model is clean.

The scripted mobilenet_v3_small holds 89 top-level prim::If nodes (every block's `use_res_connect`,
every batch norm's `training`); tier 2 once stopped at the first and profiled 14 of 157 layers. Here
the scripted and the traced exports of the same eager model must get the same profile size, the
same module-call count and the same answer.

The defect, found by Python on its own: optimize_for_inference turns each conv -> batch norm ->
hardswish into a oneDNN convolution followed by an in-place oneDNN hardswish
(prim::MKLDNNHardSwish_). This script runs the optimized graph with every top-level value cloned
out (the convolution's output is cloned before the in-place hardswish overwrites it) and compares
each hardswish's output with torch's own hardswish of the value it read. Where they differ the
hardswish miscomputed a convolution's blocked output (on an AVX-512 CPU, 120 channels padded to
128: LibTorch warns "An output with one or more elements was resized"). The module is named by the
convolution's folded weight (`self.features.7.block.0.0.weight_fused_bn_mkldnn`): the activation
is that Conv2dNormActivation's element 2. Then:
  * explain names that activation (features.7.block.0.2/aten::hardswish_#1) and re-injection is
    `confirmed` with a group of exactly that convolution and that hardswish;
  * `--reinject` on the last good hardswish before it gives `not_confirmed`, its group the same
    shape;
  * the frozen target: every layer ok or `not_observable` with reason `fused`, nothing divergent;
  * the module-call count equals Python's forward-hook count and is the same on every target.
On a CPU where Python finds no defective hardswish (an AVX2 one, measured), explain must name none.
Under LibTorch 2.6 (oneDNN 3.6) the optimized graph of this model, scripted or traced, dies of
SIGFPE (an integer division by zero in mkldnn_add_out) in Python too: there explain must say that
the localization's process died (exit 2), and the frozen checks still hold.

Environment: DRIFTGATE (the binary). Exit 0 when every check holds.
"""
import json
import os
import pickle
import subprocess
import sys
import warnings

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import export_models  # noqa: E402
from e2e_support import check, summary, work_dir  # noqa: E402

SIZE = 64
SEED = 0


def dense(tensor):
    return tensor.to_dense() if tensor.is_mkldnn else tensor


def hook_calls(model, x):
    """Module calls of the eager model that compute something: every call of a named module (the
    root left out) during which some torch function ran (a pass-through such as nn.Identity runs
    none)."""
    stack = []
    counted = []

    class Seen(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            for frame in stack:
                frame[1] = True
            return func(*args, **(kwargs or {}))

    def pre(module, inputs, name):
        stack.append([name, False])

    def post(module, inputs, output):
        name, ran = stack.pop()
        if ran:
            counted.append(name)

    handles = []
    for name, module in model.named_modules():
        if name:
            handles.append(module.register_forward_pre_hook(lambda m, i, name=name: pre(m, i, name)))
            handles.append(module.register_forward_hook(post))
    with torch.no_grad(), Seen():
        model(x)
    for handle in handles:
        handle.remove()
    return counted


def defective_hardswishes(optimized, x):
    """(conv module, hardswish error) for every in-place oneDNN hardswish of the optimized graph whose
    output is not torch's hardswish of what it read, in graph order."""
    graph = optimized.graph.copy()
    nodes = list(graph.nodes())
    none = graph.insertConstant(None)
    none.node().moveBefore(nodes[0])
    watched = []  # (conv module, input clone, output clone)
    for node in nodes:
        if node.kind() != "prim::MKLDNNHardSwish_":
            continue
        read = node.inputsAt(0)
        if read.node().kind() != "prim::mkldnn_convolution":
            continue
        weight = read.node().inputsAt(1).debugName()  # self.features.7.block.0.0.weight_fused_bn_mkldnn
        module = weight[len("self."):weight.index(".weight")]
        before = graph.create("aten::clone", [read, none])
        before.output().setType(read.type())
        before.insertAfter(read.node())
        after = graph.create("aten::clone", [node.output(), none])
        after.output().setType(node.output().type())
        after.insertAfter(node)
        watched.append((module, before.output(), after.output()))
    outputs = [v for _, a, b in watched for v in (a, b)]
    returned = graph.create("prim::TupleConstruct", outputs)
    returned.output().setType(torch._C.TupleType([v.type() for v in outputs]))
    graph.appendNode(returned)
    graph.eraseOutput(0)
    graph.registerOutput(returned.output())
    function = torch._C._create_function_from_graph("watched", graph)
    with torch.no_grad():
        values = function(optimized._c, x)
    found = []
    for i, (module, _, _) in enumerate(watched):
        read, written = dense(values[2 * i]), dense(values[2 * i + 1])
        error = float((F.hardswish(read) - written).abs().max())
        found.append((module, error))
    return found


def in_child(function):
    """function() in a forked child: (its result, None), or (None, the signal it died of)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        data = pickle.dumps(function())
        while data:
            data = data[os.write(write, data):]
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    return pickle.loads(b"".join(chunks)), None


def explain(driftgate, config, check_id, json_path, *extra, may_fail=False):
    """(exit code, the localization or None, stderr)."""
    command = [driftgate, "explain", check_id, config, "--json", json_path, *extra]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode not in (0, 1):
        if may_fail:
            return result.returncode, None, result.stderr
        raise SystemExit(f"driftgate explain failed ({result.returncode}): {' '.join(command)}\n{result.stderr}")
    with open(json_path) as f:
        return result.returncode, json.load(f), result.stderr


def bare(name):
    return name.split(" (")[0]


def main():
    driftgate = os.environ["DRIFTGATE"]
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="An output with one or more elements was resized")
    work = work_dir("dg_tier2_scripted_")
    generator = torch.Generator().manual_seed(SEED)
    torch.manual_seed(SEED)
    model = export_models.demo_classifier("mobilenet_v3_small", generator, size=SIZE).eval()
    x = torch.randn(1, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(SEED))
    scripted = torch.jit.script(model)
    ifs = sum(1 for node in scripted.inlined_graph.nodes() if node.kind() == "prim::If")
    check(ifs > 80, f"the scripted graph holds {ifs} top-level prim::If nodes")
    scripted.save(os.path.join(work, "scripted.pt"))
    with torch.no_grad():
        torch.jit.trace(model, x, check_trace=False).save(os.path.join(work, "traced.pt"))
    calls = len(hook_calls(model, x))
    for export in ("scripted", "traced"):
        with open(os.path.join(work, f"{export}.yaml"), "w") as f:
            f.write(f"name: {export}\nmodel: {export}.pt\n"
                    f"inputs:\n  - {{name: noise, random: {{shape: [1, 3, {SIZE}, {SIZE}], seed: {SEED}, "
                    f"distribution: normal}}}}\nreference: cpu_fp32\ntargets: [optimized, frozen]\n")
    # Python's own run of the optimized graph, in a child: LibTorch 2.6's dies of it.
    hardswishes, died = in_child(
        lambda: defective_hardswishes(torch.jit.optimize_for_inference(torch.jit.script(model)), x))
    answers = {}
    for export in ("scripted", "traced"):
        config = os.path.join(work, f"{export}.yaml")
        for target in ("optimized", "frozen"):
            code, result, stderr = explain(driftgate, config, f"{export}/noise/cpu_fp32~{target}/out",
                                           os.path.join(work, f"{export}-{target}.json"),
                                           may_fail=target == "optimized" and died is not None)
            if result is None:
                check("the process died" in stderr and "killed by signal" in stderr,
                      f"{export} {target}: explain exits {code} saying the localization's process died "
                      f"(Python's died of signal {died} too): {stderr.strip()[-200:]}")
                continue
            answers[export, target] = code, result
    for (export, target), (code, result) in sorted(answers.items()):
        check(result["calls"] == calls,
              f"{export} {target}: {result['calls']} module calls, as Python's forward hooks count ({calls})")
    for target in ("optimized", "frozen"):
        if (("scripted", target) not in answers) or (("traced", target) not in answers):
            continue
        scripted_result, traced_result = answers["scripted", target][1], answers["traced", target][1]
        check(scripted_result["layers"] == traced_result["layers"],
              f"{target}: the scripted profile has the traced one's {traced_result['layers']} layers "
              f"({scripted_result['layers']})")
        check(bare(scripted_result["first_divergent"]) == bare(traced_result["first_divergent"]),
              f"{target}: scripted and traced name the same first divergent layer "
              f"('{scripted_result['first_divergent']}', '{traced_result['first_divergent']}')")

    if died is not None:
        print(f"Python: optimize_for_inference's graph died of signal {died}: no defect to confirm")
        hardswishes = []
    defective = [(module, error) for module, error in hardswishes if error > 1e-3]
    good_before = [module for module, _ in hardswishes[:hardswishes.index(defective[0])]] if defective else []
    if died is None:
        print(f"Python: {len(hardswishes)} in-place oneDNN hardswishes after a convolution, "
              f"{len(defective)} miscomputed: {defective}")
    if defective:
        code, result = answers["scripted", "optimized"]
        conv, _ = defective[0]
        activation = conv[:-1] + "2"  # Conv2dNormActivation: 0 conv, 1 batch norm, 2 activation
        check(code == 1 and bare(result["first_divergent"]) == f"{activation}/aten::hardswish_#1",
              f"optimized: explain names {activation}'s hardswish (exit {code}, '{result['first_divergent']}')")
        group = [bare(name) for name in result.get("reinjection_group", [])]
        check(result["reinjection"] == "confirmed" and group == [
            f"{conv}/prim::mkldnn_convolution#1", f"{activation}/prim::MKLDNNHardSwish_#1"],
              f"optimized: re-injection {result['reinjection']} with the group {group}")
        check(good_before != [], "Python finds a correct hardswish before the defective one (the control)")
        if good_before:
            control = good_before[-1][:-1] + "2"
            _, controlled, _ = explain(driftgate, os.path.join(work, "scripted.yaml"),
                                       "scripted/noise/cpu_fp32~optimized/out", os.path.join(work, "control.json"),
                                       "--reinject", f"{control}/aten::hardswish_#1")
            group = [bare(name) for name in controlled.get("reinjection_group", [])]
            check(controlled["reinjection"] == "not_confirmed" and group == [
                f"{good_before[-1]}/prim::mkldnn_convolution#1", f"{control}/prim::MKLDNNHardSwish_#1"],
                  f"control {control}: re-injection {controlled['reinjection']} with the group {group}")
    elif died is None:
        code, result = answers["scripted", "optimized"]
        print("the optimized graph computes every hardswish right on this CPU: explain must name none")
        check(result["first_divergent"] == "", f"optimized: no divergent layer ('{result['first_divergent']}')")

    code, frozen = answers["scripted", "frozen"]
    statuses = {(row[1], row[6] if len(row) > 6 else "") for row in frozen["profile"]}
    check(code == 0 and frozen["status"] == "within_thresholds" and frozen["first_divergent"] == "",
          f"frozen: nothing divergent (exit {code}, {frozen['status']})")
    check(statuses <= {("ok", ""), ("not_observable", "fused")},
          f"frozen: every layer compared or not_observable: fused ({sorted(statuses)})")
    return summary()


if __name__ == "__main__":
    sys.exit(main())

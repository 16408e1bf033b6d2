#!/usr/bin/python3
"""Tier 2 on the onnxruntime backends (alignment "onnx_scope") against an independent
localizer in Python. Two torchvision models (resnet18, mobilenet_v3_small) are exported as
TorchScript and ONNX (tools/export_models.py), and a second ONNX file of each has one Conv
weight deep in the model scaled (the `onnx` package), so that its block's output diverges.

The Python side decides from the spec, on its own, which values can be compared: a module M
(not the root) whose output ("exit") is a value both graphs compute:
  1. M runs once (eager: forward hooks count its calls; ONNX: the exporter names a second
     call's scope with a `_1` suffix),
  2. the ONNX nodes in M's scope (node names /layer1/layer1.0/conv1/Conv: module
     layer1.0.conv1) produce exactly one value read outside the scope or a graph output,
  3. the modules reading that value are the same in both graphs (eager: a torch function mode
     records the module every op runs in and the values it reads; ONNX: the scopes of the
     reading nodes), and no BatchNorm reads it in the eager model (the exporter folds batch
     norms into the convolution before them: the ONNX Conv then computes conv+bn),
  4. the same shape.
Modules sharing one exit value (layer1 and layer1.1) are one layer. It takes the reference
values from the eager model (hooks, cloned: in-place ReLUs rewrite tensors later), the noise
floor from a float64 copy, and the target values from onnxruntime in Python running the ONNX
file with the exits added as graph outputs (the provider and level of the target, one
intra-op thread). Per layer delta = max |ort - ref| / (max - min of ref) in float64, noise
floor the same of the float32 reference against float64, threshold = max(10 * noise floor,
(atol + rtol * max |ref|) / range): divergent when delta is over it.

Against driftgate's `localization` in each check record of `run` (activations: always,
oracle: true): alignment "onnx_scope", as many observed layers as compared values here, made
by the same modules in the same order, the same deltas (both sides run the same float32
kernels on one thread: relative 1e-9), on the clean files the first divergent layer found here
(none, except where the provider itself miscomputes on this CPU: oneDNN 3.7's 1x1 stride-2
convolution on an AVX-512 CPU makes resnet18's layer4.0.downsample diverge), and, on the
perturbed ones, the first divergent layer in the perturbed block (or the clean file's, where
that comes first), the one found here, with every layer before it ok.

Where this interpreter has no onnx/onnxruntime (Debian 12: driftgate is then built without
ONNX Runtime; tests/e2e/onnxruntime_test.py checks that those targets are skipped), it prints
a skip line and exits 0.

Usage: onnxruntime_tier2_test.py [DRIFTGATE]   (default: $DRIFTGATE, else driftgate on PATH)
"""
import copy
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402
import torchvision  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils import _pytree as pytree  # noqa: E402

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
sys.path.insert(0, TOOLS)
import export_models  # noqa: E402  (the exporter: how every demo model and ONNX file is made)
from e2e_support import check, summary, work_dir, read_checks  # noqa: E402

# (model, input size, the ONNX node whose weight is scaled, the block that must hold the first
# divergent layer of the perturbed file).
CASES = [
    ("resnet18", 64, "/layer3/layer3.0/conv2/Conv", "layer3.0."),
    ("mobilenet_v3_small", 64, "/features/features.6/block/block.0/block.0.0/Conv", "features.6."),
]
# target -> (provider, optimization level): the builtins, one intra-op thread.
TARGETS = {"onnxruntime": ("cpu", "ORT_ENABLE_ALL"), "onnxruntime_dnnl": ("dnnl", "ORT_ENABLE_ALL")}
TOLERANCE = 1e-4
NOISE_FACTOR = 10.0
PERTURB_SCALE = 1.5
SEED = 7
DELTA_RTOL = 1e-9
NOISE_RTOL = 1e-6


class Tracer(TorchFunctionMode):
    """The eager model's dataflow at module granularity: every torch function call that returns
    tensors is one op, run in the innermost module on the hook stack; each tensor it returns is
    a new value (an in-place op's result too: the ONNX graph and TorchScript give it a new
    name). Per value: the module that made it and the modules of the ops that read it; per
    module: its calls and its output value (cloned)."""

    def __init__(self, model):
        super().__init__()
        self.stack = []  # (exporter-style path: k-th call of a module gets "_k", plain path)
        self.calls = Counter()  # plain module path -> calls
        self.value_of = {}  # id(tensor) -> its current value
        self.alive = []  # every tensor seen, so that no id is reused during the forward
        self.producer = []  # value -> plain path of the module whose op made it
        self.readers = defaultdict(set)  # value -> exporter-style paths of the ops reading it
        self.batchnorm_reads = set()  # values a BatchNorm module's op reads
        self.exit = {}  # plain module path -> (value, clone of the output)
        self.batchnorm = set()
        self.paused = False  # the hooks' own clones are no ops of the model
        self.handles = []
        for path, module in model.named_modules():
            if not path:
                continue
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                self.batchnorm.add(path)
            self.handles.append(module.register_forward_pre_hook(self.enter(path)))
            self.handles.append(module.register_forward_hook(self.leave(path)))

    def enter(self, path):
        def hook(_module, _inputs):
            k = self.calls[path]
            self.calls[path] += 1
            parent = self.stack[-1][0] if self.stack else ""
            atom = path.rsplit(".", 1)[-1] + (f"_{k}" if k else "")
            self.stack.append((f"{parent}.{atom}" if parent else atom, path))
        return hook

    def leave(self, path):
        def hook(_module, _inputs, output):
            self.stack.pop()
            if isinstance(output, torch.Tensor) and id(output) in self.value_of:
                self.paused = True
                try:
                    self.exit[path] = (self.value_of[id(output)], output.detach().clone())
                finally:
                    self.paused = False
        return hook

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if self.paused:
            return result
        outputs = [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
        if not outputs:  # shape queries and the like: not ops of the exported graphs
            return result
        where, plain = self.stack[-1] if self.stack else ("", "")
        for t in pytree.tree_leaves((args, kwargs)):
            if isinstance(t, torch.Tensor) and id(t) in self.value_of:
                self.readers[self.value_of[id(t)]].add(where)
                if plain in self.batchnorm:
                    self.batchnorm_reads.add(self.value_of[id(t)])
        for t in outputs:
            self.value_of[id(t)] = len(self.producer)
            self.producer.append(plain)
            self.alive.append(t)
        return result

    def close(self):
        for handle in self.handles:
            handle.remove()


def trace(model, x):
    tracer = Tracer(model)
    try:
        with torch.no_grad(), tracer:
            output = model(x)
    finally:
        tracer.close()
    return tracer, output


def module_path(node_name):
    """/layer2/layer2.0/downsample/downsample.0/Conv -> layer2.0.downsample.0 (a component that
    extends the one before it, layer2 -> layer2.0, names that one's child); /Flatten -> ""."""
    components = node_name.split("/")[1:-1] if node_name.startswith("/") else []
    path, previous = [], None
    for component in components:
        if previous is not None and component.startswith(previous + "."):
            path.append(component[len(previous) + 1:])
        else:
            path.append(component)
        previous = component
    return ".".join(path)


def in_scope(path, scope):
    return path == scope or path.startswith(scope + ".")


def select_layers(proto, tracer, shapes):
    """The compared layers, in the eager graph order: [(eager value, ONNX value name, modules)],
    by the four rules of the module docstring."""
    node_paths = [module_path(node.name) for node in proto.graph.node]
    # Nodes without a scope: the exporter's Identity copies of deduplicated initializers (equal
    # biases), constants in no module. Every node that computes from the input has one.
    initializers = {initializer.name for initializer in proto.graph.initializer}
    unscoped = [node.name for node in proto.graph.node
                if not node.name.startswith("/") and not set(node.input) <= initializers]
    check(not unscoped, f"every ONNX node reading more than initializers is named by its scope "
          f"(/module/.../Op): {unscoped[:5]}")
    readers = defaultdict(set)
    for node, path in zip(proto.graph.node, node_paths):
        for name in node.input:
            if name:
                readers[name].add(path)
    graph_outputs = {output.name for output in proto.graph.output}
    chosen = {}  # eager value -> (ONNX value, [modules])
    for path, calls in tracer.calls.items():
        if calls != 1 or path not in tracer.exit:
            continue
        if any(in_scope(p, f"{path}_1") for p in node_paths):  # the exporter's second call
            continue
        scope = [node for node, p in zip(proto.graph.node, node_paths) if in_scope(p, path)]
        exits = {name for node in scope for name in node.output
                 if name in graph_outputs or any(not in_scope(r, path) for r in readers[name])}
        if len(exits) != 1:
            continue
        (onnx_value,) = exits
        value, reference = tracer.exit[path]
        if value in tracer.batchnorm_reads or tracer.readers[value] != readers[onnx_value]:
            continue
        if tuple(reference.shape) != tuple(shapes.get(onnx_value, ())):
            continue
        if value in chosen and chosen[value][0] != onnx_value:
            check(False, f"eager value of {path} maps to two ONNX values: {chosen[value][0]}, {onnx_value}")
            continue
        chosen.setdefault(value, (onnx_value, []))[1].append(path)
    return [(value, onnx_value, modules) for value, (onnx_value, modules) in sorted(chosen.items())]


def session(path, provider, level):
    """What driftgate-ort opens (ort/worker.cc): one intra-op thread, sequential, no spinning."""
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, level)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    providers = ["DnnlExecutionProvider", "CPUExecutionProvider"] if provider == "dnnl" else ["CPUExecutionProvider"]
    result = onnxruntime.InferenceSession(path, options, providers=providers)
    torch.set_num_threads(1)  # oneDNN's provider sets OpenMP to every core (see onnxruntime_test.py)
    return result


def with_outputs(source, target, names):
    """The ONNX file with `names` added as graph outputs (ONNX Runtime needs no type for them)."""
    import onnx
    proto = onnx.load(source)
    present = {output.name for output in proto.graph.output}
    for name in names:
        if name not in present:
            proto.graph.output.add().name = name
    onnx.save(proto, target)


def all_value_shapes(work, onnx_path, x):
    """Every node output's shape, from onnxruntime with no graph optimization (all as outputs)."""
    import onnx
    proto = onnx.load(onnx_path)
    names = [name for node in proto.graph.node for name in node.output if name]
    probe = os.path.join(work, "shapes.onnx")
    with_outputs(onnx_path, probe, names)
    ort = session(probe, "cpu", "ORT_DISABLE_ALL")
    order = [output.name for output in ort.get_outputs()]
    return {name: tuple(value.shape) for name, value in zip(order, ort.run(None, {"input": x.numpy()}))}


def normalized_difference(value, base):
    """max |value - base| / (max - min of base) in float64 (base's max |.| when it is constant)."""
    b, v = base.double(), value.double()
    low, high = b.min().item(), b.max().item()
    max_abs = max(abs(low), abs(high))
    scale = high - low if high > low else (max_abs if max_abs > 0 else 1.0)
    return (v - b).abs().max().item() / scale, scale, max_abs


def localize(layers, reference, oracle, target):
    """Per compared layer: (delta, noise floor, threshold, divergent)."""
    rows = []
    for value, onnx_value, modules in layers:
        ref = reference[value]
        delta, scale, max_abs = normalized_difference(target[onnx_value], ref)
        noise, _, _ = normalized_difference(ref, oracle[value])
        threshold = max(NOISE_FACTOR * noise, (TOLERANCE + TOLERANCE * max_abs) / scale)
        rows.append((delta, noise, threshold, delta > threshold))
    return rows


def build(work, name, size, generator):
    """NAME.pt and NAME.onnx as onnxruntime_test.py makes them; returns the eager model."""
    model = getattr(torchvision.models, name)(weights=None)
    export_models.randomize_batchnorm(model, generator)
    export_models.calibrate_batchnorm(model, torch.randn(4, 3, size, size, generator=generator))
    example = torch.randn(1, 3, size, size, generator=generator)
    export_models.export(model, example, os.path.join(work, f"{name}.pt"))
    export_models.export_onnx(model, example, os.path.join(work, f"{name}.onnx"))
    model.eval()
    return model


def perturb(source, target, node_name, scale):
    """A copy of the ONNX file with node_name's weight initializer scaled."""
    import onnx
    from onnx import numpy_helper
    proto = onnx.load(source)
    nodes = [node for node in proto.graph.node if node.name == node_name]
    check(len(nodes) == 1 and nodes[0].op_type == "Conv", f"{source}: one Conv node {node_name}")
    weight = nodes[0].input[1]
    for i, initializer in enumerate(proto.graph.initializer):
        if initializer.name == weight:
            array = numpy_helper.to_array(initializer) * scale
            proto.graph.initializer[i].CopyFrom(numpy_helper.from_array(array, weight))
            onnx.save(proto, target)
            return
    check(False, f"{source}: {node_name}'s weight {weight} is no initializer")


def write_config(work, name, model, onnx_model, size, targets):
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as out:
        out.write(f"name: {name}\nmodel: {model}.pt\nonnx_model: {onnx_model}\n"
                  f"inputs: [{{name: x, random: {{shape: [1, 3, {size}, {size}], seed: {SEED}, distribution: normal}}}}]\n"
                  f"targets: [{', '.join(targets)}]\n"
                  f"tolerance: {{atol: {TOLERANCE}, rtol: {TOLERANCE}}}\n"
                  "oracle: true\nactivations: always\nlatency: {warmup: 1, runs: 1}\n")
    return path


def module_of(layer_name):
    """driftgate's layer name "layer3.0.relu/aten::relu_#2 (activation.py:103)" -> layer3.0.relu."""
    return layer_name.split("/")[0] if "/" in layer_name else ""


def compare(check_id, record, everything, layers, rows, block, clean_rows):
    """driftgate's localization of one check against the Python one: `everything` is the module
    of every eager value (graph order), `layers` the compared ones, `rows` their figures."""
    localization = (record or {}).get("localization")
    if localization is None:
        check(False, f"{check_id}: a localization in the check record "
                     f"({(record or {}).get('status')}: {(record or {}).get('message', '')[:300]})")
        return
    check(localization.get("alignment") == "onnx_scope",
          f"{check_id}: alignment onnx_scope (got {localization.get('alignment')!r}; note "
          f"{localization.get('note', '')[:300]!r})")
    profile = localization.get("profile", [])
    # The reference's captured values are the eager model's ops, one for one, in the same order.
    theirs = [module_of(layer[0]) for layer in profile]
    check(localization.get("layers") == len(profile) and theirs == everything,
          f"{check_id}: the profile's {localization.get('layers')} layers are the eager model's {len(everything)} "
          f"values, made by the same modules in the same order"
          + "".join(f"\n  #{i}: driftgate {a!r}, Python {b!r}" for i, (a, b) in enumerate(zip(theirs, everything))
                    if a != b)[:2000])
    observed = [i for i, layer in enumerate(profile) if layer[1] != "not_observable"]
    mine = [value for value, _onnx_value, _modules in layers]
    check(localization.get("observed") == len(observed) == len(layers) and observed == mine,
          f"{check_id}: the {len(layers)} values compared here are driftgate's observed layers (driftgate: "
          f"observed {localization.get('observed')} of {localization.get('layers')}; only driftgate: "
          f"{[profile[i][0] for i in sorted(set(observed) - set(mine))][:8]}; only here: "
          f"{[modules for value, _o, modules in layers if value not in observed][:8]})")
    if observed != mine:
        return
    table = []
    mismatches = []
    for i, (layer, (delta, noise, threshold, divergent)) in enumerate(zip((profile[i] for i in observed), rows)):
        name, status, got, got_noise, got_threshold = layer[:5]
        if not isinstance(got, float) or abs(got - delta) > DELTA_RTOL * abs(delta):
            mismatches.append(f"#{i} {name}: driftgate {got!r}, Python {delta!r}")
        table.append(f"  {i:3d} {name[:64]:64s} {status:9s} delta {got!r} (Python {delta!r}) noise floor "
                     f"{got_noise!r} ({noise!r}) threshold {got_threshold!r} ({threshold!r})"
                     f"{' divergent here' if divergent else ''}")
    equal = sum(profile[i][2] == row[0] for i, row in zip(observed, rows))
    worst = max((abs(profile[i][2] - row[0]) / row[0] for i, row in zip(observed, rows)
                 if isinstance(profile[i][2], float) and row[0] > 0), default=0.0)
    check(not mismatches, f"{check_id}: the {len(rows)} observed deltas are Python's within {DELTA_RTOL:g} "
          f"relative ({equal} equal, largest relative difference {worst:.3g})"
          + "".join(f"\n  {m}" for m in mismatches[:20]))
    # The noise floors: float64 both sides (TorchScript there, eager here), the same kernels.
    floors = [(profile[i][0], profile[i][3], row[1]) for i, row in zip(observed, rows)
              if not isinstance(profile[i][3], float) or abs(profile[i][3] - row[1]) > NOISE_RTOL * row[1]]
    check(not floors, f"{check_id}: the noise floors are Python's within {NOISE_RTOL:g} relative: "
          f"{floors[:5]}")
    first = localization.get("first_divergent", "")
    statuses = [profile[i][1] for i in observed]
    mine_first = next((i for i, row in enumerate(rows) if row[3]), None)
    if mismatches or floors or os.environ.get("VERBOSE"):
        print("\n".join(table))
    index = next((i for i, p in enumerate(observed) if profile[p][0] == first), None)
    if block is None:
        # The clean file diverges only where the provider itself miscomputes on this CPU (oneDNN 3.7's
        # 1x1 stride-2 convolution on AVX-512: resnet18's layer4.0.downsample); driftgate must say
        # what Python says, a layer or none.
        if mine_first is not None:
            print(f"     Python: {check_id}: the clean file already diverges at "
                  f"{everything[layers[mine_first][0]]} (the provider's own error on this CPU)")
        check(index == mine_first and (first == "") == (mine_first is None),
              f"{check_id}: on the clean file driftgate's first divergent {first!r} (observed #{index}) is "
              f"Python's (observed #{mine_first})")
        worst = max(range(len(rows)), key=lambda i: rows[i][0] / rows[i][2])
        print(f"     {check_id}: largest delta / threshold {rows[worst][0] / rows[worst][2]:.3g} at "
              f"{profile[observed[worst]][0]}")
        return
    clean_first = next((i for i, row in enumerate(clean_rows) if row[3]), None)
    if clean_first is not None and mine_first == clean_first:
        # The provider's own divergence comes before the perturbed block: that is the answer.
        block = everything[layers[clean_first][0]]
        print(f"     {check_id}: the clean file's divergence at {block} comes before the perturbed one")
    check(mine_first is not None and everything[layers[mine_first][0]].startswith(block),
          f"{check_id}: Python's first divergent layer is in {block} "
          f"({everything[layers[mine_first][0]] if mine_first is not None else None})")
    check(module_of(first).startswith(block) and index is not None and index == mine_first,
          f"{check_id}: driftgate's first divergent {first!r} (observed #{index}) is Python's "
          f"(observed #{mine_first}: {everything[layers[mine_first][0]] if mine_first is not None else None}), "
          f"in {block}")
    before = statuses[:mine_first or 0]
    check(before == ["ok"] * len(before), f"{check_id}: the {len(before)} observed layers before it are ok "
          f"({[profile[i][0] for i, status in zip(observed, before) if status != 'ok'][:5]} are not)")
    if mine_first is not None:
        print(f"     {check_id}: first divergent {first} delta {rows[mine_first][0]:.6g} "
              f"(threshold {rows[mine_first][2]:.3g}), observed layer {mine_first + 1} of {len(rows)}")


def main():
    driftgate = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DRIFTGATE", "driftgate")
    if not export_models.can_export_onnx():
        print(f"skip: torch {torch.__version__} here has no onnx/onnxruntime (Debian 12: driftgate has no "
              "ONNX Runtime either); tier 2 on the onnxruntime backends is tested under Debian 13")
        return 0
    import onnx
    torch.set_num_threads(1)  # driftgate's reference, cpu_fp32, runs on one thread
    torch.manual_seed(0)  # torchvision's initialization: the same weights every run
    work = work_dir("dg_onnxruntime_tier2_")
    generator = torch.Generator().manual_seed(0)
    configs, expected = [], {}
    for name, size, node_name, block in CASES:
        model = build(work, name, size, generator)
        clean = os.path.join(work, f"{name}.onnx")
        perturbed = os.path.join(work, f"{name}_perturbed.onnx")
        perturb(clean, perturbed, node_name, PERTURB_SCALE)
        x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(SEED))
        tracer, output = trace(model, x)
        with torch.no_grad():
            scripted = torch.jit.load(os.path.join(work, f"{name}.pt"))(x)
        check(torch.equal(output, scripted), f"{name}: the hooked eager model's output is the TorchScript file's, "
              f"bit for bit (max |a-b| {(output - scripted).abs().max().item():.3g})")
        oracle_tracer, _ = trace(copy.deepcopy(model).double(), x.double())
        proto = onnx.load(clean)
        layers = select_layers(proto, tracer, all_value_shapes(work, clean, x))
        print(f"     Python: {name}: {len(layers)} compared layers of {len(tracer.producer)} values: " +
              ", ".join(f"{'+'.join(modules)}={onnx_value}" for _v, onnx_value, modules in layers))
        reference = {value: tracer.exit[modules[0]][1] for value, _o, modules in layers}
        oracle = {value: oracle_tracer.exit[modules[0]][1] for value, _o, modules in layers}
        for variant, onnx_path, variant_block in ((name, clean, None), (f"{name}_perturbed", perturbed, block)):
            probe = os.path.join(work, f"{variant}.probe.onnx")
            with_outputs(onnx_path, probe, [onnx_value for _v, onnx_value, _m in layers])
            for target, (provider, level) in TARGETS.items():
                ort = session(probe, provider, level)
                names = [o.name for o in ort.get_outputs()]
                values = {n: torch.from_numpy(v) for n, v in zip(names, ort.run(None, {"input": x.numpy()}))}
                rows = localize(layers, reference, oracle, values)
                clean_rows = expected[f"{name}/x/cpu_fp32~{target}/out"][2] if variant_block else rows
                expected[f"{variant}/x/cpu_fp32~{target}/out"] = (tracer.producer, layers, rows, variant_block,
                                                                   clean_rows)
            configs.append(write_config(work, variant, name, os.path.basename(onnx_path), size, list(TARGETS)))

    run_file = os.path.join(work, "run.jsonl")
    result = subprocess.run([driftgate, "run", *configs, "-o", run_file, "-q"], capture_output=True, text=True)
    check(result.returncode in (0, 1) and os.path.exists(run_file),
          f"driftgate run exits 0 or 1 and writes the run file, got {result.returncode}: "
          f"{result.stderr.strip()[-2000:]}")
    checks = read_checks(run_file) if os.path.exists(run_file) else {}
    for check_id, (everything, layers, rows, block, clean_rows) in expected.items():
        compare(check_id, checks.get(check_id), everything, layers, rows, block, clean_rows)
    # explain --target-model with an ONNX file: the clean config's check, the perturbed file as
    # the target, must give the perturbed run's localization.
    for name, _size, _node, _block in CASES:
        json_path = os.path.join(work, f"{name}.explain.json")
        command = [driftgate, "explain", f"{name}/x/cpu_fp32~onnxruntime/out", os.path.join(work, f"{name}.yaml"),
                   "--target-model", os.path.join(work, f"{name}_perturbed.onnx"), "--json", json_path]
        result = subprocess.run(command, capture_output=True, text=True)
        run_record = checks.get(f"{name}_perturbed/x/cpu_fp32~onnxruntime/out") or {}
        want = (run_record.get("localization") or {}).get("first_divergent")
        got = {}
        if result.returncode == 1 and os.path.exists(json_path):
            with open(json_path) as f:
                got = json.load(f)
        check(result.returncode == 1 and got.get("alignment") == "onnx_scope" and want and
              got.get("first_divergent") == want,
              f"{name}: explain --target-model {name}_perturbed.onnx: exit {result.returncode}, first divergent "
              f"{got.get('first_divergent')!r} (the perturbed run's: {want!r}) {result.stderr.strip()[-400:]}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())

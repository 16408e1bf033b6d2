#!/usr/bin/env bash
# driftgate explain and tier 2 in run: a perturbed weight is named first; bad input exits 2;
# failing checks carry a schema-valid localization; a build without LibTorch says it cannot explain.
source "$(dirname "$0")/lib.sh"
tools="$(cd "$(dirname "$0")/../../tools" && pwd)"

if [[ "${DRIFTGATE_WITH_TORCH:-1}" != 1 ]]; then
  expect_exit 2 "explain in a build without LibTorch" -- "$DRIFTGATE" explain 'a/b/c~d/out' x.yaml
  expect_contains "$work/stderr" "built without LibTorch" "it says why"
  finish
  exit
fi

expect_exit 0 "explain --help" -- "$DRIFTGATE" explain --help
expect_contains "$work/stdout" "driftgate explain 'resnet18_oracle/scene0/cpu_fp32~xnnpack/out'" "--help shows an example"
expect_exit 2 "explain without arguments" -- "$DRIFTGATE" explain
expect_exit 2 "explain with a malformed check id" -- "$DRIFTGATE" explain 'resnet18/scene0' /nonexistent.yaml
expect_contains "$work/stderr" "is not a check id; expected <experiment>/<input>/<reference>~<target>/<output>" \
  "the message says what a check id looks like"

: "${TEST_MODELS:?set TEST_MODELS to the folder tools/export_models.py test wrote}"

cp "$TEST_MODELS/tiny_conv.pt" "$work/tiny.pt"
cat >"$work/tiny.yaml" <<YAML
name: tiny
model: tiny.pt
inputs:
  - {name: noise, random: {shape: [1, 3, 16, 16], seed: 3}}
reference: cpu_fp32
targets: [onednn_off, frozen]
tolerance: {atol: 1.0e-4, rtol: 1.0e-4}
YAML
expect_exit 2 "an unknown experiment" -- "$DRIFTGATE" explain 'tinny/noise/cpu_fp32~frozen/out' "$work/tiny.yaml"
expect_contains "$work/stderr" "no experiment 'tinny'; did you mean 'tiny'? (they define: tiny)" "did-you-mean for the experiment"
expect_exit 2 "an unknown target" -- "$DRIFTGATE" explain 'tiny/noise/cpu_fp32~xnnpack/out' "$work/tiny.yaml"
expect_contains "$work/stderr" "no target 'xnnpack'" "the target must be one of the experiment's"
expect_exit 2 "a missing --target-model" -- \
  "$DRIFTGATE" explain 'tiny/noise/cpu_fp32~frozen/out' "$work/tiny.yaml" --target-model "$work/nope.pt"

expect_exit 0 "the unchanged model has no divergent layer" -- \
  "$DRIFTGATE" explain 'tiny/noise/cpu_fp32~onednn_off/out' "$work/tiny.yaml"
expect_contains "$work/stdout" "no divergent layer; coverage 100%" "position alignment observes every layer"

/usr/bin/python3 "$tools/export_models.py" perturb "$work/tiny.pt" "$work/conv.pt" --scale 1.05 \
  --parameter features.3.weight 2>/dev/null
/usr/bin/python3 "$tools/export_models.py" perturb "$work/tiny.pt" "$work/head.pt" --scale 1.05 \
  --parameter head.weight 2>/dev/null
expect_exit 1 "a perturbed conv, runtime-only target" -- \
  "$DRIFTGATE" explain 'tiny/noise/cpu_fp32~onednn_off/out' "$work/tiny.yaml" --target-model "$work/conv.pt" \
  --json "$work/conv.json"
expect_contains "$work/stdout" "first divergent: features.3/aten::" "names the perturbed conv first"
expect_contains "$work/stdout" "re-injection confirmed" "the conv alone reproduces the divergence"
expect_contains "$work/conv.json" '"first_divergent":"features.3/aten::' "--json writes the localization"
expect_exit 1 "a perturbed head, graph-rewriting target" -- \
  "$DRIFTGATE" explain 'tiny/noise/cpu_fp32~frozen/out' "$work/tiny.yaml" --target-model "$work/head.pt"
expect_contains "$work/stdout" "alignment: boundary" "frozen aligns at module boundaries"
expect_contains "$work/stdout" "first divergent: head/aten::linear#1" "names the perturbed linear first"
expect_contains "$work/stdout" "not_observable" "folded conv-bn values are not observable"

# In run: a tolerance nothing meets makes checks fail, and each carries its localization.
sed 's/tolerance: .*/tolerance: {atol: 0, rtol: 0}/' "$work/tiny.yaml" >"$work/strict.yaml"
"$DRIFTGATE" run "$work/strict.yaml" -o "$work/run.jsonl" 2>"$work/run.log"
checks=$((checks + 1))
failing=$(grep -c '"status":"fail_numeric"' "$work/run.jsonl")
localized=$(grep '"status":"fail_numeric"' "$work/run.jsonl" | grep -c '"localization":{')
if [[ $failing -eq $localized ]]; then echo "ok: all $failing failing checks carry a localization"; else
  failures=$((failures + 1)); echo "FAIL: $localized of $failing failing checks carry a localization"; cat "$work/run.log"; fi
expect_exit 0 "the run file with localizations validates" -- /usr/bin/python3 "$tools/validate_schema.py" run "$work/run.jsonl"
printf 'activations: off\n' >>"$work/strict.yaml"
"$DRIFTGATE" run "$work/strict.yaml" -o "$work/off.jsonl" 2>/dev/null
checks=$((checks + 1))
if ! grep -q '"localization"' "$work/off.jsonl"; then echo "ok: activations: off localizes nothing"; else
  failures=$((failures + 1)); echo "FAIL: activations: off still localized"; fi

# The profile a run attaches to a check and the one explain prints are the same bytes
# (one request builder, one threshold rule), for a rewriting and a runtime-only target,
# with the default per-dtype tolerance and with the oracle rule.
same_profile() {  # RUN.jsonl TARGET EXPLAIN.json: the "profile" arrays, byte for byte
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
def profile(text):
    start = text.index('"profile":[')
    depth, quoted, escaped = 0, False, False
    for i in range(start + len('"profile":'), len(text)):
        c = text[i]
        if quoted:
            escaped = c == "\\" and not escaped
            quoted = not (c == '"' and not escaped)
            continue
        if c == '"':
            quoted = True
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    raise SystemExit("unterminated profile")
run, target, explained = sys.argv[1:]
lines = [l for l in open(run) if f'~{target}/' in l and '"localization"' in l]
if not lines:
    raise SystemExit(f"no localized check of {target} in {run}")
a, b = profile(lines[0]), profile(open(explained).read())
if a != b:
    raise SystemExit(f"{target}: run and explain profiles differ:\n{a[:400]}\n{b[:400]}")
print(f"{target}: {len(json.loads('{' + a + '}')['profile'])} layers, identical")
PY
}
for tolerance in "{atol: 1.0e-6, rtol: 1.0e-6}" "{rule: oracle, atol: 1.0e-6, rtol: 1.0e-6}" "per dtype"; do
  grep -v '^tolerance:' "$work/tiny.yaml" | sed 's/^targets: .*/targets: [frozen, onednn_off, cpu_bf16_autocast]/' \
    >"$work/same.yaml"
  [[ $tolerance == "per dtype" ]] || printf 'tolerance: %s\n' "$tolerance" >>"$work/same.yaml"
  printf 'activations: always\n' >>"$work/same.yaml"
  "$DRIFTGATE" run "$work/same.yaml" -o "$work/same.jsonl" 2>/dev/null
  for target in frozen onednn_off cpu_bf16_autocast; do
    "$DRIFTGATE" explain "tiny/noise/cpu_fp32~$target/out" "$work/same.yaml" --json "$work/$target.json" >/dev/null
    expect_exit 0 "run and explain give the same $target profile (tolerance $tolerance)" -- \
      same_profile "$work/same.jsonl" "$target" "$work/$target.json"
  done
done

# bfloat16 targets get a profile at the loose tolerances users set for them (explain
# used to fail with map::at from atol 0.01 up, and run recorded no localization).
for atol in 0.01 0.1 1; do
  cat >"$work/bf16.yaml" <<YAML
name: tiny
model: tiny.pt
inputs:
  - {name: noise, random: {shape: [1, 3, 16, 16], seed: 3}}
reference: cpu_fp32
targets: [cpu_bf16, cpu_bf16_autocast]
tolerance: {atol: $atol, rtol: 1.6e-2}
activations: always
YAML
  "$DRIFTGATE" run "$work/bf16.yaml" -o "$work/bf16.jsonl" 2>"$work/bf16.log"
  for target in cpu_bf16 cpu_bf16_autocast; do
    "$DRIFTGATE" explain "tiny/noise/cpu_fp32~$target/out" "$work/bf16.yaml" --json "$work/bf16.json" \
      >"$work/stdout" 2>"$work/stderr"
    code=$?
    checks=$((checks + 1))
    if [[ $code -le 1 ]] && grep -q '"profile":\[\[' "$work/bf16.json"; then
      echo "ok: $target at atol $atol: explain gives a profile (exit $code)"
    else
      failures=$((failures + 1)); echo "FAIL: $target at atol $atol: explain exit $code"; cat "$work/stderr"
    fi
    expect_exit 0 "$target at atol $atol: run and explain agree" -- same_profile "$work/bf16.jsonl" "$target" \
      "$work/bf16.json"
  done
done
# The threshold rule (docs/tiers.md, Tier 2): a layer diverges above max(10 x its noise floor x p,
# (atol + rtol x max|reference|) / range), p = the target's unit roundoff over float32's (1 for
# float32, 2^16 for bfloat16). At a zero tolerance only the noise term is left; at a loose one
# the last layer (the model's output, which PyTorch computes here on the same input) shows the
# tolerance term.
threshold_rule() {  # EXPLAIN.json P [ATOL RTOL MODEL]
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, p = sys.argv[1], float(sys.argv[2])
rows = [r for r in json.load(open(path))["profile"] if r[1] != "not_observable"]
if not rows or not all(isinstance(r[3], float) and r[3] > 0 for r in rows):
    raise SystemExit(f"{path}: no observed layer with a noise floor")
def close(a, b):
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))
for name, status, delta, noise, threshold, _rank in rows:
    if (status == "divergent") != (delta > threshold):
        raise SystemExit(f"{name}: {status} with error {delta} against threshold {threshold}")
    if len(sys.argv) == 3 and not close(threshold, 10 * noise * p):
        raise SystemExit(f"{name}: threshold {threshold}, expected 10 x {noise} x {p:g}")
if len(sys.argv) > 3:
    import torch
    atol, rtol, model = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        out = torch.jit.load(model).eval()(x).double()
    name, _status, _delta, noise, threshold, _rank = rows[-1]
    expected = max(10 * noise * p, (atol + rtol * float(out.abs().max())) / float(out.max() - out.min()))
    if not name.startswith("head/") or not close(threshold, expected):
        raise SystemExit(f"{name}: threshold {threshold}, expected {expected} (the tolerance term)")
print(f"{path}: {len(rows)} layers follow the rule")
PY
}
for tolerance in "0 0" "1 0.01"; do
  read -r atol rtol <<<"$tolerance"
  cat >"$work/rule.yaml" <<YAML
name: tiny
model: tiny.pt
inputs:
  - {name: noise, random: {shape: [1, 3, 16, 16], seed: 3, distribution: normal}}
reference: cpu_fp32
targets: [onednn_off, frozen, cpu_bf16, cpu_bf16_autocast]
tolerance: {atol: $atol, rtol: $rtol}
YAML
  for target in onednn_off:1 frozen:1 cpu_bf16:65536 cpu_bf16_autocast:65536; do
    rm -f "$work/rule.json"
    "$DRIFTGATE" explain "tiny/noise/cpu_fp32~${target%%:*}/out" "$work/rule.yaml" --json "$work/rule.json" \
      >/dev/null 2>"$work/rule.log"
    args=("$work/rule.json" "${target##*:}")
    [[ $atol == 0 ]] || args+=("$atol" "$rtol" "$work/tiny.pt")
    expect_exit 0 "${target%%:*} at atol $atol, rtol $rtol: thresholds follow the rule (p = ${target##*:})" -- \
      threshold_rule "${args[@]}"
  done
done
# Re-injection says confirmed only when the first divergent layer's own ops reproduce the
# divergence. "wide" (a 1x1 conv) has one channel a million times larger than the other, which
# alone feeds "narrow": a change of 1e-3 in the small channel's bias is far within wide's
# threshold (its range is ~1e6) and far beyond narrow's (range ~4). narrow is the first divergent
# layer either way, but its own op, re-run on the reference's values, reproduces the error only
# when narrow's own bias changed.
/usr/bin/python3 - "$work/carry.pt" <<'PY'
import sys
import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wide = torch.nn.Conv2d(3, 2, 1)
        self.narrow = torch.nn.Conv2d(2, 1, 1)
    def forward(self, x):
        return self.narrow(self.wide(x))
torch.manual_seed(0)
net = Net().eval()
with torch.no_grad():
    net.wide.weight[0] *= 1e6
    net.wide.bias.copy_(torch.tensor([0.0, 0.5]))
    net.narrow.weight.copy_(torch.tensor([0.0, 1.0]).reshape(1, 2, 1, 1))
    net.narrow.bias.fill_(0.1)
    torch.jit.trace(net, torch.randn(1, 3, 16, 16)).save(sys.argv[1])
PY
cat >"$work/carry.yaml" <<YAML
name: carry
model: carry.pt
inputs:
  - {name: noise, random: {shape: [1, 3, 16, 16], seed: 3, distribution: normal}}
reference: cpu_fp32
targets: [threads_2, frozen]
tolerance: {atol: 0, rtol: 0}
YAML
for change in wide.bias:1.002:not_confirmed narrow.bias:1.01:confirmed; do
  IFS=: read -r parameter scale verdict <<<"$change"
  /usr/bin/python3 "$tools/export_models.py" perturb "$work/carry.pt" "$work/changed.pt" --scale "$scale" \
    --parameter "$parameter" 2>/dev/null
  for target in threads_2 frozen; do
    expect_exit 1 "$parameter changed, $target: narrow diverges" -- "$DRIFTGATE" explain \
      "carry/noise/cpu_fp32~$target/out" "$work/carry.yaml" --target-model "$work/changed.pt"
    expect_contains "$work/stdout" "first divergent: narrow/aten::_convolution#1" "$parameter, $target: narrow first"
    expect_contains "$work/stdout" "re-injection: $verdict (" "$parameter, $target: re-injection $verdict"
  done
done
finish

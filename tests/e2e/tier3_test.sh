#!/usr/bin/env bash
# Tier 3 end to end: the tie fixture (tools/export_models.py tie) through the real
# binary. Native NMS fails on bfloat16, stable NMS passes and the terminal says which
# adapter restored agreement; --mitigate names the cheapest fallbacks and their latency, in
# the record (valid against schema/record.schema.json) and on the terminal; a task output the
# model lacks is an error (exit 2), not a green run of unsupported checks.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

/usr/bin/python3 "$root/tools/export_models.py" tie --out "$work" 2>/dev/null || { echo "FAIL: export"; exit 1; }
cat >"$work/tie.yaml" <<'YAML'
name: tie_detector
model: tie_detector.pt
inputs:
  - name: noise
    random: {shape: [1, 3, 16, 16], seed: 3}
reference: cpu_fp32
targets: [cpu_bf16]
tolerance: {atol: 1.0e-4, rtol: 1.0e-4}
oracle: false
task: {kind: detection, outputs: ["out[0]", "out[1]"], iou_threshold: 0.3, nms: [native, stable]}
YAML

expect_exit 1 "run: the native NMS check fails" -- "$DRIFTGATE" run "$work/tie.yaml" -o "$work/run.jsonl" -q
expect_contains "$work/run.jsonl" '"output":"task:detection[native]","status":"fail_task"' "native NMS: fail_task"
expect_contains "$work/run.jsonl" '"output":"task:detection[stable]","status":"pass"' "stable NMS: pass"
expect_contains "$work/stderr" \
  "tier 3 [tie_detector] noise cpu_fp32~cpu_bf16: stable NMS (score, then x1, y1, x2, y2, class) restores the agreement that native NMS order lost" \
  "the terminal names the adapter that restored agreement"

# Without -q, run ends with each backend's latency (issue 25): median and IQR of the timed
# forwards after warm-up, the reference marked, the ratio to it; the record keeps both.
expect_exit 1 "run, not quiet" -- "$DRIFTGATE" run "$work/tie.yaml" -o "$work/timed.jsonl"
expect_contains "$work/stderr" "latency per forward: median and interquartile range of the timed forwards after warm-up" \
  "the latency table"
expect_contains "$work/stderr" "cpu_fp32 (reference)" "... with the reference marked"
expect_contains "$work/timed.jsonl" '"reference_iqr":' "the record keeps the interquartile ranges"

expect_exit 1 "run --mitigate" -- "$DRIFTGATE" run "$work/tie.yaml" -o "$work/mitigated.jsonl" --mitigate -q
expect_contains "$work/stderr" "mitigation [tie_detector] cpu_bf16: " "the terminal names the target"
expect_contains "$work/stderr" "tried 7 variants" "... every set of fp32, onednn_off, stable_nms"
expect_contains "$work/stderr" "agreement: fp32 + onednn_off" \
  "... and the cheapest that restores tier 1 and is not the reference again (fp32 alone is)"
expect_contains "$work/stderr" " target, x" "... with its latency against the target's and the reference's"
expect_contains "$work/mitigated.jsonl" \
  '"mitigation":{"choices":[{"restores":"tier1","fallbacks":["fp32","onednn_off"' \
  "the record holds the choices"
expect_exit 0 "the run file validates against the record schema" -- \
  /usr/bin/python3 "$root/tools/validate_schema.py" run "$work/mitigated.jsonl"

sed 's/nms: \[native, stable\]/nms: [nativ]/' "$work/tie.yaml" >"$work/bad.yaml"
expect_exit 2 "a misspelled NMS mode is a usage error" -- "$DRIFTGATE" run "$work/bad.yaml" -o "$work/bad.jsonl"
expect_contains "$work/stderr" "unknown nms mode 'nativ'; did you mean 'native'?" "... with a did-you-mean"

# A task output the model lacks is a config error the gate sees: exit 2, the message on stderr, nothing written.
sed 's/outputs: \["out\[0\]", "out\[1\]"\]/outputs: ["logits", "out[1]"]/' "$work/tie.yaml" >"$work/no-logits.yaml"
expect_exit 2 "a task output the model lacks fails the run" -- "$DRIFTGATE" run "$work/no-logits.yaml" \
  -o "$work/no-logits.jsonl" -q
expect_contains "$work/stderr" "the model has no output 'logits' (its outputs: out[0], out[1])" \
  "the model's own outputs are named on stderr"
expect_missing "$work/no-logits.jsonl" "no run file is written"

finish

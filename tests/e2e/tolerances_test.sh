#!/usr/bin/env bash
# `tolerances:` on a real run (tiny_dict: outputs out['logits'] and out['mask']): each check
# records the values it was judged with and where each came from; a failing check's message
# names them; a changed entry is named by diff's "config changed".
source "$(dirname "$0")/lib.sh"
tools="$(cd "$(dirname "$0")/../../tools" && pwd)"
: "${TEST_MODELS:?set TEST_MODELS to the folder tools/export_models.py test wrote}"

new_repo "$work/repo" || exit 1
mkdir -p models configs
cp "$TEST_MODELS/tiny_dict.pt" models/tiny.pt
cat >configs/t.yaml <<'YAML'
name: t
model: ../models/tiny.pt
inputs:
  - {name: noise, random: {shape: [1, 3, 32, 32], seed: 3}}
reference: cpu_fp32
targets: [onednn_off, cpu_bf16]
tolerance: {atol: 1.0e-9, rtol: 0}
tolerances:
  - {dtype: bfloat16, atol: 10, rtol: 10}
  - {target: cpu_bf16, output: "out['mask']", atol: 0, rtol: 0}
  - {target: onednn_off, rule: oracle, k: 1000}
YAML
git add -A && git commit -qm "tiny model"
expect_exit 1 "the run: bf16's mask fails its zero tolerance" -- "$DRIFTGATE" run configs/t.yaml -o "$work/run.jsonl" -q

# Each check's tolerance block, read by Python's json (not driftgate's readers).
/usr/bin/python3 - "$work/run.jsonl" >"$work/tolerances.txt" <<'PY' || exit 1
import json, sys
for line in open(sys.argv[1]):
    record = json.loads(line)
    if record.get("type") == "check":
        t = record["tolerance"]
        k = "%g" % t["k"] if "k" in t else "-"
        print(record["target"], record["output"], record["status"], t["rule"], "%g" % t["atol"], "%g" % t["rtol"], k,
              "|", t.get("origin", "-"))
PY
cat "$work/tolerances.txt"
c=configs/t.yaml
expect_contains "$work/tolerances.txt" "cpu_bf16 out['logits'] pass assert_close 10 10 - | rule $c:7:12; atol/rtol $c:9:5" \
  "bf16 logits: atol/rtol from the dtype entry, the rule from the experiment"
expect_contains "$work/tolerances.txt" "cpu_bf16 out['mask'] fail_numeric assert_close 0 0 - | rule $c:7:12; atol/rtol $c:10:5" \
  "bf16 mask: target+output over dtype"
expect_contains "$work/tolerances.txt" "onednn_off out['logits'] pass oracle 1e-09 0 1000 | rule $c:11:5; atol/rtol $c:7:12; k $c:11:5" \
  "onednn_off: the oracle rule with k 1000 from its target entry"
expect_contains "$work/run.jsonl" "· tolerance from rule $c:7:12; atol/rtol $c:10:5" \
  "the failing check's message says where its tolerance was set"
expect_contains "$work/run.jsonl" "\"tolerances\":[{\"dtype\":\"bfloat16\",\"atol\":10.0,\"rtol\":10.0,\"origin\":\"$c:9:5\"}," \
  "the header keeps the entries"

expect_exit 0 "the run file validates against schema/record.schema.json" -- \
  /usr/bin/python3 "$tools/validate_schema.py" run "$work/run.jsonl"
expect_exit 0 "baseline" -- "$DRIFTGATE" baseline update "$work/run.jsonl" --store "$work/store"
sed -i 's/k: 1000/k: 500/' configs/t.yaml
git commit -qam "k 500"
"$DRIFTGATE" run configs/t.yaml -o "$work/run2.jsonl" -q 2>/dev/null
expect_exit 0 "diff after a changed entry" -- "$DRIFTGATE" diff "$work/run2.jsonl" --store "$work/store" --format text
expect_contains "$work/stdout" "tolerances [dtype bfloat16: atol 10 rtol 10, target cpu_bf16 output out['mask']: atol 0 rtol 0, target onednn_off: rule oracle k 1000] -> [dtype bfloat16: atol 10 rtol 10, target cpu_bf16 output out['mask']: atol 0 rtol 0, target onednn_off: rule oracle k 500]" \
  "config changed names the entry that changed"
finish

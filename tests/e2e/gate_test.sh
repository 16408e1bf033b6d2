#!/usr/bin/env bash
# One honest path through everything, in a git repository made here:
# run -> baseline update -> run -> diff exits 0; a perturbed model -> diff exits 1 naming the checks.
source "$(dirname "$0")/lib.sh"
: "${TEST_MODELS:?set TEST_MODELS to the folder tools/export_models.py test wrote}"
tools="$(cd "$(dirname "$0")/../../tools" && pwd)"

repo="$work/repo"
mkdir -p "$repo/models" "$repo/configs"
cd "$repo" || exit 1
git init -q -b main .
git config user.name test && git config user.email test@example.invalid
cp "$TEST_MODELS/tiny_conv.pt" models/tiny.pt
cat >configs/tiny.yaml <<'YAML'
name: tiny
model: ../models/tiny.pt
inputs:
  - {name: noise0, random: {shape: [1, 3, 32, 32], seed: 0}}
  - {name: noise1, random: {shape: [1, 3, 32, 32], seed: 1, distribution: uniform}}
reference: cpu_fp32
targets: [onednn_off, channels_last, frozen]
tolerance: {atol: 1.0e-5, rtol: 0}
YAML
git add -A && git commit -qm "tiny model"

expect_exit 0 "first run passes" -- "$DRIFTGATE" run configs/tiny.yaml -o "$work/run1.jsonl"
expect_contains "$work/run1.jsonl" '"expected_checks":6,"checks":6' "summary: 2 inputs x 3 targets x 1 output = 6 checks"
expect_contains "$work/run1.jsonl" "\"commit\":{\"sha\":\"$(git rev-parse HEAD)\",\"branch\":\"main\",\"dirty\":false}" \
  "the run header carries the commit, its branch and a clean tree"
expect_contains "$work/run1.jsonl" '"id":"tiny/noise0/cpu_fp32~onednn_off/out"' "check ids are readable"
expect_exit 0 "the run file validates against schema/record.schema.json" -- \
  /usr/bin/python3 "$tools/validate_schema.py" run "$work/run1.jsonl"

expect_exit 0 "baseline update" -- "$DRIFTGATE" baseline update "$work/run1.jsonl" --store baselines
key=$(head -1 "$work/run1.jsonl" | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')
checks=$((checks + 1))
if [[ -f "baselines/$key/$(git rev-parse HEAD).jsonl" ]]; then echo "ok: baseline stored by env key and sha"; else
  failures=$((failures + 1)); echo "FAIL: no baselines/$key/$(git rev-parse HEAD).jsonl"; find baselines; fi
git add baselines && git commit -qm "baseline"

expect_exit 0 "second run passes" -- "$DRIFTGATE" run configs/tiny.yaml -o "$work/run2.jsonl"
expect_exit 0 "diff against the stored baseline passes" -- "$DRIFTGATE" diff "$work/run2.jsonl" --store baselines \
  --report "$work/report2.json"
expect_contains "$work/stdout" "PASS" "the summary says PASS"
expect_contains "$work/report2.json" "$key" "report.json names the environment key"

# A changed model: the first convolution's weights scaled by 1000, so float32 rounding
# differences between backends grow past atol 1e-5.
/usr/bin/python3 "$tools/export_models.py" perturb models/tiny.pt "$work/perturbed.pt" --scale 1000 2>/dev/null
cp "$work/perturbed.pt" models/tiny.pt
git commit -qam "perturb the first convolution"
"$DRIFTGATE" run configs/tiny.yaml -o "$work/run3.jsonl" 2>"$work/run3.err"
run3=$?
checks=$((checks + 1))
if [[ $run3 -eq 1 ]]; then echo "ok: run with failing checks exits 1"; else
  failures=$((failures + 1)); echo "FAIL: run3 exited $run3"; cat "$work/run3.err"; fi
expect_exit 1 "diff finds the regression" -- "$DRIFTGATE" diff "$work/run3.jsonl" --store baselines
expect_contains "$work/stdout" "FAIL" "the summary says FAIL"
expect_contains "$work/stdout" "regressed" "the summary names the class"
# Which targets cross atol depends on the CPU's kernels; some must, and they must be named.
expect_contains "$work/stdout" "### Regressed" "the summary lists the regressed checks"
expect_contains "$work/stdout" "- \`tiny/noise0/cpu_fp32~" "the summary names a regressed check by id"
expect_contains "$work/stdout" "model changed" "the summary says the model changed"
# Exactly the checks that fail in run3 (all passed in the baseline) are named as regressed.
failing=$(/usr/bin/python3 -c 'import json, sys
for line in open(sys.argv[1]):
    record = json.loads(line)
    if record["type"] == "check" and record["status"] != "pass":
        print(record["id"])' "$work/run3.jsonl" | sort)
named=$(sed -n '/^### Regressed/,/^### /p' "$work/stdout" | grep -o '^- `tiny/[^`]*`' | tr -d '`' | cut -c3- | sort)
checks=$((checks + 1))
if [[ -n "$failing" && "$failing" == "$named" ]]; then
  echo "ok: the $(echo "$failing" | wc -l) failing checks are exactly the regressed ones named"
else
  failures=$((failures + 1)); echo "FAIL: failing checks and named regressions differ"
  diff <(echo "$failing") <(echo "$named")
fi

# An uncommitted change is recorded as a dirty tree.
echo "# uncommitted" >>configs/tiny.yaml
"$DRIFTGATE" run configs/tiny.yaml -o "$work/dirty.jsonl" 2>/dev/null
expect_contains "$work/dirty.jsonl" "\"branch\":\"main\",\"dirty\":true}" "a modified tracked file makes the run dirty"
git checkout -q -- configs/tiny.yaml

# Another environment (threads enter the key): no silent cross-environment comparison.
"$DRIFTGATE" run configs/tiny.yaml -o "$work/run4.jsonl" --threads 2 2>/dev/null
"$DRIFTGATE" diff "$work/run4.jsonl" --store baselines >"$work/stdout" 2>"$work/stderr"
checks=$((checks + 1))
if [[ $? -eq 0 ]]; then echo "ok: no comparable baseline is neutral"; else
  failures=$((failures + 1)); echo "FAIL: other-environment diff did not exit 0"; fi
expect_contains "$work/stdout" "no comparable baseline" "other environments are not compared silently"
expect_contains "$work/stdout" "threads 1 -> 2" "the environment difference is printed"
finish

#!/usr/bin/env bash
# The gate's story in a scratch git repository, on any machine (no committed baseline needed):
#   1. main: a small digit classifier (models/digits_cnn.pt from tools/prepare-demo.sh) and its
#      experiment are committed; `run` + `baseline update` record main's baseline (its bf16
#      target already fails atol 1e-4: a known failure, stored like any other value);
#   2. a pull request multiplies the classifier's last layer by 100 (a "sharper" softmax):
#      the predictions do not move, but bf16's error grows with the logits; the gate fails
#      (failure_grew) and its summary names the checks;
#   3. the reviewer accepts the new values with a reason (`baseline accept`, logged);
#   4. the same run passes the gate.
# Exit 0 when each step answers as it should; 1 (with what differed) otherwise; 2 on bad use.
#
# usage: tools/demo-gate.sh DRIFTGATE MODELS_DIR WORK_DIR
#   DRIFTGATE   the driftgate binary;  MODELS_DIR  holds digits_cnn.pt and digits/test_00N.png
#   WORK_DIR    created (must not exist yet); the scratch repository, the store and the runs
set -uo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: tools/demo-gate.sh DRIFTGATE MODELS_DIR WORK_DIR" >&2
  exit 2
fi
driftgate=$(realpath "$1")
models=$(realpath "$2")
work=$3
for f in "$driftgate" "$models/digits_cnn.pt" "$models/digits/test_000.png"; do
  [[ -e $f ]] || { echo "demo-gate: $f does not exist (run tools/prepare-demo.sh first)" >&2; exit 2; }
done
[[ ! -e $work ]] || { echo "demo-gate: $work exists already; give a new directory" >&2; exit 2; }
mkdir -p "$work/repo" && work=$(realpath "$work") || exit 2
repo=$work/repo
store=$work/store  # outside the work tree, so the runs are of a clean checkout

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# expect CODE WHAT -- COMMAND...: runs it, shows its output, stops the demo if it exits otherwise.
expect() {
  local want=$1 what=$2 got=0
  shift 3
  "$@" || got=$?
  if [[ $got -ne $want ]]; then
    echo "demo-gate: $what: exit $got, expected $want ($*)" >&2
    exit 1
  fi
}

cd "$repo" || exit 2
git init -q -b main . && git config user.name 'driftgate demo' && git config user.email demo@example.invalid
mkdir -p models/digits configs
cp "$models/digits_cnn.pt" models/
cp "$models"/digits/test_00[0-3].png models/digits/
{
  echo "# The demo's experiment: 4 digit images, fp32 reference, three target backends."
  echo "name: digits"
  echo "model: ../models/digits_cnn.pt"
  echo "inputs:"
  for i in 0 1 2 3; do
    printf '  - {name: test_00%d, image: ../models/digits/test_00%d.png, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5]}\n' "$i" "$i"
  done
  echo "reference: cpu_fp32"
  echo "targets: [onednn_off, channels_last, cpu_bf16]"
  echo "tolerance: {atol: 1.0e-4, rtol: 1.0e-4}"
} >configs/digits.yaml
git add -A && git commit -qm "Digit classifier and its drift experiment" || exit 2

say "main: run the experiment and record its baseline"
# run exits 1: the bf16 target fails atol 1e-4 (a known failure, kept in the baseline).
expect 1 "run on main" -- "$driftgate" run configs/digits.yaml -o "$work/main.jsonl" -q
expect 0 "baseline update on main" -- "$driftgate" baseline update "$work/main.jsonl" --store "$store"

say "pull request: multiply the classifier's last layer by 100"
git checkout -qb sharpen
/usr/bin/python3 - <<'EOF' || exit 2
import torch
model = torch.jit.load("models/digits_cnn.pt")
with torch.no_grad():
    model.head.weight.mul_(100.0)
    model.head.bias.mul_(100.0)
model.save("models/digits_cnn.pt")
EOF
git commit -qam "Sharpen the classifier: logits x100" || exit 2
expect 1 "run on the pull request" -- "$driftgate" run configs/digits.yaml -o "$work/pr.jsonl" -q

say "the gate on the pull request (expected: FAIL)"
expect 1 "diff on the pull request" -- "$driftgate" diff "$work/pr.jsonl" --store "$store" --base main \
  --format text --report "$work/pr-report.json"

say "the reviewer accepts the new bf16 values, with a reason"
expect 0 "baseline accept" -- "$driftgate" baseline accept 'digits/*/cpu_fp32~cpu_bf16/*' --run "$work/pr.jsonl" \
  --store "$store" --base main --reason "logits x100 on purpose; bf16 error scales with them, predictions unchanged"

say "the gate on the same run (expected: PASS)"
expect 0 "diff after the accept" -- "$driftgate" diff "$work/pr.jsonl" --store "$store" --base main \
  --format text --report "$work/accepted-report.json"

for f in pr-report.json:fail accepted-report.json:pass; do
  if ! grep -q "\"verdict\": *\"${f#*:}\"" "$work/${f%%:*}"; then
    echo "demo-gate: $work/${f%%:*} does not say verdict ${f#*:}" >&2
    exit 1
  fi
done
say "demo-gate: the gate failed the regression, the accept was logged, the gate passed"

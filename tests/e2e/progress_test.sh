#!/usr/bin/env bash
# run's progress (runner/progress.h) as a user sees it: a line per backend and input in a log
# (stderr not a terminal), one status line rewritten in place under a pseudo-terminal
# (`script`), nothing of it under -q. The counts come from the config: 2 inputs x (reference,
# the float64 oracle, 2 targets) = 8 steps.
source "$(dirname "$0")/lib.sh"
: "${TEST_MODELS:?set TEST_MODELS to the folder tools/export_models.py test wrote}"
cd "$work" || exit 1
cp "$TEST_MODELS/tiny_conv.pt" tiny.pt
cat >tiny.yaml <<'YAML'
name: tiny
model: tiny.pt
inputs:
  - {name: noise0, random: {shape: [1, 3, 16, 16], seed: 0}}
  - {name: noise1, random: {shape: [1, 3, 16, 16], seed: 1}}
targets: [onednn_off, frozen]
YAML

expect_exit 0 "a run with its stderr in a file" -- "$DRIFTGATE" run tiny.yaml -o log.jsonl
cp "$work/stderr" log.txt
checks=$((checks + 1))
steps=$(grep -oE '^\[[0-9]+/8\] tiny noise[01] [a-z_0-9]+ \([0-9]+ s(, about [0-9]+ s left)?\)$' log.txt)
# The child runs the reference on both inputs, then the oracle, then each target.
expected_steps="tiny noise0 cpu_fp32
tiny noise1 cpu_fp32
tiny noise0 oracle_fp64
tiny noise1 oracle_fp64
tiny noise0 onednn_off
tiny noise1 onednn_off
tiny noise0 frozen
tiny noise1 frozen"
got_steps=$(sed -E 's/^\[[0-9]+\/8\] //; s/ \(.*//' <<<"$steps")
numbers=$(grep -oE '^\[[0-9]+' <<<"$steps" | tr -d '[' | tr '\n' ' ')
if [[ "$got_steps" == "$expected_steps" && "$numbers" == "1 2 3 4 5 6 7 8 " ]]; then
  echo "ok: one line per backend and input, counted 1..8 in the order they ran"
else
  failures=$((failures + 1))
  echo "FAIL: progress lines in a log"
  sed 's/^/  | /' log.txt
fi
expect_contains log.txt "[tiny] noise1 cpu_fp32~frozen: " "result lines are still printed"
checks=$((checks + 1))
if grep -q $'\r' log.txt; then
  failures=$((failures + 1)); echo "FAIL: a log got carriage returns"
else echo "ok: no carriage returns in a log"; fi

# Under a pseudo-terminal: `script` gives run a TTY as stderr and copies what it wrote.
expect_exit 0 "a run on a terminal" -- script -qec "'$DRIFTGATE' run tiny.yaml -o tty.jsonl" tty.txt
checks=$((checks + 1))
rewrites=$(grep -o $'\r\x1b\\[K\\[[0-9]/8\\]' tty.txt | wc -l)
if [[ $rewrites -ge 7 ]] && grep -q '\[8/8\] tiny noise1 frozen ([0-9]* s)' tty.txt &&
  grep -q '\[tiny\] noise1 cpu_fp32~frozen: ' tty.txt; then
  echo "ok: one status line rewritten in place ($rewrites rewrites), ending at [8/8]"
else
  failures=$((failures + 1))
  echo "FAIL: terminal progress ($rewrites rewrites)"
  sed -n l tty.txt | head -40
fi

expect_exit 0 "-q" -- "$DRIFTGATE" run tiny.yaml -o quiet.jsonl -q
checks=$((checks + 1))
if grep -q '/8\]' "$work/stderr"; then
  failures=$((failures + 1)); echo "FAIL: -q printed progress"; cat "$work/stderr"
else echo "ok: -q prints no progress"; fi
finish

#!/usr/bin/env bash
# tools/demo-gate.sh, the gate's story that tools/demo.sh tells on any machine: on digits
# models exported here, it must show a failing gate (failure_grew on the bf16 checks), log an
# accept with its reason, then a passing gate, and exit 0; bad use exits 2.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
/usr/bin/python3 "$root/tools/export_models.py" digits --out "$work/models" >/dev/null || exit 1

expect_exit 0 "the story runs as it should" -- bash "$root/tools/demo-gate.sh" "$DRIFTGATE" "$work/models" "$work/story"
out=$work/story-stdout
cp "$work/stdout" "$out"
expect_contains "$out" "driftgate: FAIL - 4 failure grew" "the pull request fails the gate: bf16's failure grew"
expect_contains "$out" "digits/test_000/cpu_fp32~cpu_bf16/out  fail_numeric -> fail_numeric" "the summary names the check"
expect_contains "$out" "accepted 4 checks into baseline" "the accept takes the four bf16 checks"
expect_contains "$out" "driftgate: PASS - " "the same run passes after the accept"
expect_contains "$out" "note: using the baseline accepted on this branch" "and says it uses the accepted baseline"
log=$(ls "$work"/story/store/*/*.accepted.jsonl 2>/dev/null | head -1)
expect_contains "${log:-$work/story/no-accept-log}" "logits x100 on purpose" "the accept log keeps the reason"
expect_contains "$work/story/pr-report.json" '"failure_grew": 4' "report.json counts the grown failures"

expect_exit 2 "a work directory that exists is refused" -- bash "$root/tools/demo-gate.sh" "$DRIFTGATE" \
  "$work/models" "$work/story"
expect_contains "$work/stderr" "exists already" "and says so"
expect_exit 2 "models without the digits classifier are refused" -- bash "$root/tools/demo-gate.sh" "$DRIFTGATE" \
  "$work" "$work/story2"
expect_contains "$work/stderr" "run tools/prepare-demo.sh first" "with what to do"
finish

#!/usr/bin/env bash
# The upgrade gate, end to end: the same config and commit run under Debian 12's LibTorch 1.13
# (this build) and under Debian 13's LibTorch 2.6 (tools/debian13.sh, its build-lt26/), a 1.13
# baseline stored, then `diff` of the 2.6 run: neutral without being asked, and with
# --against-env KEY (or --allow-env-mismatch) a per-check report of what the upgrade changes,
# whose classes are recomputed here from the two run files (differ/diff.h's rules).
# Skipped (exit 77) without a Debian 13 root and its build: `bash tools/debian13.sh tools/build.sh`.
source "$(dirname "$0")/lib.sh"
: "${TEST_MODELS:?set TEST_MODELS to the folder tools/export_models.py test wrote}"
source_dir="$(cd "$(dirname "$0")/../.." && pwd -P)"
# The status is read whole before it is matched: `--status | grep -q` under pipefail failed
# whenever grep quit before debian13.sh finished writing (SIGPIPE), and the test skipped.
root_status=$(bash "$source_dir/tools/debian13.sh" --status 2>&1 || true)
if [[ $(id -u) -ne 0 || ! -x "$source_dir/build-lt26/app/driftgate" || $root_status != *"(ready"* ]]; then
  echo "skipped: needs root, a Debian 13 root and build-lt26/app/driftgate (bash tools/debian13.sh tools/build.sh)"
  # tools/test.sh's LibTorch 2.6 phase has just built both: there a skip is a failure.
  [[ ${DRIFTGATE_REQUIRE_LT26:-0} == 1 ]] && exit 1
  exit 77
fi

repo="$work/repo"
mkdir -p "$repo/models" "$repo/configs"
cd "$repo" || exit 1
git init -q -b main .
git config user.name test && git config user.email test@example.invalid
cp "$TEST_MODELS/tiny_conv.pt" models/tiny.pt  # exported once, by 1.13's Python: both lines load it
cat >configs/tiny.yaml <<'YAML'
name: tiny
model: ../models/tiny.pt
inputs:
  - {name: noise0, random: {shape: [1, 3, 32, 32], seed: 0}}
  - {name: noise1, random: {shape: [1, 3, 32, 32], seed: 1, distribution: uniform}}
reference: cpu_fp32
targets: [onednn_off, channels_last, frozen, cpu_bf16]
tolerance: {atol: 1.0e-5, rtol: 0}
YAML
git add -A && git commit -qm "tiny model"

"$DRIFTGATE" run configs/tiny.yaml -o "$work/run13.jsonl" >/dev/null 2>"$work/run13.err"
expect_exit 0 "the 1.13 run is stored as the baseline" -- "$DRIFTGATE" baseline update "$work/run13.jsonl" --store baselines
git add baselines && git commit -qm "1.13 baseline"
key13=$(head -1 "$work/run13.jsonl" | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')

# The same commit's run under LibTorch 2.6: the work directory is bind-mounted into the root,
# where the repository's build/ is build-lt26/ here.
DRIFTGATE_DEBIAN13_BINDS="$work" bash "$source_dir/tools/debian13.sh" bash -c \
  'cd "$1" && "$3" run configs/tiny.yaml -o "$2"' _ "$repo" "$work/run26.jsonl" "$source_dir/build/app/driftgate" \
  >"$work/run26.out" 2>&1
expect_contains "$work/run26.jsonl" '"libtorch":"2.6.' "the 2.6 run records LibTorch 2.6"
expect_contains "$work/run13.jsonl" '"libtorch":"1.13.' "the 1.13 run records LibTorch 1.13"
key26=$(head -1 "$work/run26.jsonl" | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')
checks=$((checks + 1))
if [[ -n $key26 && $key26 != "$key13" ]]; then echo "ok: the environment keys differ ($key13, $key26)"; else
  failures=$((failures + 1)); echo "FAIL: environment keys '$key13' and '$key26'"; fi

expect_exit 0 "without being asked, diff across environments is neutral" -- \
  "$DRIFTGATE" diff "$work/run26.jsonl" --store baselines --format text --color never
expect_contains "$work/stdout" "baselines exist only for other environments: $key13 (" "it names the other key"
expect_contains "$work/stdout" "libtorch 1.13.0 -> 2.6.0" "and what differs"

"$DRIFTGATE" diff "$work/run26.jsonl" --store baselines --against-env "$key13" --report "$work/against.json" \
  --format text --color never >"$work/against.out" 2>&1
against=$?
checks=$((checks + 1))
if [[ $against -le 1 ]]; then echo "ok: --against-env compares (exit $against)"; else
  failures=$((failures + 1)); echo "FAIL: --against-env exited $against"; cat "$work/against.out"; fi
expect_contains "$work/against.out" "compared across environments" "the summary marks the cross-environment diff"
expect_contains "$work/against.json" '"env_mismatch": true' "report.json marks it"
expect_contains "$work/against.json" "libtorch 1.13.0 -> 2.6.0" "report.json says what the upgrade changed"
"$DRIFTGATE" diff "$work/run26.jsonl" --store baselines --allow-env-mismatch --report "$work/allow.json" \
  >/dev/null 2>&1
expect_exit 0 "--allow-env-mismatch picks the same baseline" -- /usr/bin/python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["baseline"] == b["baseline"] and a["counts"] == b["counts"], (a["baseline"], b["baseline"])' \
  "$work/against.json" "$work/allow.json"

# Every check's class, recomputed from the two run files with differ/diff.h's rules.
expect_exit 0 "per check, the classes are what the two runs imply" -- /usr/bin/python3 - \
  "$work/run13.jsonl" "$work/run26.jsonl" "$work/against.json" <<'PY'
import json, sys
def checks(path):
    return {r["id"]: r for r in map(json.loads, open(path)) if r.get("type") == "check"}
before, after = checks(sys.argv[1]), checks(sys.argv[2])
report = json.load(open(sys.argv[3]))
crash = {"crash_ref", "crash_target", "timeout"}
def failed(s): return s not in ("pass", "skipped")
def expected(i):
    if i not in after: return "missing"
    if i not in before: return "new"
    b, a = before[i], after[i]
    if not failed(b["status"]) and failed(a["status"]): return "regressed"
    if failed(b["status"]) and b["status"] not in crash and a["status"] in crash: return "crashed"
    if failed(b["status"]) and a["status"] == "pass": return "fixed"
    mb, ma = (b.get("stats") or {}).get("max_abs"), (a.get("stats") or {}).get("max_abs")
    grew = mb is not None and ma is not None and ma > 1e-12 and ma > 10 * mb
    # A failure kept whose error grew: on an AVX512-BF16 CPU, cpu_bf16 fails under both lines and
    # LibTorch 2.6 misses float32 much further (oneDNN 3.7.2).
    if failed(b["status"]) and failed(a["status"]) and grew:
        return "failure_grew"
    if b["status"] == a["status"] == "pass" and grew:
        return "drift_grew"
    return "unchanged"
listed = {c["id"]: c["class"] for c in report["checks"]}
want = {i: expected(i) for i in set(before) | set(after)}
counts = {}
for i, c in want.items():
    counts[c] = counts.get(c, 0) + 1
    if c != "unchanged":
        assert listed.get(i) == c, (i, listed.get(i), c)
assert {k: v for k, v in report["counts"].items() if v} == counts, (report["counts"], counts)
print("classes:", counts, {i: c for i, c in want.items() if c != "unchanged"})
PY
cat "$work/stdout"
finish

#!/usr/bin/env bash
# on-missing-baseline: run-base (tools/driftgate-run-base.sh, the .deb's driftgate-run-base) on a real git
# history whose only stored baseline has another environment key (main's baseline was run with
# --threads 2, the pull requests with --threads 1; threads are part of the key): without run-base
# the gate is neutral; with it the merge base is run in a git worktree on the spot and (a) a pull
# request that changed nothing passes, (b) one that multiplies the digit classifier's last layer
# by 100 (tools/demo-gate.sh's regression) fails, each output naming the merge base's SHA; the
# sharded GitHub flow (build-base per shard, merged, diff --base-run) on $TEST_MODELS. Then the
# errors (no such base, no merge base, prepare or base run failing) exit 2 and leave no worktree.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
gate=$root/tools/driftgate-run-base.sh
/usr/bin/python3 "$root/tools/export_models.py" digits --out "$work/models" >/dev/null || exit 1
export TMPDIR=$work/tmp  # driftgate-run-base's temporary directory and worktree must be gone after each call
mkdir -p "$TMPDIR"

# json_get FILE EXPR: a Python expression over the parsed report (r), printed.
json_get() { /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
# expect_equal GOT WANT DESCRIPTION
expect_equal() {
  checks=$((checks + 1))
  if [[ "$1" != "$2" ]]; then failures=$((failures + 1)); echo "FAIL: $3: '$1', expected '$2'"; return 1; fi
  echo "ok: $3"
}
# expect_clean DESCRIPTION: no worktree but the main one, nothing left in TMPDIR.
expect_clean() {
  expect_equal "$(git worktree list | wc -l)" 1 "$1: no worktree is left behind"
  expect_equal "$(ls -A "$TMPDIR" | wc -l)" 0 "$1: no temporary directory is left behind"
}
# header_key RUN: the environment key in a run file's header (its first line).
header_key() { head -1 "$1" | /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['env_key'])"; }

repo=$work/repo
new_repo "$repo" || exit 1
mkdir -p models/digits configs
cp "$work/models/digits_cnn.pt" models/
cp "$work/models"/digits/test_00[01].png models/digits/
cat >configs/digits.yaml <<'EOF'
name: digits
model: ../models/digits_cnn.pt
inputs:
  - {name: test_000, image: ../models/digits/test_000.png, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5]}
  - {name: test_001, image: ../models/digits/test_001.png, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5]}
reference: cpu_fp32
targets: [onednn_off, cpu_bf16]
tolerance: {atol: 1.0e-4, rtol: 1.0e-4}
EOF
git add -A && git commit -qm "Digit classifier and its drift experiment" || exit 1

# main's stored baseline, committed as the refresh job does, from another environment (2 threads).
"$DRIFTGATE" run configs/digits.yaml -o "$work/main-t2.jsonl" --threads 2 -q
"$DRIFTGATE" baseline update "$work/main-t2.jsonl" --store baselines >/dev/null || exit 1
git add baselines && git commit -qm "baselines: main" || exit 1
main_sha=$(git rev-parse main)

# (a) a pull request that changes nothing the models see.
git checkout -qb docs-only
echo "docs" >NOTES.md && git add NOTES.md && git commit -qm "Docs only" || exit 1
"$DRIFTGATE" run configs/digits.yaml -o "$work/same.jsonl" --threads 1 -q
stored_key=$(ls baselines | grep -v '^\.')
run_key=$(header_key "$work/same.jsonl")
checks=$((checks + 1))
if [[ -n $run_key && $stored_key != "$run_key" ]]; then echo "ok: the stored baseline ($stored_key) is of another environment than the PR's run ($run_key)"; else
  failures=$((failures + 1)); echo "FAIL: stored key '$stored_key' vs run key '$run_key': the test needs them to differ"; fi

expect_exit 0 "without run-base the gate is neutral" -- "$gate" diff "$work/same.jsonl" --base main \
  --configs 'configs/*.yaml' --run-args '--threads 1' -- --report "$work/neutral.json" --format text
expect_contains "$work/stdout" "no comparable baseline" "and says there is no comparable baseline"
expect_equal "$(json_get "$work/neutral.json" 'r["verdict"]')" no_baseline "report.json: verdict no_baseline"

prepare='touch prepared-by-run-base && test -f configs/digits.yaml'
expect_exit 0 "(a) run-base: a PR that changed nothing passes" -- "$gate" diff "$work/same.jsonl" --base main \
  --on-missing-baseline run-base --configs 'configs/*.yaml' --run-args '--threads 1' --prepare "$prepare" \
  -- --report "$work/same.json" --markdown "$work/same.md" --format text
expect_contains "$work/stdout" "driftgate: PASS" "(a) the verdict is PASS"
expect_contains "$work/stdout" "baseline built on the spot from merge base $main_sha" "(a) the text names the merge base"
expect_contains "$work/same.md" "baseline built on the spot from merge base $main_sha" "(a) the markdown names it"
expect_equal "$(json_get "$work/same.json" 'r["verdict"]')" pass "(a) report.json: verdict pass"
expect_equal "$(json_get "$work/same.json" 'r["baseline"]["sha"]')" "$main_sha" "(a) report.json: the baseline is the merge base"
expect_equal "$(json_get "$work/same.json" 'r["baseline"]["env_key"]')" "$run_key" "(a) report.json: in the run's environment"
expect_equal "$(json_get "$work/same.json" 'any("built on the spot from merge base '"$main_sha"'" in n for n in r["notes"])')" True \
  "(a) report.json: a note names the merge base"
expect_equal "$(json_get "$work/same.json" 'r["counts"].get("unchanged", 0)')" 4 "(a) all 4 checks compared, unchanged"
expect_missing "$repo/prepared-by-run-base" "(a) prepare ran in the worktree, not in the checkout"
expect_clean "(a)"
expect_equal "$(git status --porcelain)" "" "(a) the checkout is untouched"

# (b) a pull request that makes the model regress: logits x100, so bf16's error grows 100x.
git checkout -q main && git checkout -qb sharpen
/usr/bin/python3 - <<'EOF' || exit 1
import torch
model = torch.jit.load("models/digits_cnn.pt")
with torch.no_grad():
    model.head.weight.mul_(100.0)
    model.head.bias.mul_(100.0)
model.save("models/digits_cnn.pt")
EOF
git commit -qam "Sharpen the classifier: logits x100" || exit 1
"$DRIFTGATE" run configs/digits.yaml -o "$work/sharp.jsonl" --threads 1 -q
expect_exit 0 "(b) without run-base the regression is not seen (neutral)" -- "$gate" diff "$work/sharp.jsonl" \
  --base main -- --format text
expect_contains "$work/stdout" "no comparable baseline" "(b) neutral says why"
expect_exit 1 "(b) run-base: the regressing PR fails the gate" -- "$gate" diff "$work/sharp.jsonl" --base main \
  --on-missing-baseline run-base --configs 'configs/*.yaml' --run-args '--threads 1' \
  -- --report "$work/sharp.json" --markdown "$work/sharp.md" --format text
expect_contains "$work/stdout" "driftgate: FAIL - 2 failure grew" "(b) bf16's failure grew on both inputs"
expect_contains "$work/stdout" "digits/test_000/cpu_fp32~cpu_bf16/out  fail_numeric -> fail_numeric" "(b) the check is named"
expect_contains "$work/stdout" "baseline built on the spot from merge base $main_sha" "(b) the text names the merge base"
expect_equal "$(json_get "$work/sharp.json" 'r["verdict"]')" fail "(b) report.json: verdict fail"
expect_equal "$(json_get "$work/sharp.json" 'r["baseline"]["sha"]')" "$main_sha" "(b) report.json: the merge base"
expect_clean "(b)"

# (c) The suggested accept commands, followed literally in fresh clones of the PR branch (the
# temporary store is gone): each must leave a store with which the plain gate passes this run.
sharp_sha=$(git rev-parse HEAD)
refresh=$(json_get "$work/sharp.json" 'r["refresh"]["command"]')
proposal=$(json_get "$work/sharp.json" 'r["refresh"]["proposal_command"]')
expect_contains "$work/stdout" "$refresh" "(c) the text summary prints report.json's accept command"
expect_contains "$work/sharp.md" "$refresh" "(c) so does the markdown summary"
expect_contains "$work/sharp.md" "$proposal" "(c) and the proposal's command"
expect_contains "$work/sharp.md" "kept as $work/base-run.jsonl" "(c) the note says where the base run is kept"
expect_equal "$(head -1 "$work/base-run.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["commit"]["sha"])')" \
  "$main_sha" "(c) the kept base run is the merge base's"
checks=$((checks + 1))
if [[ $refresh == *"$TMPDIR"* || $proposal == *"$TMPDIR"* ]]; then failures=$((failures + 1));
  echo "FAIL: (c) a suggestion names the deleted temporary store: $refresh"; else echo "ok: (c) no suggestion names the temporary store"; fi
mkdir -p "$work/bin" && ln -sf "$DRIFTGATE" "$work/bin/driftgate"  # the printed commands call driftgate
for kind in refresh proposal; do
  git clone -q "$repo" "$work/follow-$kind" || exit 1
  command=$refresh
  [[ $kind == proposal ]] && command=$proposal
  expect_exit 0 "(c) $kind: the suggested command works as printed" -- env PATH="$work/bin:$PATH" bash -c "cd '$work/follow-$kind' && $command"
  expect_exit 0 "(c) $kind: the store now holds the merge base's and the accepted baseline of this key" -- \
    test -f "$work/follow-$kind/baselines/$run_key/$main_sha.jsonl" -a -f "$work/follow-$kind/baselines/$run_key/$sharp_sha.jsonl"
  expect_exit 0 "(c) $kind: with that store the plain gate (no run-base) passes the run" -- "$DRIFTGATE" diff \
    "$work/sharp.jsonl" --base "$main_sha" --repo "$work/follow-$kind" --store "$work/follow-$kind/baselines" \
    --report "$work/follow-$kind.json" -q
  expect_equal "$(json_get "$work/follow-$kind.json" 'r["verdict"]')" pass "(c) $kind: report.json: verdict pass"
done
expect_clean "(c)"

# The shard path (GitHub): build-base per shard, then diff with --base-run.
expect_exit 0 "build-base writes the merge base's run" -- "$gate" build-base -o "$work/base.jsonl" --base main \
  --configs 'configs/*.yaml' --run-args '--threads 1' --if-no-baseline "$work/sharp.jsonl"
expect_equal "$(head -1 "$work/base.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["commit"]["sha"])')" \
  "$main_sha" "build-base: the run is of the merge base"
expect_exit 1 "diff --base-run: the same verdict from a prebuilt base run" -- "$gate" diff "$work/sharp.jsonl" \
  --base main --on-missing-baseline run-base --base-run "$work/base.jsonl" -- --format text
expect_contains "$work/stdout" "baseline built on the spot from merge base $main_sha" "--base-run: names the merge base"
"$DRIFTGATE" baseline update "$work/base.jsonl" --store "$work/same-env" >/dev/null || exit 1
expect_exit 0 "build-base --if-no-baseline: nothing to do when a stored baseline matches" -- "$gate" build-base \
  -o "$work/not-needed.jsonl" --base main --configs 'configs/*.yaml' --if-no-baseline "$work/sharp.jsonl" \
  --store "$work/same-env"
expect_contains "$work/stdout" "no base run needed" "and says so"
expect_missing "$work/not-needed.jsonl" "and writes nothing"
expect_exit 1 "run-base with a comparable stored baseline uses the store" -- "$gate" diff "$work/sharp.jsonl" \
  --base main --on-missing-baseline run-base --store "$work/same-env" --configs 'configs/*.yaml' -- --format text
checks=$((checks + 1))
if grep -q "built on the spot" "$work/stdout" "$work/stderr"; then failures=$((failures + 1));
  echo "FAIL: a base run was built although the store had a comparable baseline"; else echo "ok: no base run built"; fi

# The sharded GitHub flow on two experiments of a tiny model: each shard job builds its slice of the
# merge base (build-base --if-no-baseline), the gate job merges run and base shards and diffs.
shards=$work/shards
new_repo "$shards" || exit 1
mkdir -p models configs
cp "${TEST_MODELS:?set TEST_MODELS}/tiny_conv.pt" models/
for name in a b; do
  printf 'name: %s\nmodel: ../models/tiny_conv.pt\ninputs:\n  - name: r\n    random: {shape: [1, 3, 8, 8], seed: 0}\nreference: cpu_fp32\ntargets: [onednn_off]\n' \
    "$name" >"configs/$name.yaml"
done
git add -A && git commit -qm "two experiments" || exit 1
"$DRIFTGATE" run configs/*.yaml -o "$work/sh-main.jsonl" --threads 2 -q
"$DRIFTGATE" baseline update "$work/sh-main.jsonl" --store "$work/sh-store" >/dev/null || exit 1
shard_base=$(git rev-parse HEAD)
git checkout -qb pr && echo x >NOTES.md && git add NOTES.md && git commit -qm docs || exit 1
for i in 0 1; do
  "$DRIFTGATE" run configs/*.yaml -o "$work/sh-run-$i.jsonl" --threads 1 --shard "$i/2" -q
  expect_exit 0 "shard $i/2: build-base builds the merge base's slice" -- "$gate" build-base --base main \
    --if-no-baseline "$work/sh-run-$i.jsonl" --store "$work/sh-store" --configs 'configs/*.yaml' \
    --run-args "--threads 1 --shard $i/2" -o "$work/sh-base-$i.jsonl"
done
"$DRIFTGATE" merge "$work"/sh-run-[01].jsonl -o "$work/sh-run.jsonl" >/dev/null 2>&1
expect_exit 0 "the merge base's shards merge" -- "$DRIFTGATE" merge "$work"/sh-base-[01].jsonl -o "$work/sh-base.jsonl"
expect_exit 0 "shards: the merged run passes against the merged base run" -- "$gate" diff "$work/sh-run.jsonl" \
  --on-missing-baseline run-base --store "$work/sh-store" --base main --base-run "$work/sh-base.jsonl" \
  -- --format text --report "$work/sh.json"
expect_contains "$work/stdout" "baseline built on the spot from merge base $shard_base" "shards: names the merge base"
expect_equal "$(json_get "$work/sh.json" 'r["counts"].get("unchanged", 0)')" 2 "shards: both experiments compared"
expect_clean "shards"
cd "$repo" || exit 1

# Errors: exit 2, a clear message, no worktree left.
run_base=(diff "$work/sharp.jsonl" --on-missing-baseline run-base --configs 'configs/*.yaml' --run-args '--threads 1')
expect_exit 2 "an unknown target branch" -- "$gate" "${run_base[@]}" --base no-such-branch
expect_contains "$work/stderr" "unknown revision 'no-such-branch'" "names the revision"
expect_clean "unknown target branch"
git checkout -q --orphan unrelated && git rm -rqf . && echo x >x && git add x && git commit -qm unrelated || exit 1
git checkout -q sharpen
expect_exit 2 "no merge base" -- "$gate" "${run_base[@]}" --base unrelated
expect_contains "$work/stderr" "no merge base of HEAD and unrelated" "says there is no merge base"
expect_clean "no merge base"
expect_exit 2 "a failing prepare command" -- "$gate" "${run_base[@]}" --base main --prepare 'echo preparing; exit 3'
expect_contains "$work/stderr" "the prepare command failed in the merge base's worktree ($main_sha)" "names the merge base"
expect_clean "failing prepare"
expect_exit 2 "a base run that fails" -- "$gate" diff "$work/sharp.jsonl" --on-missing-baseline run-base \
  --base main --configs 'configs/missing-*.yaml'
expect_contains "$work/stderr" "driftgate run at merge base $main_sha failed (exit 2)" "names the merge base and the exit"
expect_clean "failing base run"
# A cancelled job (SIGTERM to its process group, as a CI runner does) during the base run.
setsid "$gate" "${run_base[@]}" --base main --prepare 'touch started; sleep 60' >"$work/cancel.out" 2>&1 &
cancelled=$!
for _ in $(seq 100); do [[ -n $(ls "$TMPDIR"/*/merge-base/started 2>/dev/null) ]] && break; sleep 0.1; done
expect_equal "$(git worktree list | wc -l)" 2 "cancel: the worktree exists while the base run is under way"
kill -TERM -- "-$cancelled"
wait "$cancelled"
expect_equal "$?" 2 "cancel: exit 2"
expect_clean "cancel"
expect_exit 2 "run-base without --configs" -- "$gate" "${run_base[@]:0:4}" --base main
expect_contains "$work/stderr" "run-base needs --configs GLOB" "says what is missing"
expect_exit 2 "an unknown policy" -- "$gate" diff "$work/sharp.jsonl" --on-missing-baseline sometimes --base main
expect_contains "$work/stderr" "--on-missing-baseline 'sometimes': use neutral or run-base" "names the choices"
expect_exit 2 "diff --note refuses a control character" -- "$DRIFTGATE" diff "$work/sharp.jsonl" --base main \
  --note $'red \e[31m'
expect_contains "$work/stderr" "driftgate diff: --note" "and names the option"
expect_exit 2 "diff --note refuses an empty note" -- "$DRIFTGATE" diff "$work/sharp.jsonl" --base main --note ''
finish

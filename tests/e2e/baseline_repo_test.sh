#!/usr/bin/env bash
# Baselines and the gate on a real temporary git repository, directory store:
# branches and the merge base, a baseline several commits back, a changed
# environment, a shallow clone, a corrupt baseline line, the gate policy, JUnit,
# the refresh command, and merging shards. Runs come from make_run (no LibTorch).
source "$(dirname "$0")/lib.sh"
: "${MAKE_RUN:?set MAKE_RUN to the make_run tool (bench/make_run.cc)}"

repo="$work/repo"
store="$work/baselines"
mkdir -p "$repo" && cd "$repo" || exit 1
git init -q -b main .
git config user.name 'E2E Tester' && git config user.email e2e@example.invalid
commit() { echo "$1" >>file.txt && git add file.txt && git commit -qm "$1" && git rev-parse HEAD; }

# main: c1 (baseline) - c2 - c3 - c4 (baseline, newer than the merge base); feature from c3: f1 - f2
c1=$(commit c1); c2=$(commit c2); c3=$(commit c3)
git checkout -q -b feature && f1=$(commit f1) && f2=$(commit f2)
git checkout -q main && c4=$(commit c4)
git checkout -q feature

"$MAKE_RUN" --out "$work/c1.jsonl" --sha "$c1"
"$MAKE_RUN" --out "$work/c4.jsonl" --sha "$c4" --fail 'e0/in1/*'
expect_exit 0 "baseline update of c1" -- "$DRIFTGATE" baseline update "$work/c1.jsonl" --store "$store"
expect_exit 0 "baseline update of c4" -- "$DRIFTGATE" baseline update "$work/c4.jsonl" --store "$store"

# A regression on the feature branch: compared with c1, two first-parent steps back from the merge base c3
# (c4 is newer but not an ancestor of the merge base, so it must not be chosen).
"$MAKE_RUN" --out "$work/f2-bad.jsonl" --sha "$f2" --fail 'e0/in0/*'
expect_exit 1 "a regression fails the gate" -- "$DRIFTGATE" diff "$work/f2-bad.jsonl" --store "$store" \
  --base main --report "$work/out/report.json" --junit "$work/out/junit.xml" --markdown "$work/out/summary.md"
expect_contains "$work/stdout" "**driftgate: FAIL** — 2 regressed" "the verdict line leads the summary"
expect_contains "$work/out/report.json" "\"sha\": \"$c1\"" "the baseline is c1, several commits back"
expect_contains "$work/out/report.json" "\"steps\": 2" "two first-parent steps from the merge base"
expect_contains "$work/out/report.json" "\"start_sha\": \"$c3\"" "the walk starts at the merge base c3"
expect_contains "$work/out/junit.xml" 'tests="4" failures="2"' "JUnit: one testcase per check, gated ones fail"
expect_contains "$work/stdout" "driftgate baseline accept 'e0/in0/cpu_fp32~t0/out' 'e0/in0/cpu_fp32~t1/out'" \
  "the exact refresh command is printed"
expect_contains "$work/out/baseline-proposal.jsonl" "\"run_sha\":\"$f2\"" "a proposal is written next to --report"

# The printed command, run as printed (with a reason), makes the same diff pass.
refresh=$(grep -o "driftgate baseline accept [^\`]*" "$work/stdout" | head -1)
refresh=${refresh/WHY THE NEW VALUES ARE RIGHT/intended: new kernels}
expect_exit 0 "the refresh command runs" -- bash -c "cd '$repo' && ${refresh/driftgate/\"$DRIFTGATE\"}"
expect_contains "$store/$(head -1 "$work/c1.jsonl" | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')/$f2.accepted.jsonl" \
  '"who":"E2E Tester <e2e@example.invalid>","reason":"intended: new kernels"' "who and why are logged"
expect_exit 0 "after accepting, the diff passes" -- "$DRIFTGATE" diff "$work/f2-bad.jsonl" --store "$store" --base main
expect_contains "$work/stdout" "using the baseline accepted on this branch at ${f2:0:7}" "and says which baseline it used"

# Another environment: never compared silently; --allow-env-mismatch is marked.
"$MAKE_RUN" --out "$work/f1-env.jsonl" --sha "$f1" --threads 4
expect_exit 0 "no comparable baseline is neutral" -- "$DRIFTGATE" diff "$work/f1-env.jsonl" --store "$store" --base main
expect_contains "$work/stdout" "no comparable baseline" "other environments are not compared"
expect_contains "$work/stdout" "threads 1 -> 4" "the environment difference is printed"
expect_exit 0 "an explicit cross-environment comparison" -- "$DRIFTGATE" diff "$work/f1-env.jsonl" --store "$store" \
  --base main --allow-env-mismatch --report "$work/env.json"
expect_contains "$work/stdout" "(compared across environments)" "the comparison is marked in the summary"
expect_contains "$work/env.json" '"env_mismatch": true' "and in report.json"

# A shallow clone of the feature branch lacks the merge base: a clear note and a working fallback.
git clone -q --depth 1 --branch feature "file://$repo" "$work/shallow" 2>/dev/null
"$MAKE_RUN" --out "$work/f2-good.jsonl" --sha "$f2"
expect_exit 0 "a shallow clone does not crash" -- "$DRIFTGATE" diff "$work/f2-good.jsonl" --store "$store" \
  --repo "$work/shallow" --base origin/main
expect_contains "$work/stdout" "shallow clone" "the shallow clone is named, with what to fetch"
expect_contains "$work/stdout" "fetch-depth: 0" "the note says how to fetch full history"

# The gate policy: an allowlist entry lets a known failure through until it expires.
cat >"$work/gate.yaml" <<'YAML'
gate: [regressed, crashed, missing]
allow:
  - check: "e0/in0/*"
    owner: e2e
    reason: known regression
    expires: 2030-01-01
YAML
"$MAKE_RUN" --out "$work/f1-bad.jsonl" --sha "$f1" --fail 'e0/in0/*'
expect_exit 0 "an allowlisted regression passes" -- "$DRIFTGATE" diff "$work/f1-bad.jsonl" --store "$store" \
  --base main --policy "$work/gate.yaml" --today 2029-12-31
expect_contains "$work/stdout" "allowed by \`e0/in0/*\` ($work/gate.yaml:3, owner \`e2e\`" \
  "the summary says which policy line allowed it"
expect_exit 1 "an expired entry stops applying" -- "$DRIFTGATE" diff "$work/f1-bad.jsonl" --store "$store" \
  --base main --policy "$work/gate.yaml" --today 2030-01-02
expect_contains "$work/stdout" "expired on 2030-01-01 and no longer applies" "and says so"
printf 'gate: [regressed]\nalow: []\n' >"$work/bad.yaml"
expect_exit 2 "an unknown policy key is an input error" -- "$DRIFTGATE" diff "$work/f1-bad.jsonl" --store "$store" \
  --policy "$work/bad.yaml" --report "$work/none.json"
expect_contains "$work/stderr" "$work/bad.yaml:2:1: unknown key 'alow' in the gate policy; did you mean 'allow'?" \
  "the error has file:line:col and a suggestion"
expect_missing "$work/none.json" "nothing is written on an input error"

# A truncated baseline line is reported with file and line, never skipped.
key=$(head -1 "$work/c1.jsonl" | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')
cp "$store/$key/$c1.jsonl" "$work/c1.saved"
sed -i '3s/.\{40\}$//' "$store/$key/$c1.jsonl"
expect_exit 2 "a corrupt baseline is an error" -- "$DRIFTGATE" diff "$work/f1-bad.jsonl" --store "$store" --base main
expect_contains "$work/stderr" "$store/$key/$c1.jsonl:3: not valid JSON" "the error names the file and line"
cp "$work/c1.saved" "$store/$key/$c1.jsonl"

# Shards: all three merge; a missing one is exit 2 naming it, and nothing is written.
for i in 0 1 2; do "$MAKE_RUN" --out "$work/shard$i.jsonl" --sha "$f1" --inputs 3 --shard "$i/3"; done
expect_exit 0 "merge joins every shard" -- "$DRIFTGATE" merge "$work/shard2.jsonl" "$work/shard0.jsonl" \
  "$work/shard1.jsonl" -o "$work/merged.jsonl"
expect_contains "$work/merged.jsonl" '"expected_checks":6,"checks":6' "the merged summary is recomputed"
expect_exit 2 "a missing shard is an error" -- "$DRIFTGATE" merge "$work/shard0.jsonl" "$work/shard2.jsonl" \
  -o "$work/partial.jsonl"
expect_contains "$work/stderr" "missing shard 1/3" "the message names the missing shard"
expect_exit 2 "a duplicated shard is an error" -- "$DRIFTGATE" merge "$work/shard0.jsonl" "$work/shard1.jsonl" \
  "$work/shard1.jsonl" "$work/shard2.jsonl" -o "$work/partial.jsonl"
expect_contains "$work/stderr" "shard 1/3 is given twice" "the message names the duplicated shard"
expect_missing "$work/partial.jsonl" "nothing is written for a partial run"
finish

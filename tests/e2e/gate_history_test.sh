#!/usr/bin/env bash
# The gate and the trend on real git histories made here (issue 18's walkthrough), one part
# per answer that was wrong: an accepted failure that gets 20x worse (1), a new failing target
# (2), the step of a linear 10-commit history at c9 named c8...c9 (3), task checks kept out of
# the sweep (4), a --no-ff merge that keeps what the PR accepted (6), the commit-per-baseline
# flow not doubling the trend or breaking `baseline show` (7), one line per cause of steps (8),
# and the smaller ones (9): the
# notes store in trend, diff before any baseline, the lock file, list, -q --format text, a
# repository without commits, the --help example, a config change naming its settings, and the
# trend's relative error for rescaled logits. Item 5 needs LibTorch: tests/e2e/tier3_test.sh.
# Runs come from make_run (no LibTorch).
source "$(dirname "$0")/lib.sh"
: "${MAKE_RUN:?set MAKE_RUN to the make_run tool (bench/make_run.cc)}"

commit() { echo "$1" >>"${2:-file.txt}" && git add -A && git commit -qm "$1" && git rev-parse HEAD; }

# --- 1, 2, 6: an accepted known failure, a PR that makes it 20x worse, a new failing target, a merge.
new_repo "$work/a" || exit 1
store="$work/a-baselines"
c1=$(commit c1)
"$MAKE_RUN" --out "$work/c1.jsonl" --sha "$c1"
expect_exit 0 "main's baseline" -- "$DRIFTGATE" baseline update "$work/c1.jsonl" --store "$store"
git checkout -q -b pr
p1=$(commit p1 pr.txt)
"$MAKE_RUN" --out "$work/p1.jsonl" --sha "$p1" --fail 'e0/in0/*'  # max_abs 1e-3, failing its atol
expect_exit 1 "the PR's new failure gates first" -- "$DRIFTGATE" diff "$work/p1.jsonl" --store "$store" --base main
expect_exit 0 "it is accepted as a known failure" -- "$DRIFTGATE" baseline accept 'e0/in0/*' \
  --reason "known bf16 failure" --run "$work/p1.jsonl" --store "$store" --base main
expect_exit 0 "the accepted failure passes the gate" -- "$DRIFTGATE" diff "$work/p1.jsonl" --store "$store" --base main
p2=$(commit p2 pr.txt)
"$MAKE_RUN" --out "$work/p2.jsonl" --sha "$p2" --fail 'e0/in0/*' --scale 20  # the failure 20x worse
expect_exit 1 "item 1: an accepted failure made 20x worse fails the gate" -- "$DRIFTGATE" diff "$work/p2.jsonl" \
  --store "$store" --base main --format text --report "$work/p2.json" --junit "$work/p2.xml"
expect_contains "$work/stdout" "driftgate: FAIL - 2 failure grew, 2 drift grew" "item 1: text names the class"
expect_contains "$work/stdout" "e0/in0/cpu_fp32~t0/out  fail_numeric -> fail_numeric  max_abs 0.001 -> 0.02" \
  "item 1: the grown failure is listed with both values"
expect_contains "$work/p2.json" '"class": "failure_grew"' "item 1: report.json lists the class"
expect_contains "$work/p2.json" '"failure_grew": 2' "item 1: report.json counts it"
expect_contains "$work/p2.xml" '<failure type="failure_grew"' "item 1: JUnit fails the testcase"
"$DRIFTGATE" diff "$work/p2.jsonl" --store "$store" --base main --format markdown >"$work/p2.md" 2>/dev/null
expect_contains "$work/p2.md" "| failure grew | 2 | yes |" "item 1: the markdown table gates the class"

"$MAKE_RUN" --out "$work/p2-new.jsonl" --sha "$p2" --fail 'e0/in0/*' --targets 3 --fail 'e0/*/cpu_fp32~t2/out'
expect_exit 1 "item 2: a new target that fails its tolerance fails the gate" -- "$DRIFTGATE" diff \
  "$work/p2-new.jsonl" --store "$store" --base main --report "$work/p2-new.json"
expect_contains "$work/stdout" "**driftgate: FAIL** — 2 new failure" "item 2: the verdict names new failures"
expect_contains "$work/p2-new.json" '"new_failure": 2' "item 2: report.json counts them"

git checkout -q main
c2=$(commit c2)
"$MAKE_RUN" --out "$work/c2.jsonl" --sha "$c2"
expect_exit 0 "main moves on with its own (older) baseline" -- "$DRIFTGATE" baseline update "$work/c2.jsonl" \
  --store "$store"
git merge -q --no-ff -m "merge pr" pr
merge=$(git rev-parse HEAD)
"$MAKE_RUN" --out "$work/merge.jsonl" --sha "$merge" --fail 'e0/in0/*'
expect_exit 0 "item 6: after a --no-ff merge the PR's accepted baseline is the baseline" -- "$DRIFTGATE" diff \
  "$work/merge.jsonl" --store "$store" --base main --report "$work/merge.json"
expect_contains "$work/stdout" "using the baseline accepted on the branch merged by ${merge:0:7}, at ${p1:0:7}" \
  "item 6: the note names the merge and the accepted commit"
expect_contains "$work/merge.json" "\"sha\": \"$p1\"" "item 6: report.json names the accepted baseline"

# --- 9: the smaller ones on the same repository.
expect_exit 0 "item 9: diff before any baseline store exists is neutral" -- "$DRIFTGATE" diff "$work/c2.jsonl" \
  --store "$work/no-store-yet" --base main
expect_contains "$work/stdout" "the baseline store $work/no-store-yet does not exist yet" "item 9: and says why"
expect_exit 0 "item 9: diff -q --format text" -- "$DRIFTGATE" diff "$work/c2.jsonl" --store "$store" -q --format text
expect_contains "$work/stdout" "driftgate: PASS - " "item 9: -q --format text prints the text verdict"
checks=$((checks + 1))
if grep -q '\*\*' "$work/stdout"; then failures=$((failures + 1)); echo "FAIL: markdown in -q --format text"; else
  echo "ok: item 9: no markdown in -q --format text"; fi
"$MAKE_RUN" --out "$work/c2-tight.jsonl" --sha "$c2" --atol 1e-8
expect_exit 0 "item 9: a tightened tolerance" -- "$DRIFTGATE" diff "$work/c2-tight.jsonl" --store "$store"
expect_contains "$work/stdout" "config changed (2222222 -> 3333333: tolerance atol 1e-05 -> 1e-08)" \
  "item 9: config changed names what changed"
expect_exit 0 "item 9: --help" -- "$DRIFTGATE" --help
expect_contains "$work/stdout" 'driftgate run configs/*.yaml -o run.jsonl; [ $? -le 1 ] && driftgate diff run.jsonl' \
  "item 9: the example goes on to diff when run finds failing checks"

new_repo "$work/unborn" || exit 1
"$MAKE_RUN" --out "$work/unborn.jsonl" --sha unknown
expect_exit 2 "item 9: a repository without commits cannot store a baseline" -- "$DRIFTGATE" baseline update \
  "$work/unborn.jsonl" --store "$work/unborn-store"
expect_contains "$work/stderr" "the repository $work/unborn has no commit yet; commit (git add, git commit)" \
  "item 9: and says the repository has no commit yet, not that it is outside a checkout"
expect_exit 0 "item 9: diff in a repository without commits is neutral" -- "$DRIFTGATE" diff "$work/unborn.jsonl" \
  --store "$store"
expect_contains "$work/stdout" "has no commit yet (git commit, then run again)" "item 9: diff says so too"

# --- 7 and 3: the commit-per-baseline flow on a linear history, a step at c9 of 10.
new_repo "$work/b" || exit 1
declare -a c
for i in $(seq 1 10); do
  c[i]=$(commit "c$i")
  scale=1
  ((i >= 9)) && scale=1000
  "$MAKE_RUN" --out "$work/b$i.jsonl" --sha "${c[i]}" --scale "$scale" --tasks
  "$DRIFTGATE" baseline update "$work/b$i.jsonl" >/dev/null || echo "FAIL: baseline update c$i"
  if ((i == 1)); then
    git status --porcelain --untracked-files=all >"$work/status.txt"
    expect_contains "$work/status.txt" "?? baselines/.gitignore" "item 9: the store's .gitignore is there to add"
    checks=$((checks + 1))
    if grep -q "\.lock" "$work/status.txt"; then failures=$((failures + 1)); echo "FAIL: .lock shows in git status"
    else echo "ok: item 9: the lock file stays out of git add"; fi
  fi
  git add baselines && git commit -qm "baselines of c$i"
done
expect_exit 0 "item 7: trend over the doubled history" -- "$DRIFTGATE" trend --branch main -o "$work/b.html" \
  --markdown "$work/b.md"
expect_contains "$work/stderr" "10 commits, 10 baselines in 1 environment(s), 0 environment change(s), 4 step change(s); left out 10 commit(s) that only add baselines" \
  "item 7: commits that only add baselines are left out"
expect_contains "$work/b.md" "- \`${c[8]:0:7}...${c[9]:0:7}\` e0/in0/cpu_fp32~t0/out" "item 3: the step is at c8...c9"
checks=$((checks + 1))
if grep -q "${c[7]:0:7}...${c[8]:0:7}" "$work/b.md" "$work/b.html"; then failures=$((failures + 1))
  echo "FAIL: a step attributed to c7...c8"; else echo "ok: item 3: nothing blames c7...c8"; fi
expect_contains "$work/b.html" "<title>step change at ${c[8]:0:7}...${c[9]:0:7}:" "item 3: the chart marks c8...c9"
expect_contains "$work/b.md" "- \`${c[8]:0:7}...${c[9]:0:7}\` 4 checks, x1000 worse (env" \
  "item 8: one cause, one line: the count and the factor, the checks folded"
expect_contains "$work/b.html" "<td class=\"num\">4</td><td>x1000 worse</td>" "item 8: one row per cause in the HTML"
expect_contains "$work/b.html" "Task checks of this baseline (not in the curves): <code>t0</code> 2/2 pass (100%);" \
  "item 4: the trend counts task checks apart from the sweep"
expect_exit 0 "item 7: baseline show at a HEAD that only adds baselines" -- "$DRIFTGATE" baseline show
expect_contains "$work/stdout" "only adds baselines; showing its first parent ${c[10]:0:7}" "item 7: it steps over"
expect_contains "$work/stdout" "commit ${c[10]}" "item 7: and shows c10's baseline"
expect_exit 0 "item 9: baseline list" -- "$DRIFTGATE" baseline list
head -2 "$work/stdout" | tail -1 >"$work/first.txt"
expect_contains "$work/first.txt" "  ${c[10]}  " "item 9: list starts with the newest commit"
expect_contains "$work/first.txt" "  c10" "item 9: list shows the commit's subject"
date10=$(git log -1 --format=%cd --date=format:'%Y-%m-%d %H:%M %z' "${c[10]}")
expect_contains "$work/first.txt" "  ${c[10]}  $date10  c10" "item 9: list shows the commit's date (git log's)"

# --- 4: sweep counts task checks apart.
"$MAKE_RUN" --out "$work/tasks.jsonl" --sha "${c[10]}" --tasks --fail 'e0/in0/cpu_fp32~t0/task*'
expect_exit 0 "item 4: sweep with task checks" -- "$DRIFTGATE" sweep "$work/tasks.jsonl" --atol 1e-4,1
expect_contains "$work/stdout" "t0           2  100.0% (2/2)  100.0% (2/2)" "item 4: numeric checks reach 100%"
expect_contains "$work/stdout" "task checks (tier 3), judged by their task tolerances at every atol:" \
  "item 4: task checks have their own table"
expect_contains "$work/stdout" "t0           2   50.0% (1/2)" "item 4: with their own pass rate"

# --- 3 and 9: the same linear history in the git notes store, read by trend --store notes:.
new_repo "$work/n" || exit 1
for i in $(seq 1 10); do
  c[i]=$(commit "c$i")
  scale=1
  ((i >= 9)) && scale=1000
  "$MAKE_RUN" --out "$work/n$i.jsonl" --sha "${c[i]}" --scale "$scale"
  "$DRIFTGATE" baseline update "$work/n$i.jsonl" --store notes: >/dev/null || echo "FAIL: notes update c$i"
done
expect_exit 0 "item 9: trend --store notes:" -- "$DRIFTGATE" trend --store notes: --branch main -o "$work/n.html" \
  --markdown "$work/n.md"
expect_contains "$work/stderr" "10 commits, 10 baselines in 1 environment(s), 0 environment change(s), 4 step change(s);" \
  "item 9: the notes store's baselines are read"
expect_contains "$work/n.md" "- \`${c[8]:0:7}...${c[9]:0:7}\` e0/in1/cpu_fp32~t1/out" \
  "item 3: a linear 10-commit history names c8...c9"
expect_exit 0 "item 9: baseline show reads notes too" -- "$DRIFTGATE" baseline show --store notes:
expect_contains "$work/stdout" "commit ${c[10]}" "item 9: show HEAD from notes"

# --- 9: rescaled logits (outputs x30 from c4 on) move max_abs x30; the relative error,
# max_abs / max|reference|, stays 1e-7 / 3 for e0/in0/cpu_fp32~t0/out at every commit.
new_repo "$work/r" || exit 1
for i in $(seq 1 6); do
  r[i]=$(commit "c$i")
  scale=1
  ((i >= 4)) && scale=30
  "$MAKE_RUN" --out "$work/r$i.jsonl" --sha "${r[i]}" --output-scale "$scale"
  "$DRIFTGATE" baseline update "$work/r$i.jsonl" --store notes: >/dev/null || echo "FAIL: notes update r$i"
done
expect_exit 0 "item 9: trend of rescaled logits" -- "$DRIFTGATE" trend --store notes: -o "$work/r.html" \
  --markdown "$work/r.md"
expect_contains "$work/r.md" "- \`${r[3]:0:7}...${r[4]:0:7}\` 4 checks, x30 worse" "item 9: max_abs reads x30 worse"
expect_contains "$work/r.html" "<h2 id=\"relative-error\">Relative error</h2>" "item 9: the relative error chart"
checks=$((checks + 1))
same=$(grep -c "e0/in0/cpu_fp32~t0/out: relative error 3.3e-08</title>" "$work/r.html")
moved=$(grep -c "e0/in0/cpu_fp32~t0/out: relative error" "$work/r.html")
if [[ $same == 6 && $moved == 6 ]]; then echo "ok: item 9: the relative error is 3.3e-08 at all 6 commits"
else failures=$((failures + 1)); echo "FAIL: relative error points: $same of $moved at 3.3e-08 (want 6 of 6)"; fi

finish

#!/usr/bin/env bash
# Both baseline stores through the real binary: update, diff, accept, show, list and
# prune on the directory store and on git notes (refs/notes/driftgate).
source "$(dirname "$0")/lib.sh"
: "${MAKE_RUN:?set MAKE_RUN to the make_run tool (bench/make_run.cc)}"

repo="$work/repo"
mkdir -p "$repo" && cd "$repo" || exit 1
git init -q -b main .
git config user.name 'E2E Tester' && git config user.email e2e@example.invalid
commit() { echo "$1" >>file.txt && git add file.txt && git commit -qm "$1" && git rev-parse HEAD; }
c1=$(commit c1); c2=$(commit c2); c3=$(commit c3); c4=$(commit c4)
for sha in "$c1" "$c2" "$c3"; do "$MAKE_RUN" --out "$work/$sha.jsonl" --sha "$sha"; done
"$MAKE_RUN" --out "$work/run.jsonl" --sha "$c4" --fail 'e0/in1/cpu_fp32~t0/*'
key=$(head -1 "$work/run.jsonl" | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')

for store in "$work/baselines" "notes:"; do
  kind=$([[ $store == notes: ]] && echo notes || echo directory)
  for sha in "$c1" "$c2" "$c3"; do
    expect_exit 0 "$kind: update $sha" -- "$DRIFTGATE" baseline update "$work/$sha.jsonl" --store "$store"
  done
  expect_exit 1 "$kind: diff finds the regression against c3" -- "$DRIFTGATE" diff "$work/run.jsonl" \
    --store "$store" --report "$work/$kind.json"
  expect_contains "$work/$kind.json" "\"sha\": \"$c3\"" "$kind: the nearest ancestor's baseline is used"
  expect_contains "$work/baseline-proposal.jsonl" "\"changes\":1,\"drops\":0}" "$kind: the proposal holds the change"
  if [[ $kind == directory ]]; then
    expect_exit 0 "$kind: accept the regression" -- "$DRIFTGATE" baseline accept 'e0/in1/*' --reason "intended" \
      --run "$work/run.jsonl" --store "$store"
    expect_contains "$work/stdout" "accepted 1 checks into baseline" "$kind: accept says what it took"
    expect_contains "$work/stdout" "1 matching checks already held the run's values" "$kind: and what it kept"
  else
    expect_exit 0 "$kind: apply the proposal" -- "$DRIFTGATE" baseline accept --proposal \
      "$work/baseline-proposal.jsonl" --reason "intended" --store "$store"
    expect_contains "$work/stdout" "accepted 1 checks from proposal $work/baseline-proposal.jsonl into baseline" \
      "$kind: accept says what it took"
  fi
  expect_exit 0 "$kind: the diff now passes" -- "$DRIFTGATE" diff "$work/run.jsonl" --store "$store"
  expect_exit 0 "$kind: show HEAD's baseline" -- "$DRIFTGATE" baseline show --store "$store"
  expect_contains "$work/stdout" "by E2E Tester <e2e@example.invalid>: intended (1 checks e0/in1/" \
    "$kind: show prints the acceptance log"
  expect_exit 0 "$kind: list" -- "$DRIFTGATE" baseline list --store "$store"
  expect_contains "$work/stdout" "$key: 4 baselines" "$kind: list counts per environment"
  expect_exit 0 "$kind: prune --keep 2" -- "$DRIFTGATE" baseline prune --keep 2 --store "$store"
  expect_contains "$work/stdout" "removed 2 baselines" "$kind: prune removes the oldest by first-parent order"
  expect_exit 0 "$kind: list after prune" -- "$DRIFTGATE" baseline list --store "$store"
  expect_contains "$work/stdout" "  $c4 (1 accepted)" "$kind: the newest stays, with its log"
  expect_contains "$work/stdout" "$key: 2 baselines" "$kind: two remain"
done

# The notes store leaves the tree and the commits alone, and lives in refs/notes/driftgate.
checks=$((checks + 1))
if [[ -z $(git status --porcelain) && $(git rev-parse HEAD) == "$c4" ]] && git notes --ref=driftgate show "$c4" >/dev/null;
then echo "ok: notes store: tree and commits untouched, note on c4"; else
  failures=$((failures + 1)); echo "FAIL: notes store touched the tree or wrote no note"; git status --short; fi
# A corrupt note line is reported with the note and line.
git notes --ref=driftgate show "$c4" | sed '3s/.\{30\}$//' >"$work/note.txt"
git notes --ref=driftgate add -f -F "$work/note.txt" "$c4" 2>/dev/null
expect_exit 2 "a corrupt note is an error" -- "$DRIFTGATE" diff "$work/run.jsonl" --store notes:
expect_contains "$work/stderr" "refs/notes/driftgate:$c4:3: not valid JSON" "the note and line are named"
finish

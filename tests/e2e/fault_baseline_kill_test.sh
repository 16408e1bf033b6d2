#!/usr/bin/env bash
# Fault injection: `driftgate baseline update` is SIGKILLed 50 times at random moments
# while it replaces a baseline. After every kill the store must still parse and the
# baseline must be byte-for-byte either the old one or the new one (atomic replace:
# temp file, fsync, rename). Leftover temp files must not confuse the store.
source "$(dirname "$0")/lib.sh"
: "${MAKE_RUN:?set MAKE_RUN to the make_run tool (bench/make_run.cc)}"

repo="$work/repo"
mkdir -p "$repo" && cd "$repo" || exit 1
git init -q -b main .
git config user.name 'E2E Tester' && git config user.email e2e@example.invalid
echo c1 >file.txt && git add file.txt && git commit -qm c1
sha=$(git rev-parse HEAD)
# Big enough that writing takes a while, so kills land before, during and after it.
"$MAKE_RUN" --out "$work/old.jsonl" --sha "$sha" --inputs 300 --targets 8
"$MAKE_RUN" --out "$work/new.jsonl" --sha "$sha" --inputs 300 --targets 8 --scale 3
key=$(head -1 "$work/old.jsonl" | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')

# The canonical forms, from uninterrupted updates into separate stores.
expect_exit 0 "store the old run" -- "$DRIFTGATE" baseline update "$work/old.jsonl" --store "$work/old-store"
expect_exit 0 "store the new run" -- "$DRIFTGATE" baseline update "$work/new.jsonl" --store "$work/new-store"
old="$work/old-store/$key/$sha.jsonl"
new="$work/new-store/$key/$sha.jsonl"
checks=$((checks + 1))
if cmp -s "$old" "$new"; then
  failures=$((failures + 1))
  echo "FAIL: the old and new baselines are identical; the test could not tell them apart"
fi

store="$work/store"
stored="$store/$key/$sha.jsonl"
# How long one update takes here: kills are spread over 0 .. 1.5x that (measured, never asserted).
start=$(date +%s%N)
"$DRIFTGATE" baseline update "$work/new.jsonl" --store "$work/timing-store" >/dev/null
span_ms=$((($(date +%s%N) - start) / 1000000 * 3 / 2 + 1))

kept_old=0 got_new=0 bad=0
for round in $(seq 1 50); do
  "$DRIFTGATE" baseline update "$work/old.jsonl" --store "$store" >/dev/null || bad=$((bad + 1))
  delay_ms=$((RANDOM % span_ms))
  "$DRIFTGATE" baseline update "$work/new.jsonl" --store "$store" >/dev/null 2>&1 &
  pid=$!
  sleep "$(printf '0.%03d' "$delay_ms")" 2>/dev/null || sleep "$((delay_ms / 1000))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if cmp -s "$stored" "$old"; then
    kept_old=$((kept_old + 1))
  elif cmp -s "$stored" "$new"; then
    got_new=$((got_new + 1))
  else
    bad=$((bad + 1))
    echo "FAIL: round $round (kill after ${delay_ms} ms): the baseline is neither the old nor the new one"
    ls -la "$store/$key"
  fi
  if ! "$DRIFTGATE" baseline show "$sha" --store "$store" >"$work/show" 2>&1; then
    bad=$((bad + 1))
    echo "FAIL: round $round: the store does not parse after the kill"
    cat "$work/show"
  fi
done
checks=$((checks + 1))
if [[ $bad -ne 0 ]]; then
  failures=$((failures + 1))
else
  echo "ok: 50 kills within ${span_ms} ms: old baseline kept $kept_old times, new one complete $got_new times"
fi
temps=$(find "$store/$key" -name '*.tmp.*' | wc -l)
echo "note: $temps temp files left by killed writers (ignored by the store)"
expect_exit 0 "the store lists one baseline despite leftover temp files" -- \
  "$DRIFTGATE" baseline list --store "$store"
expect_contains "$work/stdout" "$key: 1 baseline" "one baseline listed"
expect_exit 0 "an uninterrupted update still works afterwards" -- \
  "$DRIFTGATE" baseline update "$work/new.jsonl" --store "$store"
checks=$((checks + 1))
if cmp -s "$stored" "$new"; then echo "ok: the final update is complete"; else
  failures=$((failures + 1)); echo "FAIL: the final update is not the new baseline"; fi
finish

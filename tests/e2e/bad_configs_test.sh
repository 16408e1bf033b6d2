#!/usr/bin/env bash
# Every malformed config gives its pinned error text, exit 2, and writes nothing.
source "$(dirname "$0")/lib.sh"
data="$(cd "$(dirname "$0")/../data/bad_configs" && pwd)"
mkdir -p "$work/configs"
cp "$data"/*.yaml "$work/configs/"
echo "a model file only needs to exist for these errors" >"$work/tiny.pt"
cd "$work/configs" || exit 1
before=$(find "$work" | sort)
count=0
for config in *.yaml; do
  name=${config%.yaml}
  expect_exit 2 "$name exits 2" -- "$DRIFTGATE" run "$config" -o "$work/out/$name.jsonl"
  checks=$((checks + 1))
  if ! diff -u "$data/$name.expected" "$work/stderr" >"$work/diff"; then
    failures=$((failures + 1))
    echo "FAIL: $name: stderr differs from $name.expected"
    cat "$work/diff"
  fi
  expect_missing "$work/out/$name.jsonl" "$name writes no run file"
  count=$((count + 1))
done
# Nothing at all: no output folder, no temporary file, nothing beside the configs.
after=$(find "$work" -path "$work/stdout" -prune -o -path "$work/stderr" -prune -o -path "$work/diff" -prune -o -print | sort)
checks=$((checks + 1))
if [[ "$after" == "$before" ]]; then echo "ok: the malformed configs wrote nothing anywhere"; else
  failures=$((failures + 1)); echo "FAIL: files appeared:"; diff <(echo "$before") <(echo "$after"); fi
checks=$((checks + 1))
if [[ $count -lt 10 ]]; then
  failures=$((failures + 1))
  echo "FAIL: only $count malformed configs (need at least 10)"
fi
finish

#!/usr/bin/env bash
# The bad-input corpus (tests/data/bad_inputs): every case is a directory holding its
# input files, `cmd` (the driftgate arguments, one line; @OUT@ is where the command
# would write), optional `env` (VAR=value lines) and `needs` ("torch": only in builds
# with the runner), and `expected`, the pinned stderr (the case directory shows as
# CASE; `expected.trixie` instead on Debian 13 where a library's own words differ there). Each must exit 2 with exactly that message, leave @OUT@ absent and leave the
# case directory as it was: nothing written half-way.
source "$(dirname "$0")/lib.sh"
data="$(cd "$(dirname "$0")/../data/bad_inputs" && pwd)"
count=0
skipped=0
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
for case_dir in "$data"/*/; do
  name=$(basename "$case_dir")
  if [[ -f "$case_dir/needs" && $(cat "$case_dir/needs") == torch && ${DRIFTGATE_WITH_TORCH:-0} != 1 ]]; then
    skipped=$((skipped + 1))
    continue
  fi
  dir="$work/cases/$name"
  mkdir -p "$dir"
  cp -R "$case_dir". "$dir/"
  if [[ -x "$dir/prepare" ]]; then
    # Inputs that must not be committed (TorchScript models) are made at test time.
    (cd "$dir" && ./prepare) || { failures=$((failures + 1)); echo "FAIL: $name: prepare failed"; continue; }
  fi
  out="$work/out/$name"
  read -r -a args <"$dir/cmd"
  args=("${args[@]//@OUT@/$out}")
  envs=()
  [[ -f "$dir/env" ]] && mapfile -t envs <"$dir/env"
  (cd "$dir" && find . -type f | sort | xargs -r sha1sum) >"$work/before"
  (cd "$dir" && expect_exit 2 "$name exits 2" -- env "${envs[@]}" "$DRIFTGATE" "${args[@]}")
  status=$?
  checks=$((checks + 1))
  [[ $status -eq 0 ]] || failures=$((failures + 1))
  # The LibTorch version a message names differs between Debian 12 and 13.
  sed -e "s|$dir|CASE|g" -e "s|LibTorch [0-9][0-9.]*[0-9]|LibTorch VERSION|g" "$work/stderr" >"$work/stderr.normalized"
  checks=$((checks + 1))
  # Where a library words its own error differently on another Debian release (yaml-cpp 0.8 and
  # nlohmann-json 3.11.3 on Debian 13), the case pins that release's text too: expected.CODENAME.
  expected="$dir/expected"
  [[ -f "$dir/expected.$codename" ]] && expected="$dir/expected.$codename"
  if ! diff -u "$expected" "$work/stderr.normalized" >"$work/diff"; then
    failures=$((failures + 1))
    echo "FAIL: $name: stderr differs from expected"
    cat "$work/diff"
  fi
  expect_missing "$out" "$name writes nothing at @OUT@"
  (cd "$dir" && find . -type f | sort | xargs -r sha1sum) >"$work/after"
  checks=$((checks + 1))
  if ! diff -u "$work/before" "$work/after" >"$work/diff"; then
    failures=$((failures + 1))
    echo "FAIL: $name: files changed in the case directory"
    cat "$work/diff"
  fi
  count=$((count + 1))
done
echo "note: $count cases run, $skipped need LibTorch (skipped in this build)"
checks=$((checks + 1))
if [[ $((count + skipped)) -lt 50 ]]; then
  failures=$((failures + 1))
  echo "FAIL: only $((count + skipped)) bad-input cases (need at least 50)"
fi
finish

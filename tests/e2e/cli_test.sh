#!/usr/bin/env bash
# The CLI contract: help, exit codes 0/1/2, errors on stderr with what to try.
source "$(dirname "$0")/lib.sh"

expect_exit 0 "--help exits 0" -- "$DRIFTGATE" --help
expect_contains "$work/stdout" "2  usage, input or environment error" "--help states the exit codes"
expect_contains "$work/stdout" "baseline" "--help lists subcommands"
expect_exit 2 "no subcommand exits 2" -- "$DRIFTGATE"
expect_exit 2 "unknown subcommand exits 2" -- "$DRIFTGATE" frobnicate
expect_contains "$work/stderr" "unknown subcommand 'frobnicate'; see driftgate --help" "unknown subcommand says what to try"
# Every subcommand --help lists (so a new one is covered), each with an example and the exit codes;
# a build without LibTorch has no runner, so its run and explain refuse (checked below).
"$DRIFTGATE" --help >"$work/help"
mapfile -t subcommands < <(sed -n '/^Subcommands:/,/^$/s/^  \([a-z]\+\) .*/\1/p' "$work/help")
checks=$((checks + 1))
if [[ ${#subcommands[@]} -ge 9 ]]; then echo "ok: --help lists ${#subcommands[@]} subcommands"; else
  failures=$((failures + 1)); echo "FAIL: --help lists only ${#subcommands[@]} subcommands: ${subcommands[*]}"; fi
for sub in "${subcommands[@]}"; do
  if [[ "${DRIFTGATE_WITH_TORCH:-1}" == "0" && ($sub == run || $sub == explain) ]]; then
    continue
  fi
  expect_exit 0 "$sub --help exits 0" -- "$DRIFTGATE" "$sub" --help
  expect_contains "$work/stdout" "Example:" "$sub --help has an example"
  expect_contains "$work/stdout" "Exit codes:" "$sub --help states the exit codes"
done
expect_exit 2 "unknown option exits 2" -- "$DRIFTGATE" diff --frobnicate
expect_contains "$work/stderr" "see driftgate diff --help" "unknown option points at help"
expect_exit 2 "diff of a missing run file exits 2" -- "$DRIFTGATE" diff "$work/none.jsonl"
expect_contains "$work/stderr" "none.jsonl" "the error names the file"
printf '{"type":"check"}\n' >"$work/bad.jsonl"
expect_exit 2 "diff of a malformed run file exits 2" -- "$DRIFTGATE" diff "$work/bad.jsonl"
expect_contains "$work/stderr" "bad.jsonl:1: the first line must be the run header" "malformed run file: file:line"
expect_exit 2 "baseline without an action exits 2" -- "$DRIFTGATE" baseline
expect_exit 0 "env exits 0" -- "$DRIFTGATE" env
expect_contains "$work/stdout" "env_key " "env prints the key"
if [[ "${DRIFTGATE_WITH_TORCH:-1}" == "0" ]]; then
  expect_exit 2 "run in a build without LibTorch exits 2" -- "$DRIFTGATE" run x.yaml -o "$work/run.jsonl"
  expect_contains "$work/stderr" "built without LibTorch" "run says the build has no LibTorch"
  expect_contains "$work/stderr" "so it has no runner" "run says this build has no runner"
  expect_missing "$work/run.jsonl" "no run file written"
fi
finish

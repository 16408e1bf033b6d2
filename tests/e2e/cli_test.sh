#!/usr/bin/env bash
# The CLI contract: help, exit codes 0/1/2, errors on stderr with what to try.
source "$(dirname "$0")/lib.sh"

expect_exit 0 "--help exits 0" -- "$DRIFTGATE" --help
expect_contains "$work/stdout" "2  usage, input or environment error" "--help states the exit codes"
expect_contains "$work/stdout" "baseline" "--help lists subcommands"
expect_exit 2 "no subcommand exits 2" -- "$DRIFTGATE"
expect_exit 2 "unknown subcommand exits 2" -- "$DRIFTGATE" frobnicate
expect_contains "$work/stderr" "error: unknown command 'frobnicate'; driftgate --help lists the commands" \
  "unknown subcommand says what to try"
expect_exit 2 "a misspelt subcommand exits 2" -- "$DRIFTGATE" dif
expect_contains "$work/stderr" "error: unknown command 'dif'; did you mean 'diff'? driftgate --help lists the commands" \
  "a misspelt subcommand: did you mean"
expect_exit 2 "a misspelt subcommand exits 2 (baseline)" -- "$DRIFTGATE" basline update
expect_contains "$work/stderr" "unknown command 'basline'; did you mean 'baseline'?" "did you mean 'baseline'"
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
expect_contains "$work/stderr" "error: driftgate diff: unknown option '--frobnicate'; driftgate diff --help lists the options" \
  "unknown option points at help"
# A misspelt option: the closest option of that subcommand (each command's own options).
expect_exit 2 "a misspelt option exits 2" -- "$DRIFTGATE" diff --colour
expect_contains "$work/stderr" \
  "error: driftgate diff: unknown option '--colour'; did you mean '--color'? driftgate diff --help lists the options" \
  "--colour: did you mean '--color'"
expect_exit 2 "a misspelt option with a value exits 2" -- "$DRIFTGATE" diff --colour=always "$work/none.jsonl"
expect_contains "$work/stderr" "unknown option '--colour'; did you mean '--color'?" "--colour=always: did you mean '--color'"
expect_exit 2 "a misspelt baseline option exits 2" -- "$DRIFTGATE" baseline list --stroe "$work/store"
expect_contains "$work/stderr" "driftgate baseline: unknown option '--stroe'; did you mean '--store'?" \
  "--stroe: did you mean '--store'"
if [[ "${DRIFTGATE_WITH_TORCH:-1}" != "0" ]]; then
  expect_exit 2 "a misspelt run option exits 2" -- "$DRIFTGATE" run --treads 2 x.yaml -o "$work/run.jsonl"
  expect_contains "$work/stderr" "driftgate run: unknown option '--treads'; did you mean '--threads'?" \
    "--treads: did you mean '--threads'"
  expect_missing "$work/run.jsonl" "a misspelt option writes no run file"
fi
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

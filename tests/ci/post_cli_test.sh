#!/usr/bin/env bash
# End to end: the real driftgate binary's `post` subcommand: exit codes (0 posted or
# help, 2 bad input), the refusal of a fork PR's own event, and --dry-run output
# with the token redacted. No network: dry runs send nothing.
# Usage: post_cli_test.sh DRIFTGATE
set -uo pipefail
driftgate=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check NAME EXPECTED_CODE ACTUAL_CODE
  if [[ $2 != "$3" ]]; then echo "FAIL: $1: exit $3, expected $2"; failures=$((failures + 1)); fi
}
contains() {  # contains NAME FILE TEXT
  grep -qF -- "$3" "$2" || { echo "FAIL: $1: '$3' not in output:"; cat "$2"; failures=$((failures + 1)); }
}
token=ghs_e2eSecretToken31415
sha=$(printf 'd%.0s' {1..40})
cat > "$work/report.json" <<JSON
{"schema": 1, "verdict": "pass", "reason": "", "exit_code": 0, "run": {"sha": "$sha", "env_key": "e"},
 "baseline": null, "env_mismatch": false, "env_changes": "", "notes": [], "gated_classes": [], "gated_present": [],
 "counts": {}, "experiment_changes": [], "checks": []}
JSON
pr_event() {  # pr_event HEAD_REPO
  echo "{\"pull_request\":{\"number\":3,\"head\":{\"sha\":\"$sha\",\"repo\":{\"full_name\":\"$1\"}},\"base\":{\"repo\":{\"full_name\":\"octo/app\"}}}}"
}
pr_event octo/app > "$work/event.json"
pr_event mallory/app > "$work/fork.json"
export GITHUB_REPOSITORY=octo/app GITHUB_EVENT_NAME=pull_request GITHUB_TOKEN=$token

"$driftgate" post --help > "$work/help" 2>&1; check help 0 $?
contains help "$work/help" "Exit 0 when posted"

"$driftgate" post svn "$work/report.json" > "$work/out" 2>&1; check "unknown system" 2 $?
contains "unknown system" "$work/out" "unknown system; use driftgate post github|gitlab REPORT.json"

GITHUB_EVENT_PATH="$work/event.json" "$driftgate" post github "$work/missing.json" > "$work/out" 2>&1
check "missing report" 2 $?

GITHUB_EVENT_PATH="$work/fork.json" "$driftgate" post github "$work/report.json" > "$work/out" 2>&1
check "fork event" 2 $?
contains "fork event" "$work/out" "comes from the fork mallory/app"

GITHUB_EVENT_PATH="$work/event.json" "$driftgate" post github "$work/report.json" --dry-run > "$work/out" 2>&1
check "dry run" 0 $?
contains "dry run" "$work/out" "POST https://api.github.com/repos/octo/app/issues/3/comments"
contains "dry run" "$work/out" "Authorization: Bearer ***"
if grep -qF "$token" "$work/out"; then echo "FAIL: the token appears in the dry-run output"; failures=$((failures + 1)); fi

GITHUB_EVENT_PATH="$work/event.json" "$driftgate" post github "$work/report.json" --dry-run \
  --trend-markdown "$work/no-trend.md" > "$work/out" 2>&1
check "missing trend" 2 $?
contains "missing trend" "$work/out" "--trend-markdown $work/no-trend.md: cannot open trend markdown file (No such file or directory)"
if grep -qF "POST " "$work/out"; then echo "FAIL: missing trend: a request was made"; failures=$((failures + 1)); fi

printf '| commit | pass rate |\n|:--|--:|\n| `abc1234` | 100%% |\n' > "$work/trend.md"
GITHUB_EVENT_PATH="$work/event.json" "$driftgate" post github "$work/report.json" --dry-run \
  --trend-markdown "$work/trend.md" --trend-branch release > "$work/out" 2>&1
check "trend" 0 $?
contains "trend" "$work/out" "<details><summary>Trend on release</summary>"

# A 600 KB report.json nested 300,000 levels deep: refused with exit 2, no crash, nothing sent.
python3 -c 'import sys; sys.stdout.write("[" * 300000 + "]" * 300000)' > "$work/deep.json"
GITHUB_EVENT_PATH="$work/event.json" "$driftgate" post github "$work/deep.json" --dry-run > "$work/out" 2>&1
check "deep report" 2 $?
contains "deep report" "$work/out" "$work/deep.json: nested deeper than 32 levels"
if grep -qF "POST " "$work/out"; then echo "FAIL: deep report: a request was made"; failures=$((failures + 1)); fi

[[ $failures == 0 ]] && echo "post_cli_test: all checks passed"
exit $((failures > 0))

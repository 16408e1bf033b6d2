# Helpers for driftgate's end-to-end tests: each test runs the real binary.
# Usage: source lib.sh; needs DRIFTGATE (the binary) in the environment.
set -uo pipefail

: "${DRIFTGATE:?set DRIFTGATE to the driftgate binary}"
failures=0
checks=0
work=$(mktemp -d "${TMPDIR:-/tmp}/driftgate-e2e.XXXXXX")
trap 'rm -rf "$work"' EXIT

# expect_exit CODE DESCRIPTION -- COMMAND...: runs COMMAND, keeps its stdout/stderr in
# $work/stdout and $work/stderr, and checks its exit code.
expect_exit() {
  local want=$1 what=$2
  shift 3
  "$@" >"$work/stdout" 2>"$work/stderr"
  local got=$?
  checks=$((checks + 1))
  if [[ $got -ne $want ]]; then
    failures=$((failures + 1))
    echo "FAIL: $what: exit $got, expected $want"
    echo "  command: $*"
    sed 's/^/  stdout: /' "$work/stdout" | head -20
    sed 's/^/  stderr: /' "$work/stderr" | head -20
    return 1
  fi
  echo "ok: $what"
}

# expect_contains FILE TEXT DESCRIPTION
expect_contains() {
  checks=$((checks + 1))
  if ! grep -qF -- "$2" "$1"; then
    failures=$((failures + 1))
    echo "FAIL: $3: '$2' not in $(basename "$1")"
    sed 's/^/  | /' "$1" | head -30
    return 1
  fi
  echo "ok: $3"
}

# expect_missing PATH DESCRIPTION: nothing may have been written there.
expect_missing() {
  checks=$((checks + 1))
  if [[ -e "$1" ]]; then
    failures=$((failures + 1))
    echo "FAIL: $2: $1 exists"
    return 1
  fi
  echo "ok: $2"
}

# new_repo DIR: an empty git repository on branch main at DIR (made if missing), entered.
new_repo() {
  mkdir -p "$1" && cd "$1" && git init -q -b main . && git config user.name 'E2E Tester' &&
    git config user.email e2e@example.invalid
}

finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [[ $failures -eq 0 ]]
}

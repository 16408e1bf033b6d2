#!/usr/bin/env bash
# Fault injection: writes that fail. A full disk (RLIMIT_FSIZE, the same EFBIG/ENOSPC
# path as a full filesystem; /dev/full) and a read-only store (a read-only bind mount
# in a private mount namespace: the tests run as root, whom permissions do not stop).
# Each must end in exit 2 with a message naming the file, leave the old baseline
# byte-for-byte as it was and leave no partial or temp file behind.
source "$(dirname "$0")/lib.sh"
: "${MAKE_RUN:?set MAKE_RUN to the make_run tool (bench/make_run.cc)}"

repo="$work/repo"
mkdir -p "$repo" && cd "$repo" || exit 1
git init -q -b main .
git config user.name 'E2E Tester' && git config user.email e2e@example.invalid
echo c1 >file.txt && git add file.txt && git commit -qm c1
sha=$(git rev-parse HEAD)
"$MAKE_RUN" --out "$work/old.jsonl" --sha "$sha" --inputs 300 --targets 8
"$MAKE_RUN" --out "$work/new.jsonl" --sha "$sha" --inputs 300 --targets 8 --scale 3
key=$(head -1 "$work/old.jsonl" | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')
store=baselines
stored="$store/$key/$sha.jsonl"
expect_exit 0 "store the old baseline" -- "$DRIFTGATE" baseline update "$work/old.jsonl" --store "$store"
cp "$stored" "$work/old-baseline.jsonl"

# unchanged DESCRIPTION: the store holds the old baseline and no temp file.
unchanged() {
  checks=$((checks + 1))
  local temps
  temps=$(find "$store" -name '*.tmp.*' | wc -l)
  if cmp -s "$stored" "$work/old-baseline.jsonl" && [[ $temps -eq 0 ]]; then
    echo "ok: $1: old baseline intact, no temp file"
  else
    failures=$((failures + 1))
    echo "FAIL: $1: baseline changed or $temps temp files left"
    ls -la "$store/$key"
  fi
}

# with_file_limit KIB COMMAND...: runs COMMAND with files limited to KIB KiB; writes
# beyond fail with EFBIG (SIGXFSZ ignored, as a full disk fails with ENOSPC).
with_file_limit() {
  local kib=$1
  shift
  (trap '' XFSZ && ulimit -f "$kib" && exec "$@")
}

# Disk full while replacing a baseline (the run is ~1 MB, the limit 8 KiB).
expect_exit 2 "update on a full disk exits 2" -- with_file_limit 8 "$DRIFTGATE" baseline update "$work/new.jsonl" \
  --store "$store"
expect_contains "$work/stderr" "error: $stored: cannot write (File too large); nothing was changed" \
  "the full-disk error names the baseline"
unchanged "update on a full disk"

# Disk full while writing a report: no report file at all. (--drift-factor 2 makes all
# 2400 checks drift grew, so the report lists them: unchanged checks are only counted.)
expect_exit 2 "diff --report on a full disk exits 2" -- with_file_limit 8 "$DRIFTGATE" diff "$work/new.jsonl" \
  --store "$store" --report "$work/report.json" --drift-factor 2
expect_contains "$work/stderr" "error: $work/report.json: cannot write (File too large); nothing was changed" \
  "the full-disk error names the report"
expect_missing "$work/report.json" "no partial report"
checks=$((checks + 1))
if [[ -z $(find "$work" -maxdepth 1 -name '*.tmp.*') ]]; then echo "ok: no temp report left"; else
  failures=$((failures + 1)); echo "FAIL: a temp report was left in $work"; fi

# A device that is always full.
expect_exit 2 "diff --report /dev/full exits 2" -- "$DRIFTGATE" diff "$work/new.jsonl" --store "$store" \
  --report /dev/full
expect_contains "$work/stderr" "error: /dev/full: cannot write (No space left on device)" "/dev/full is named"
unchanged "report to /dev/full"

# Standard output on a full device: the listing is lost, so the exit code must say so.
checks=$((checks + 1))
"$DRIFTGATE" baseline list --store "$store" >/dev/full 2>"$work/stderr"
code=$?
if [[ $code -eq 2 ]] && grep -qF "error: cannot write to standard output (No space left on device)" "$work/stderr"; then
  echo "ok: stdout on /dev/full exits 2 and says so"
else
  failures=$((failures + 1))
  echo "FAIL: stdout on /dev/full: exit $code"
  cat "$work/stderr"
fi

# A read-only store: needs a private mount namespace (unprivileged user namespaces, or root).
read_only() {
  local dir=$1
  shift
  local mount="mount --bind -o ro '$dir' '$dir' 2>/dev/null || { mount --bind '$dir' '$dir' && mount -o remount,bind,ro '$dir'; }"
  unshare -rm bash -c "$mount && exec \"\$@\"" read-only "$@" 2>"$work/unshare" ||
    unshare -m bash -c "$mount && exec \"\$@\"" read-only "$@"
}
if unshare -rm true 2>/dev/null || unshare -m true 2>/dev/null; then
  expect_exit 2 "update into a read-only store exits 2" -- read_only "$store" "$DRIFTGATE" baseline update \
    "$work/new.jsonl" --store "$store"
  expect_contains "$work/stderr" "(Read-only file system); check that the store directory is writable" \
    "the read-only error says what to check"
  unchanged "update into a read-only store"
  mkdir -p "$work/reports"
  expect_exit 2 "diff --report into a read-only directory exits 2" -- read_only "$work/reports" "$DRIFTGATE" diff \
    "$work/new.jsonl" --store "$store" --report "$work/reports/report.json"
  expect_contains "$work/stderr" "$work/reports/report.json: cannot create a temporary file in $work/reports (Read-only file system)" \
    "the read-only report error names the directory"
  expect_missing "$work/reports/report.json" "no report in the read-only directory"
else
  echo "skip: read-only store: no mount namespace here (unshare -m needs root or unprivileged user namespaces)"
fi

# After all that, an ordinary update works and is complete.
expect_exit 0 "update works once the disk has room" -- "$DRIFTGATE" baseline update "$work/new.jsonl" --store "$store"
expect_exit 0 "and diff against it" -- "$DRIFTGATE" diff "$work/new.jsonl" --store "$store"
finish

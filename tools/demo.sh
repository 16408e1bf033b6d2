#!/usr/bin/env bash
# The main job, as CI would run it on a commit: install, build, export the demo
# models, run the demo suite (configs/*.yaml), compare with the stored baselines and
# print the gate verdict. Results land in out/ (run.jsonl, summary.md, report.json).
# Exit code: the gate's (0 pass or no comparable baseline, 1 regression, 2 error).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
tools/prepare-demo.sh
mkdir -p out
driftgate=build/app/driftgate
"$driftgate" env
# `run` exits 1 when some check exceeds its tolerance (bf16 does, by design): that is
# information for the diff, not the verdict. Exit 2 (bad input) stops the job.
status=0
"$driftgate" run configs/*.yaml -o out/run.jsonl --threads 1 || status=$?
[[ $status -le 1 ]] || exit "$status"
verdict=0
"$driftgate" diff out/run.jsonl --store baselines --markdown out/summary.md --report out/report.json || verdict=$?
echo
case "$(grep -o '"verdict": *"[a-z_]*"' out/report.json | head -1 | sed 's/.*"\([a-z_]*\)"$/\1/')" in
  pass) word="PASS" ;;
  fail) word="FAIL" ;;
  no_baseline) word="NEUTRAL (no comparable baseline)" ;;
  *) word="exit $verdict" ;;
esac
echo "gate verdict: $word (exit $verdict); details in out/summary.md"
exit "$verdict"

#!/usr/bin/env bash
# The main job: install, build, export the demo models, then
#   1. the gate's story in a scratch repository (tools/demo-gate.sh): main's baseline, a pull
#      request that regresses, the failing gate and its summary, an accept with a reason, the
#      passing gate. It needs no committed baseline, so it shows a gate on any machine;
#   2. the demo suite (configs/*.yaml) run as CI would run it on a commit, and compared with
#      the committed baselines when they were recorded in this machine's environment (same key
#      as `driftgate env`); in another environment that comparison is neutral and says why.
# Results land in out/ (demo-gate/, run.jsonl, summary.md, report.json).
# Exit code: 0 when the story ran as it should and the suite's gate passed (or had no
# comparable baseline); 1 when the story went otherwise or the suite regressed; 2 on an error.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
tools/prepare-demo.sh
mkdir -p out
driftgate=build/app/driftgate
"$driftgate" env

rm -rf out/demo-gate
tools/demo-gate.sh "$driftgate" models out/demo-gate

echo
echo "== the demo suite: configs/*.yaml"
# `run` exits 1 when some check exceeds its tolerance (bf16 does, by design): that is
# information for the diff, not the verdict. Exit 2 (bad input) stops the job.
status=0
"$driftgate" run configs/*.yaml -o out/run.jsonl --threads 1 || status=$?
[[ $status -le 1 ]] || exit "$status"
key=$("$driftgate" env --threads 1 | sed -n 's/^env_key //p')
if [[ ! -d baselines/$key ]]; then
  echo "the committed baselines were recorded in other environments ($(ls baselines | tr '\n' ' ')); this"
  echo "machine's key is $key (driftgate env), so the suite has no comparable baseline: neutral."
  echo "gate verdict: NEUTRAL (the story above is the gate on this machine); run in out/run.jsonl"
  exit 0
fi
verdict=0
"$driftgate" diff out/run.jsonl --store baselines --markdown out/summary.md --report out/report.json || verdict=$?
echo
case "$(grep -o '"verdict": *"[a-z_]*"' out/report.json | head -1 | sed 's/.*"\([a-z_]*\)"$/\1/')" in
  pass) word="PASS" ;;
  fail) word="FAIL" ;;
  no_baseline) word="NEUTRAL (no comparable baseline)" ;;
  *) word="exit $verdict" ;;
esac
echo "gate verdict on the suite: $word (exit $verdict); details in out/summary.md"
exit "$verdict"

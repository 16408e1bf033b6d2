#!/usr/bin/env bash
# The demo suite's gate (tools/demo.sh, step 2): runs configs/*.yaml as CI would on this commit
# into OUT/run.jsonl and gates it. Where the committed baselines/ were recorded in this machine's
# environment (same key as `driftgate env`), it diffs with them. Elsewhere (another CPU, BLAS or
# thread count: the key differs) it does what the CI gate's `on-missing-baseline: run-base` does
# (tools/driftgate-run-base.sh): it checks out the commit of the newest committed baseline that is
# an ancestor of HEAD (HEAD itself when there is none, e.g. in a shallow clone) in a git worktree,
# runs the same configs there on this machine, and diffs with that run, so the verdict is real
# (PASS or FAIL) and every output names that commit. It runs the suite twice then.
# The worktree gets the models of models/ when the exporter scripts there are the ones that
# exported them (models/.exporter-stamp, as tools/prepare-demo.sh writes it), else its own
# tools/prepare-demo.sh exports them.
#
# usage: tools/demo-suite.sh DRIFTGATE OUT_DIR
#   DEMO_CONFIGS (default 'configs/*.yaml') and DEMO_RUN_ARGS (default '--threads 1') change the
#   suite and its run options (the tests: one config, --threads 2 for a key of no baseline).
# Exit code: 0 when the gate passed (or, with no baseline at all, was neutral); 1 when the suite
# regressed; 2 on an error. Results: OUT/run.jsonl, summary.md, report.json (base-run.jsonl
# under run-base).
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: tools/demo-suite.sh DRIFTGATE OUT_DIR" >&2
  exit 2
fi
driftgate=$(realpath "$1") || exit 2
out=$2
[[ -x $driftgate ]] || { echo "demo-suite: $1 is not an executable driftgate" >&2; exit 2; }
mkdir -p "$out" && out=$(realpath "$out") || exit 2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
configs=${DEMO_CONFIGS:-configs/*.yaml}
run_args=${DEMO_RUN_ARGS:---threads 1}

# `run` exits 1 when some check exceeds its tolerance (bf16 does, by design): that is
# information for the diff, not the verdict. Exit 2 (bad input) stops the job.
status=0
# shellcheck disable=SC2086  # the glob and the options are split as a CI job splits them
"$driftgate" run $configs -o "$out/run.jsonl" $run_args || status=$?
[[ $status -le 1 ]] || exit "$status"
key=$(head -1 "$out/run.jsonl" | grep -o '"env_key": *"[0-9a-f]*"' | sed 's/.*"\([0-9a-f]*\)"$/\1/')
[[ -n $key ]] || { echo "demo-suite: no env_key in $out/run.jsonl" >&2; exit 2; }

verdict=0
if [[ -d baselines/$key ]]; then
  "$driftgate" diff "$out/run.jsonl" --store baselines --markdown "$out/summary.md" --report "$out/report.json" ||
    verdict=$?
else
  # The base: the newest committed baseline's commit on HEAD's history (the suite as it was when
  # its baseline was recorded), rerun here; HEAD itself when no such commit is in this clone.
  base="" best=-1
  for file in baselines/*/*.jsonl; do
    [[ -f $file ]] || continue
    sha=$(basename "$file" .jsonl)
    if [[ ! $sha =~ ^[0-9a-f]{40}$ ]] || ! git merge-base --is-ancestor "$sha" HEAD 2>/dev/null; then continue; fi
    distance=$(git rev-list --count "$sha..HEAD")
    if [[ $best -lt 0 || $distance -lt $best ]]; then base=$sha best=$distance; fi
  done
  if [[ -z $base ]]; then
    base=$(git rev-parse HEAD) || exit 2
    echo "no committed baseline's commit is in this clone's history: the base is HEAD's own suite"
  fi
  echo "the committed baselines were recorded in other environments ($(ls baselines | tr '\n' ' '));"
  echo "this machine's key is $key: building the baseline here from commit $base (run-base)"
  prepare='stamp=$(cat tools/export_models.py tools/export_detection.py tools/export_digits.py 2>/dev/null | sha1sum | cut -c1-40)
if [ "$stamp" = "$(cat "$DEMO_MODELS/.exporter-stamp" 2>/dev/null)" ]; then ln -s "$DEMO_MODELS" models; else tools/prepare-demo.sh; fi'
  DEMO_MODELS=$root/models DRIFTGATE=$driftgate tools/driftgate-run-base.sh diff "$out/run.jsonl" \
    --on-missing-baseline run-base --store baselines --base "$base" --configs "$configs" --run-args "$run_args" \
    --prepare "$prepare" -- --markdown "$out/summary.md" --report "$out/report.json" || verdict=$?
  [[ $verdict -le 1 ]] || exit "$verdict"
fi
echo
case "$(grep -o '"verdict": *"[a-z_]*"' "$out/report.json" 2>/dev/null | head -1 | sed 's/.*"\([a-z_]*\)"$/\1/')" in
  pass) word="PASS" ;;
  fail) word="FAIL" ;;
  no_baseline) word="NEUTRAL (no comparable baseline)" ;;
  *) word="exit $verdict" ;;
esac
echo "gate verdict on the suite: $word (exit $verdict); details in $out/summary.md"
exit "$verdict"

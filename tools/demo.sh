#!/usr/bin/env bash
# The main job: install, build, export the demo models, then
#   1. the gate's story in a scratch repository (tools/demo-gate.sh): main's baseline, a pull
#      request that regresses, the failing gate and its summary, an accept with a reason, the
#      passing gate. It needs no committed baseline, so it shows a gate on any machine;
#   2. the demo suite (configs/*.yaml) run as CI would run it on a commit and gated
#      (tools/demo-suite.sh): against the committed baselines when they were recorded in this
#      machine's environment (same key as `driftgate env`); in another environment the baseline
#      is built on the spot, as the CI gate's on-missing-baseline: run-base does: the committed
#      baseline's commit is run in a git worktree on this machine (the suite runs twice then).
#   3. where Debian 13's LibTorch 2.6 is built too (tools/debian13.sh tools/build.sh and
#      tools/prepare-demo.sh there), what upgrading to it changes (tools/demo-upgrade.sh), and
#      the deployment question on ONNX Runtime (examples/onnxruntime_resnet18.yaml).
# Results land in out/ (demo-gate/, run.jsonl, summary.md, report.json, base-run.jsonl, upgrade/).
# Exit code: 0 when the story ran as it should and the suite's gate passed; 1 when the story
# went otherwise or the suite regressed; 2 on an error.
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
suite=0
tools/demo-suite.sh "$driftgate" out || suite=$?

# 3. Where Debian 13's LibTorch 2.6 is built beside this one (tools/debian13.sh), what upgrading
#    changes on the same models (tools/demo-upgrade.sh); informative, so not in the exit code.
if [[ ${DRIFTGATE_LIBTORCH_LINE:-} != debian13 && -x build-lt26/app/driftgate && -f models-lt26/resnet18.pt2 ]]; then
  echo
  echo "== the upgrade gate: LibTorch 1.13 -> 2.6 on the demo's models (tools/demo-upgrade.sh)"
  tools/demo-upgrade.sh || [[ $? -eq 1 ]]
fi

# 4. Where a build has ONNX Runtime (driftgate-ort beside driftgate: Debian 13's), PyTorch against
#    its ONNX export run by ONNX Runtime at each optimization level; informative too.
ort_run=()
if [[ -x build/app/driftgate-ort && -f models/resnet18.onnx ]]; then
  ort_run=("$driftgate")
elif [[ ${DRIFTGATE_LIBTORCH_LINE:-} != debian13 && -x build-lt26/app/driftgate-ort && -f models-lt26/resnet18.onnx ]]; then
  ort_run=(bash tools/debian13.sh build/app/driftgate)  # build/ and models/ there are build-lt26/ and models-lt26/ here
fi
if [[ ${#ort_run[@]} -gt 0 ]]; then
  echo
  echo "== ONNX Runtime: resnet18's ONNX export against the TorchScript model (examples/onnxruntime_resnet18.yaml)"
  "${ort_run[@]}" run examples/onnxruntime_resnet18.yaml -o out/onnxruntime.jsonl || [[ $? -eq 1 ]]
fi
exit "$suite"

#!/usr/bin/env bash
# The upgrade gate on the demo's own models: what moving from Debian 12's LibTorch 1.13 to
# Debian 13's LibTorch 2.6 changes, before anyone upgrades.
#   tools/demo-upgrade.sh [CONFIG...]
# Runs the configs (default: resnet18, mobilenet_v3_small, lraspp and examples/aoti_resnet18.yaml,
# whose AOTInductor targets 1.13 skips and 2.6 runs) under both lines: this machine's build/ and,
# in tools/debian13.sh's root, build/ there (build-lt26/ here). The 1.13 run becomes the baseline of
# this commit in a scratch store; `driftgate diff --against-env KEY` of the 2.6 run then reports
# per check what the upgrade changes (crashes, new failures, drift growth, task answers).
# Writes out/upgrade/: run13.jsonl, run26.jsonl, summary.md, report.json, store/.
# Needs both builds and both model sets: tools/build.sh and tools/prepare-demo.sh here, and
# bash tools/debian13.sh tools/build.sh, bash tools/debian13.sh tools/prepare-demo.sh.
# Exit code: diff's (0 nothing regressed, 1 the upgrade regresses a check), 2 on an error.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd -P)
configs=("$@")
if [[ ${#configs[@]} -eq 0 ]]; then
  configs=(configs/resnet18.yaml configs/mobilenet_v3_small.yaml configs/lraspp_segmentation.yaml
    examples/aoti_resnet18.yaml)
fi
for needed in build/app/driftgate build-lt26/app/driftgate models/resnet18.pt models-lt26/resnet18.pt2; do
  if [[ ! -e $needed ]]; then
    echo "demo-upgrade: $needed is missing; build and export both lines first: tools/build.sh," \
      "tools/prepare-demo.sh, bash tools/debian13.sh tools/build.sh, bash tools/debian13.sh tools/prepare-demo.sh" >&2
    exit 2
  fi
done
out=out/upgrade
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Both lines run the same files from one scratch copy (bind-mounted into the root at its own
# path): the configs, and models/ as 1.13's exporter wrote it (LibTorch 2.6 loads those files),
# so the diff shows what the LibTorch change does and not a re-export; the AOTInductor packages
# come from the 2.6 export, whose resnet18 weights are bit-identical to 1.13's.
for config in "${configs[@]}"; do
  mkdir -p "$work/$(dirname "$config")"
  cp "$config" "$work/$config"
done
cp -R models "$work/models"
cp models-lt26/*.pt2 "$work/models/"
run_files=()
for config in "${configs[@]}"; do run_files+=("$work/$config"); done

echo "== LibTorch 1.13 (Debian 12, this machine): ${configs[*]}"
status=0
build/app/driftgate run "${run_files[@]}" -o "$out/run13.jsonl" || status=$?
[[ $status -le 1 ]] || exit 2
echo "== LibTorch 2.6 (Debian 13 root): the same configs and files"
status=0
DRIFTGATE_DEBIAN13_BINDS="$work" bash tools/debian13.sh build/app/driftgate run "${run_files[@]}" \
  -o "$work/run26.jsonl" || status=$?
[[ $status -le 1 ]] || exit 2
cp "$work/run26.jsonl" "$out/run26.jsonl"

key13=$(head -1 "$out/run13.jsonl" | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')
# A scratch store of this one comparison: a working tree with changes is fine here.
build/app/driftgate baseline update "$out/run13.jsonl" --store "$out/store" --allow-dirty >/dev/null
echo "== what the upgrade changes: driftgate diff run26.jsonl --against-env $key13"
status=0
build/app/driftgate diff "$out/run26.jsonl" --store "$out/store" --against-env "$key13" --format text \
  --markdown "$out/summary.md" --report "$out/report.json" || status=$?
echo "demo-upgrade: $repo/$out/{summary.md,report.json}"
exit "$status"

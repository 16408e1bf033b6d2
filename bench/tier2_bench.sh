#!/usr/bin/env bash
# Tier 2 capture overhead and localization memory on the demo models (bench/tier2_bench.cc).
# Builds the bench in build/ (LibTorch on) and runs it on resnet18 and mobilenet_v3_small
# (tools/prepare-demo.sh exports them into models/). Prints figures; asserts nothing.
#   bash bench/tier2_bench.sh [--repeats N] [--size S]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DRIFTGATE_BUILD_DIR:-build}
cmake --build "$build" --target tier2_bench >/dev/null
for model in models/resnet18.pt models/mobilenet_v3_small.pt; do
  [[ -f $model ]] || { echo "tier2_bench: $model is missing; run tools/prepare-demo.sh first" >&2; exit 2; }
done
"$build/tests/runner/tier2_bench" models/resnet18.pt models/mobilenet_v3_small.pt "$@"

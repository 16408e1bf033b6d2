#!/usr/bin/env bash
# Configures and builds driftgate into build/ (or build-notorch/ with --no-torch).
#   tools/build.sh             the full build, runner included (needs libtorch-dev)
#   tools/build.sh --no-torch  diff, baseline, env and post only: no LibTorch needed
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
flags=(-DDRIFTGATE_WITH_TORCH=ON)
if [[ "${1:-}" == "--no-torch" ]]; then
  dir=build-notorch
  flags=(-DDRIFTGATE_WITH_TORCH=OFF)
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
echo "build: $dir/app/driftgate"

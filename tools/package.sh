#!/usr/bin/env bash
# Builds driftgate's Debian package: the build directory of tools/build.sh, then
# `cpack -G DEB` into OUT (default out/package). A consumer's CI installs it with
#   apt-get install -y ./driftgate_<version>_amd64.deb
# instead of building from source (the reusable workflows cache it, keyed by
# driftgate's version and commit and the LibTorch version).
#   tools/package.sh [--no-torch] [OUT]   --no-torch: driftgate-notorch (no runner)
# DRIFTGATE_BUILD_DIR overrides the build directory (default build/, build-notorch/).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
flags=(-DDRIFTGATE_WITH_TORCH=ON)
if [[ "${1:-}" == "--no-torch" ]]; then
  dir=build-notorch
  flags=(-DDRIFTGATE_WITH_TORCH=OFF)
  shift
fi
dir=${DRIFTGATE_BUILD_DIR:-$dir}
out=$(realpath -m "${1:-out/package}")
# The same build directories as tools/build.sh, but only the binary the package holds.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target driftgate
mkdir -p "$out"
cpack --config "$dir/CPackConfig.cmake" -G DEB -B "$out" >/dev/null
rm -rf "$out/_CPack_Packages"
deb=$(ls -t "$out"/*.deb | head -1)
dpkg-deb --field "$deb" Package Version Depends
echo "package: $deb"

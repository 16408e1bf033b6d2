#!/usr/bin/env bash
# Builds driftgate's Debian package: the build directory of tools/build.sh, then
# `cpack -G DEB` into OUT (default out/package). A consumer's CI installs it with
#   apt-get install -y ./driftgate_<version>_amd64.deb
# instead of building from source (the reusable workflows cache it, keyed by
# driftgate's version and commit and the LibTorch version).
#   tools/package.sh [--no-torch] [OUT]   --no-torch: driftgate-notorch (no runner)
set -euo pipefail
cd "$(dirname "$0")/.."
build_flag=()
dir=build
if [[ "${1:-}" == "--no-torch" ]]; then
  build_flag=(--no-torch)
  dir=build-notorch
  shift
fi
out=$(realpath -m "${1:-out/package}")
tools/build.sh "${build_flag[@]}"
mkdir -p "$out"
cpack --config "$dir/CPackConfig.cmake" -G DEB -B "$out" >/dev/null
rm -rf "$out/_CPack_Packages"
deb=$(ls -t "$out"/*.deb | head -1)
dpkg-deb --field "$deb" Package Version Depends
echo "package: $deb"

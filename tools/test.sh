#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 machine or a developer's:
# installs what is missing, builds with LibTorch and runs every test (units and
# end-to-end), then builds without LibTorch and runs the tests again, which proves
# that differ/, ci/ and core/ never need it. Last, every libFuzzer target for 20 s from its
# seed corpus under AddressSanitizer + UndefinedBehaviorSanitizer (build-fuzz/, tools/fuzz.sh).
# The whole suite under the sanitizers is the `sanitize` job of .github/workflows/ci.yml.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
tools/build.sh --no-torch
ctest --test-dir build-notorch --output-on-failure -j"$(nproc)"
tools/fuzz.sh 20

#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 machine or a developer's:
# installs what is missing, checks the formatting (tools/lint.sh --format), builds with LibTorch and runs every test (units and
# end-to-end). Then the torch-free configuration (-DDRIFTGATE_WITH_TORCH=OFF), which proves
# that differ/, ci/ and core/ never need LibTorch, runs its whole suite under AddressSanitizer
# (leaks included) + UndefinedBehaviorSanitizer (build-asan/); then the runner's tests and the
# end-to-end suites that load models under both, LibTorch linked but not instrumented
# (build-asan-torch/, which takes core/, differ/ and ci/ from build-asan/ through ccache); and
# last, every libFuzzer target for 20 s from its seed corpus under both (build-fuzz/,
# tools/fuzz.sh). Together the sanitizer phases cover the whole suite. The sanitizer builds use
# -O1 -g1 (line tables: enough for symbolized reports, and much quicker to compile with
# LibTorch's headers than -O2 -g). On CI's 2 cores the whole script takes about 50 minutes from
# a clean clone (ARCHITECTURE.md, "CI budget").
# Last, the LibTorch suite under Debian 13's LibTorch 2.6 and the upgrade test (below).
set -euo pipefail
cd "$(dirname "$0")/.."
# Disk: the builds, the Debian 13 root and the caches take ~10 GB at the peak (the 2.6 phase).
# DRIFTGATE_TEST_PRUNE=1 (.ci/run sets it: a clean clone, nothing to rebuild afterwards) removes
# each sanitizer and fuzz tree once its phase has passed, and each LibTorch tree's precompiled
# header, objects and static libraries (~1.5 GB a tree; only compiling and linking need them, no
# test builds anything) once the tree is built. A developer's run keeps them for incremental
# builds. Each phase prints the free space, so a full disk is seen, not guessed.
prune=${DRIFTGATE_TEST_PRUNE:-0}
phase() {  # and the minutes so far, so that a CI log shows where the time went
  echo "test.sh: $1 ($(df -BM --output=avail . | tail -1 | tr -d ' M') MiB free here, $((SECONDS / 60)) min $((SECONDS % 60)) s in)"
}
prune_tree() {  # prune_tree DIR: a finished phase's build tree
  if [[ $prune == 1 ]]; then rm -rf "$1"; fi
}
prune_built() {  # prune_built DIR: what only compiling and linking a built tree need
  if [[ $prune == 1 ]]; then find "$1" \( -name '*.gch' -o -name '*.o' -o -name '*.a' \) -delete; fi
}
phase "install"
tools/install-deps.sh
tools/lint.sh --format  # seconds: every tracked C++ file as .clang-format says
phase "the LibTorch build (build/)"
tools/build.sh
prune_built build
phase "the LibTorch suite"
ctest --test-dir build --output-on-failure -j"$(nproc)"
sanitized=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  -DDRIFTGATE_SANITIZE=address,undefined)
phase "the torch-free build and suite under ASan + UBSan (build-asan/)"
cmake -S . -B build-asan "${sanitized[@]}" -DDRIFTGATE_WITH_TORCH=OFF >/dev/null
cmake --build build-asan -j"$(nproc)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$(nproc)"
prune_tree build-asan
phase "the runner under ASan + UBSan (build-asan-torch/)"
cmake -S . -B build-asan-torch "${sanitized[@]}" -DDRIFTGATE_WITH_TORCH=ON >/dev/null
cmake --build build-asan-torch -j"$(nproc)" --target driftgate runner_test runner_isolation_test runner_tier2_test \
  assert_close_agreement_test runner_saved_inputs_test
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan-torch --output-on-failure -j"$(nproc)" \
  -R '^runner[._]|^e2e_(export_test_models|cli|bad_inputs|bad_configs|gate|tier3|explain)$'
prune_tree build-asan-torch
phase "the libFuzzer targets (build-fuzz/)"
tools/fuzz.sh 20
prune_tree build-fuzz
# The LibTorch suite again under Debian 13's LibTorch 2.6 (tools/debian13.sh: the root is made
# once and cached; build/ there is build-lt26/ here): the runner's units and the end-to-end
# suites that load models (the same set the runner ASan phase runs), the aoti backend against
# torch 2.6 in Python (e2e_aoti), the onnxruntime backends (driftgate-ort, built with driftgate)
# against onnxruntime in Python (e2e_onnxruntime) and their tier 2 against a Python localizer
# (e2e_onnxruntime_tier2), then the upgrade gate: a 1.13 baseline, a 2.6 run (e2e_upgrade).
# Left to the 1.13 phase, as code that does not differ between the lines: the torch-free suites
# (differ, ci, core: no LibTorch in them), and the long model sweeps (e2e_tier2_differential,
# e2e_demo_suite, e2e_float32_modules), whose machinery the runner tests exercise under both.
# DRIFTGATE_TEST_LT26=0 skips it (a developer's quick run; CI runs it).
if [[ ${DRIFTGATE_TEST_LT26:-1} == 1 ]]; then
  lt26_targets=(driftgate runner_test runner_isolation_test runner_tier2_test assert_close_agreement_test
    runner_saved_inputs_test)
  phase "the LibTorch 2.6 phase (Debian 13 root, build-lt26/)"
  bash tools/debian13.sh bash -c 'prune=$1 && shift && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DDRIFTGATE_WITH_TORCH=ON >/dev/null && cmake --build build -j"$(nproc)" --target "$@" &&
    if [[ $prune == 1 ]]; then find build \( -name "*.gch" -o -name "*.o" -o -name "*.a" \) -delete; fi &&
    ctest --test-dir build --output-on-failure -j"$(nproc)" \
      -R "^runner[._]|^e2e_(export_test_models|cli|bad_inputs|bad_configs|gate|tier3|explain|tier2_scripted|aoti|onnxruntime|onnxruntime_tier2)$"' \
    lt26 "$prune" "${lt26_targets[@]}"
  phase "the upgrade test"
  DRIFTGATE_REQUIRE_LT26=1 ctest --test-dir build --output-on-failure -R '^e2e_upgrade$'  # 1.13 baseline, 2.6 run
fi
phase "done"

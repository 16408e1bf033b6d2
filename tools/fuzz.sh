#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan into build-fuzz/ and runs
# each for a bounded time from its seed corpus (fuzz/corpus/<target>/). Any crash, sanitizer
# report, leak or timeout fails the script; the reproducer is left in build-fuzz/artifacts/.
#   tools/fuzz.sh [SECONDS-PER-TARGET]    default 20
# New inputs the fuzzer finds go to build-fuzz/corpus/<target>/, never into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
dir=build-fuzz
targets=(fuzz_experiment fuzz_record fuzz_check_line_fast fuzz_baseline_store fuzz_ci_event fuzz_http_response
  fuzz_http_body fuzz_torchscript_archive fuzz_report)
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DDRIFTGATE_WITH_TORCH=OFF -DDRIFTGATE_SANITIZE=address,undefined -DDRIFTGATE_FUZZ=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" --target fuzz_all
mkdir -p "$dir/artifacts"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
for target in "${targets[@]}"; do
  mkdir -p "$dir/corpus/$target"
  echo "fuzz: $target for ${seconds} s"
  if ! "$dir/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$dir/artifacts/$target-" -print_final_stats=1 \
    "$dir/corpus/$target" "fuzz/corpus/$target" >"$dir/$target.log" 2>&1; then
    failed+=("$target")
    tail -60 "$dir/$target.log"
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$dir/$target.log" | sed "s/^/  $target /" || true
done
if [[ ${#failed[@]} -ne 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]} (reproducers in $dir/artifacts/)"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, no crashes"

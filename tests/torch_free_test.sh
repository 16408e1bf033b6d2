#!/usr/bin/env bash
# The dependency rule (ARCHITECTURE.md): core/, tasks/, differ/, ci/, their tests, the fuzzers and
# the torch-free files of runner/ never include LibTorch. The -DDRIFTGATE_WITH_TORCH=OFF build
# catches uses at link time; this catches an include early, with the file and line. And nothing
# anywhere includes <torch/torch.h> (the whole C++ API: ~16 s per file instead of ~9 s for
# <torch/script.h> plus the specific torch/csrc/jit headers).
set -u
cd "$(dirname "$0")/.."
pattern='#[[:space:]]*include[[:space:]]*[<"](torch/|ATen/|c10/|caffe2/)'
torch_free=(core tasks differ ci app/*.h runner/runner.h runner/environment_probe.h runner/tier2_explain.h
  runner/mitigation.h runner/torchscript_archive.h runner/torchscript_archive.cc
  tests/core tests/tasks tests/differ tests/ci tests/runner/torchscript_archive_test.cc fuzz)
failed=0
# A path that no longer exists would make the grep below vacuous: the list must be kept true.
for path in "${torch_free[@]}"; do
  if [[ ! -e "$path" ]]; then
    echo "torch_free_test.sh lists '$path', which does not exist: update the list"
    failed=1
  fi
done
found=$(grep -rnE "$pattern" "${torch_free[@]}" 2>/dev/null)
if [[ -n "$found" ]]; then
  echo "LibTorch included where the dependency rule forbids it:"
  echo "$found"
  failed=1
fi
everything=$(git ls-files '*.cc' '*.h' '*.hxx' '*.cpp' '*.txt' '*.cmake' 2>/dev/null)
[[ -n "$everything" ]] || everything=$(find core tasks differ ci app runner tests fuzz bench cmake CMakeLists.txt \
  -name '*.cc' -o -name '*.h' -o -name '*.txt' -o -name '*.cmake')  # not a git checkout
found=$(echo "$everything" | xargs grep -nE '#[[:space:]]*include[[:space:]]*[<"]torch/torch\.h|precompile_headers\(.*torch/torch\.h' 2>/dev/null)
if [[ -n "$found" ]]; then
  echo "<torch/torch.h> is included; use <torch/script.h> and the specific torch/csrc/jit headers:"
  echo "$found"
  failed=1
fi
if [[ $failed -ne 0 ]]; then
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed"

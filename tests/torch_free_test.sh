#!/usr/bin/env bash
# The dependency rule (ARCHITECTURE.md): core/, tasks/, differ/, ci/ and the torch-free headers of
# runner/ never include LibTorch. The -DDRIFTGATE_WITH_TORCH=OFF build catches uses at link
# time; this catches an include early, with the file and line.
set -u
cd "$(dirname "$0")/.."
pattern='#[[:space:]]*include[[:space:]]*[<"](torch/|ATen/|c10/|caffe2/)'
found=$(grep -rnE "$pattern" core tasks differ ci app/*.h runner/runner.h runner/environment_probe.h runner/tier2_explain.h runner/mitigation.h \
  2>/dev/null)
if [[ -n "$found" ]]; then
  echo "LibTorch included where the dependency rule forbids it:"
  echo "$found"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed"

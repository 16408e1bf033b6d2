#!/usr/bin/env bash
# clang-tidy (.clang-tidy: a short list, every finding an error) over the torch-free
# libraries, using build-notorch/compile_commands.json. Not part of tools/test.sh:
# it takes minutes on 2 cores. Run it before sending a change to core/, differ/, ci/ or app/.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f build-notorch/compile_commands.json ]] || tools/build.sh --no-torch
files=$(git ls-files 'core/*.cc' 'differ/*.cc' 'ci/*.cc' 'app/*.cc' | grep -v -E 'cmd_run.cc|cmd_env.cc')
# shellcheck disable=SC2086
clang-tidy -p build-notorch --quiet $files
echo "lint: clang-tidy clean on $(echo "$files" | wc -w) files"

#!/usr/bin/env bash
# The two style gates: clang-format (.clang-format) over every tracked C++ file, and
# clang-tidy (.clang-tidy: a short list, every finding an error) over the torch-free
# libraries, using DIR/compile_commands.json (LINT_BUILD_DIR, default build-notorch).
# tools/test.sh (so CI) runs `tools/lint.sh --format`, the formatting only (seconds);
# clang-tidy takes minutes on 2 cores and is not part of it: run it before sending a
# change to core/, tasks/, differ/, ci/, app/ or runner/torchscript_archive.cc (torch-free).
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted=$(git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror 2>&1 |
  grep -oE '^[^: ]+\.(cc|h):[0-9]+:[0-9]+: error' | cut -d: -f1 | sort -u || true)
if [[ -n "$unformatted" ]]; then
  echo "lint: not formatted as .clang-format says (fix: clang-format -i FILE):"
  echo "$unformatted" | sed 's/^/  /'
  exit 1
fi
echo "lint: clang-format clean on $(git ls-files '*.cc' '*.h' | wc -l) files"
[[ "${1:-}" == "--format" ]] && exit 0
build_dir=${LINT_BUILD_DIR:-build-notorch}
if [[ ! -f $build_dir/compile_commands.json ]]; then
  if [[ -n "${LINT_BUILD_DIR:-}" ]]; then
    echo "lint: $build_dir/compile_commands.json is missing; configure $build_dir first" >&2
    exit 2
  fi
  tools/build.sh --no-torch
fi
files=$(git ls-files 'core/*.cc' 'tasks/*.cc' 'differ/*.cc' 'ci/*.cc' 'app/*.cc' runner/torchscript_archive.cc |
  grep -v -E 'cmd_run.cc|cmd_env.cc')
# shellcheck disable=SC2086
clang-tidy -p "$build_dir" --quiet $files
echo "lint: clang-tidy clean on $(echo "$files" | wc -w) files"

#!/usr/bin/env bash
# The layer rule (ARCHITECTURE.md): no folder includes a header from a folder above it.
#   core                       includes core only
#   tasks, differ, ci          include core and themselves
#   runner                     includes core, tasks and itself
#   app                        may include all of them
# differ, ci and runner never include one another. tests/, fuzz/ and bench/ sit outside the
# layers and are not checked. An include is a line `#include "F/..."` or `#include <F/...>`
# whose first path component F is one of the folders above; a relative include that climbs
# out of its folder ("../") is refused too, since it could hide any of them.
#   tests/layers_test.sh [ROOT]     check the tree at ROOT (default: this checkout)
#   tests/layers_test.sh --self-test
# The self-test builds a small tree with one violation of each kind and requires every one
# to be reported (and a clean tree to pass), so the check is known to be able to fail.
set -u

declare -A allowed=(
  [core]="core"
  [tasks]="core tasks"
  [differ]="core differ"
  [ci]="core ci"
  [runner]="core tasks runner"
  [app]="core tasks differ ci runner app"
)
layered="core tasks differ ci runner app"

# Prints one line per violation under $1; returns 1 if there is any.
check_tree() {
  local root=$1 folder file line number text target status=0
  for folder in $layered; do
    [[ -d "$root/$folder" ]] || continue
    while IFS= read -r -d '' file; do
      while IFS=: read -r number text; do
        line=${text#*include}
        line=${line#"${line%%[\"<]*}"}  # from the opening quote or bracket
        target=${line:1}
        target=${target%%[\">]*}
        if [[ $target == ../* || $target == */../* ]]; then
          echo "${file#"$root"/}:$number: includes \"$target\", which climbs out of $folder/;" \
            "include it by its path from the repository root (e.g. \"$folder/x.h\")"
          status=1
          continue
        fi
        local first=${target%%/*}
        [[ $target == */* && " $layered " == *" $first "* ]] || continue
        if [[ " ${allowed[$folder]} " != *" $first "* ]]; then
          echo "${file#"$root"/}:$number: includes $target, but $folder/ may include only" \
            "${allowed[$folder]// //, }/ (ARCHITECTURE.md, the layer rule); move the shared code" \
            "down to a folder both may include, or the caller up"
          status=1
        fi
      done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' "$file")
    done < <(find "$root/$folder" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.hpp' -o -name '*.cpp' \
      -o -name '*.inc' \) -print0 | sort -z)
  done
  return $status
}

self_test() {
  local failed=0 out expected
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT  # $dir is global: the trap runs after this function returns
  mkdir -p "$dir"/{core,tasks,differ,ci,runner,app}
  printf '#include "core/a.h"\n#include <vector>\n' >"$dir/core/a.cc"
  printf '#include "core/a.h"\n#include "tasks/t.h"\n' >"$dir/tasks/t.cc"
  printf '#include "core/a.h"\n' >"$dir/differ/d.cc"
  printf '#include "core/a.h"\n#include "tasks/t.h"\n' >"$dir/runner/r.cc"
  printf '#include "runner/r.h"\n#include "differ/d.h"\n#include "ci/c.h"\n' >"$dir/app/m.cc"
  if ! out=$(check_tree "$dir"); then
    echo "self-test: a tree that keeps the rule was refused:"
    echo "$out"
    failed=1
  fi
  printf '// a comment\n  #  include "differ/d.h"\n' >"$dir/core/bad.h"
  printf '#include <app/command.h>\n' >"$dir/tasks/bad.cc"
  printf '#include "ci/c.h"\n' >"$dir/differ/bad.cc"
  printf '#include "runner/r.h"\n' >"$dir/ci/bad.cc"
  printf '#include "differ/d.h"\n' >"$dir/runner/bad.cc"
  printf '#include "../differ/d.h"\n' >"$dir/runner/climb.cc"
  out=$(check_tree "$dir") && {
    echo "self-test: a tree with violations passed"
    failed=1
  }
  for expected in "core/bad.h:2: includes differ/d.h" "tasks/bad.cc:1: includes app/command.h" \
    "differ/bad.cc:1: includes ci/c.h" "ci/bad.cc:1: includes runner/r.h" "runner/bad.cc:1: includes differ/d.h" \
    "runner/climb.cc:1: includes \"../differ/d.h\""; do
    if [[ $out != *"$expected"* ]]; then
      echo "self-test: not reported: $expected"
      failed=1
    fi
  done
  if [[ $(grep -c . <<<"$out") -ne 6 ]]; then
    echo "self-test: expected 6 violations, got:"
    echo "$out"
    failed=1
  fi
  return $failed
}

if [[ ${1:-} == --self-test ]]; then
  self_test && result=0 || result=1
else
  root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
  check_tree "$root" && result=0 || result=1
fi
if [[ $result -ne 0 ]]; then
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed"

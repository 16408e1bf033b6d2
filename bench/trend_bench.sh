#!/usr/bin/env bash
# How `driftgate trend` scales: generates a repository of COMMITS first-parent commits with a
# baseline of CHECKS checks on each (two environments, a few injected steps), then builds the
# report over the newest 1/8, 1/4, 1/2 and all of them and prints wall time, CPU time (user+sys:
# the figure to compare on a shared, loaded machine), peak RSS and the HTML size. Time should grow
# linearly in commits x checks; memory only by 8 bytes per check and commit (one baseline is read
# at a time). Prints; asserts nothing.
#   bench/trend_bench.sh [BUILD_DIR] [COMMITS] [CHECKS]      defaults: build 1000 1000
# BUILD_DIR must hold app/driftgate and tests/e2e/trend_fixture (ninja driftgate trend_fixture).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../build}" && pwd)"
commits=${2:-1000}
checks=${3:-1000}
driftgate="$build/app/driftgate"
fixture="$build/tests/e2e/trend_fixture"
for tool in "$driftgate" "$fixture" /usr/bin/time; do
  [[ -x $tool ]] || { echo "trend_bench: $tool is missing; build it (ninja -C $build driftgate trend_fixture)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/driftgate-trend-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "trend_bench: generating $commits commits x $checks checks in $work"
start=$(date +%s.%N)
/usr/bin/python3 "$here/../tests/e2e/trend_repo.py" --repo "$work/repo" --commits "$commits" >"$work/shas.txt"
"$fixture" --store "$work/repo/baselines" --shas "$work/shas.txt" --checks "$checks" \
  --env-switch-at $((commits / 2)) --step-at $((commits * 4 / 5)) \
  --step-check 'resnet/in1/cpu_fp32~frozen/out' --step-check 'resnet/in7/cpu_fp32~onednn_off/out'
echo "trend_bench: generated in $(awk "BEGIN{print $(date +%s.%N) - $start}") s, store $(du -sh "$work/repo/baselines" | cut -f1)"

echo "trend_bench: load before measuring: $(uptime | sed 's/.*load average/load average/')"
printf '%8s %8s %8s %12s %14s %8s %8s %18s\n' commits checks wall_s peak_rss_mb us_per_check html_kb cpu_s \
  cpu_us_per_check
for n in $((commits / 8)) $((commits / 4)) $((commits / 2)) "$commits"; do
  /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" "$driftgate" trend --repo "$work/repo" --store "$work/repo/baselines" \
    --branch main --max-commits "$n" -o "$work/trend.html" --markdown "$work/trend.md" -q
  read -r wall user sys rss_kb <"$work/time.txt"
  cpu=$(awk "BEGIN{print $user + $sys}")
  printf '%8d %8d %8.2f %12.1f %14.2f %8d %8.2f %18.2f\n' "$n" "$checks" "$wall" "$(awk "BEGIN{print $rss_kb / 1024}")" \
    "$(awk "BEGIN{print $wall * 1000000 / ($n * $checks)}")" $(( $(stat -c %s "$work/trend.html") / 1024 )) "$cpu" \
    "$(awk "BEGIN{print $cpu * 1000000 / ($n * $checks)}")"
done

#!/usr/bin/env bash
# diff_bench: how long `driftgate diff` takes on a large run, beside the floor of
# merely reading both files (`cat run baseline > /dev/null`, page cache warm), with
# the peak resident memory of the diff. The issue's target is diff <= 5x the floor.
#
#   bench/diff_bench.sh [BUILD_DIR] [RECORDS] [TRIES]     defaults: build-differ, 1000000, 3
#
# It makes a throwaway git repository with two commits, writes a baseline for the
# first and two runs for the second with make_run (bench/make_run.cc, built as
# tests/e2e/make_run): one with a check in 1000 regressed, one with none. It stores the
# baseline with `driftgate baseline update` (a directory store) and times, TRIES times
# in turn, the floor and two diffs: the failing one, which writes report.json and the
# proposal (the 1000 regressed checks' lines, ~1 MB) as a CI gate does, and the passing
# one (report.json only: a passing gate proposes nothing); the figures are the medians.
# Then it applies the proposal with `baseline accept --proposal`. Needs about 4 GB of
# disk per million records and GNU time (/usr/bin/time). Prints one line per figure;
# asserts nothing. Beside wall time it prints CPU time (user + sys) of the floor and of
# the diff, and the load average before the diffs: on a shared, loaded machine the
# wall-time ratio mostly measures the neighbours.
set -euo pipefail

build=${1:-build-differ}
records=${2:-1000000}
tries=${3:-3}
driftgate="$build/app/driftgate"
make_run="$build/tests/e2e/make_run"
for tool in "$driftgate" "$make_run" /usr/bin/time; do
  [[ -x $tool ]] || { echo "diff_bench: $tool not found; build with: ninja -C $build driftgate make_run" >&2; exit 2; }
done
driftgate=$(realpath "$driftgate")
make_run=$(realpath "$make_run")

work=$(mktemp -d "${TMPDIR:-/tmp}/driftgate-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q -b main .
git -c user.name=bench -c user.email=bench@example.invalid commit -q --allow-empty -m base
base=$(git rev-parse HEAD)
git -c user.name=bench -c user.email=bench@example.invalid commit -q --allow-empty -m head
head=$(git rev-parse HEAD)

# RECORDS checks as one experiment of 1000 targets x RECORDS/1000 inputs.
targets=1000
inputs=$(( (records + targets - 1) / targets ))
start=$(date +%s.%N)
"$make_run" --out baseline.jsonl --sha "$base" --inputs "$inputs" --targets "$targets"
"$make_run" --out run.jsonl --sha "$head" --inputs "$inputs" --targets "$targets" --fail-every 1000
"$make_run" --out run_pass.jsonl --sha "$head" --inputs "$inputs" --targets "$targets"
echo "generated: 3 x $((inputs * targets)) records, $(du -m baseline.jsonl | cut -f1) + $(du -m run.jsonl | cut -f1) MB in $(echo "$(date +%s.%N) - $start" | bc) s"
key=$(head -c 4096 baseline.jsonl | grep -o '"env_key":"[0-9a-f]*"' | cut -d'"' -f4)
# Stored as a user's CI stores it: canonical (sorted by id, as `baseline update` writes it).
"$driftgate" baseline update baseline.jsonl --store store >/dev/null
rm baseline.jsonl
# The generator's gigabytes are written back to disk before anything is timed, so neither
# side pays for the other's writeback.
sync

seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
cat "store/$key/$base.jsonl" run.jsonl run_pass.jsonl >/dev/null  # warm the page cache
/usr/bin/time -f '%U %S' -o cat_time.txt cat "store/$key/$base.jsonl" run.jsonl >/dev/null
read -r cat_user cat_sys < <(tail -1 cat_time.txt)
floor_cpu=$(echo "$cat_user + $cat_sys" | bc)

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min averages) on $(nproc) CPUs before the diffs"

# timed_diff LABEL RUN: runs `driftgate diff RUN` (report.json, and the proposal when the
# gate fails) and sets elapsed, cpu, rss_kb, code and verdict.
timed_diff() {
  local label=$1 run=$2 user sys
  set +e
  /usr/bin/time -f '%e %M %U %S' -o "time_$label.txt" "$driftgate" diff "$run" --store store -q \
    --report "report_$label.json" >"diff_$label.out"
  code=$?
  set -e
  read -r elapsed rss_kb user sys < <(tail -1 "time_$label.txt")
  cpu=$(echo "$user + $sys" | bc)
  # shellcheck disable=SC2034 # read through eval by the caller
  verdict=$(head -1 "diff_$label.out")
}

# TRIES rounds of: the floor, the failing gate, the passing gate (the same sizes, nothing
# regressed, so no proposal is written). The host moves every figure by tens of percent
# from one second to the next; the medians are the figures, each try is printed too.
declare -A walls cpus ratios
floors=()
for ((try = 1; try <= tries; try++)); do
  floor=$(seconds cat "store/$key/$base.jsonl" run.jsonl)
  floors+=("$floor")
  line="try $try: floor $floor s"
  for label in failing passing; do
    run=$([[ $label == failing ]] && echo run.jsonl || echo run_pass.jsonl)
    timed_diff "$label" "$run"
    walls[$label]+="$elapsed "
    cpus[$label]+="$cpu "
    ratios[$label]+="$(echo "scale=2; $elapsed / $floor" | bc) "
    line+=", $label $elapsed s ($(echo "scale=1; $elapsed / $floor" | bc)x, $cpu s CPU, exit $code)"
    eval "rss_$label=$((rss_kb / 1024)) code_$label=$code"
    eval "verdict_$label=\$verdict"
  done
  echo "$line"
done
floor=$(median "${floors[@]}")
echo "floor: cat run baseline > /dev/null: $floor s wall (median of $tries), $floor_cpu s CPU"
for label in failing passing; do
  # shellcheck disable=SC2086 # the lists are words on purpose
  wall=$(median ${walls[$label]})
  # shellcheck disable=SC2086
  cpu=$(median ${cpus[$label]})
  # shellcheck disable=SC2086
  ratio=$(median ${ratios[$label]})
  rss_name=rss_$label code_name=code_$label verdict_name=verdict_$label
  echo "$label diff: $wall s wall, $cpu s CPU, peak RSS ${!rss_name} MB, exit ${!code_name} (${!verdict_name}); floor $floor s (medians of $tries)"
  echo "ratio: ${ratio}x the floor in wall time, $label gate (target <= 5x; median of the tries' ratios)"
  if [[ $(echo "$floor_cpu > 0" | bc) == 1 ]]; then
    echo "ratio: $(echo "scale=1; $cpu / $floor_cpu" | bc)x the floor in CPU time, $label gate"
  fi
done

# The failing gate's proposal, applied as a reviewer applies it (no run file needed).
# It stores the baseline of the run's commit (a gigabyte, written durably), so it runs
# last: the diffs above would otherwise have found it.
echo "proposal: $(stat -c %s baseline-proposal.jsonl) bytes, $(head -1 baseline-proposal.jsonl | grep -o '"changes":[0-9]*,"drops":[0-9]*')"
/usr/bin/time -f '%e %M' -o time_apply.txt "$driftgate" baseline accept --proposal baseline-proposal.jsonl \
  --reason bench --store store >apply.out
read -r elapsed rss_kb < <(tail -1 time_apply.txt)
echo "apply: baseline accept --proposal: $elapsed s wall, peak RSS $((rss_kb / 1024)) MB ($(cut -c1-60 apply.out)...)"

#!/usr/bin/env bash
# driftgate-run-base: the pull-request gate with a policy for a runner whose environment has no
# stored baseline (installed with the .deb as /usr/bin/driftgate-run-base; the GitHub reusable
# workflow and the GitLab component both call it, so the logic lives here once).
#
#   driftgate-run-base diff RUN.jsonl [--on-missing-baseline neutral|run-base] [--store S] [--base REV]
#       [--repo DIR] [--configs GLOB] [--run-args ARGS] [--prepare CMD] [--base-run FILE]
#       [--keep-base-run FILE] [-- DIFF-OPTIONS...]
#     Diffs RUN.jsonl with the stored baseline (driftgate diff --store S --base REV DIFF-OPTIONS).
#     When no stored baseline is comparable (the runner's environment key has none) and
#     --on-missing-baseline is run-base, the baseline is built on the spot: the merge base of
#     HEAD and REV is checked out in a git worktree, --prepare runs there, then
#     `driftgate run CONFIGS RUN-ARGS` (or --base-run FILE, a run made that way already), the
#     base run is stored in a temporary store and RUN.jsonl is diffed with it, so both sides
#     share one environment by construction. Every output says so (--note of driftgate diff).
#     The base run is kept as --keep-base-run FILE (default: base-run.jsonl beside RUN.jsonl):
#     a failing gate's accept commands store it in S first (baseline update), as no baseline of
#     this environment is stored there; with it, they work in the checkout once the job is gone.
#   driftgate-run-base build-base -o BASE.jsonl --configs GLOB [--run-args ARGS] [--prepare CMD]
#       [--base REV] [--repo DIR] [--if-no-baseline RUN.jsonl [--store S]]
#     Only the base run (e.g. one per shard, on the shard's runner); with --if-no-baseline it
#     writes nothing when a stored baseline is comparable with RUN.jsonl.
#
# REV defaults to $CI_MERGE_REQUEST_DIFF_BASE_SHA (GitLab), else $DRIFTGATE_BASE_SHA.
# The driftgate binary: $DRIFTGATE, else the driftgate beside this script, else on PATH.
# Exit codes: those of driftgate diff (0 nothing gated, 1 regression); 2 on bad use or when
# the base run cannot be built (no merge base, worktree, prepare or run failed), with the
# worktree removed in every case.
set -uo pipefail

me="driftgate-run-base"
die() {
  echo "$me: $*" >&2
  exit 2
}
# usage CODE: the header above, from "driftgate-run-base diff" to the exit codes.
usage() {
  sed -n '/^#   driftgate-run-base diff/,/^# worktree removed/p' "$0" | sed 's/^# \{0,1\}//'
  exit "$1"
}

# --- the driftgate binary, as an absolute path (the base run happens in another directory).
find_driftgate() {
  local candidate=${DRIFTGATE:-}
  if [[ -z $candidate ]]; then
    candidate="$(dirname "$(realpath "$0")")/driftgate"
    [[ -x $candidate ]] || candidate=driftgate
  fi
  if [[ $candidate == */* ]]; then
    [[ -x $candidate ]] || die "the driftgate binary $candidate is not executable (set DRIFTGATE)"
    realpath "$candidate"
  else
    command -v "$candidate" || die "'$candidate' is not on PATH (set DRIFTGATE to the driftgate binary)"
  fi
}

action=${1:-}
case $action in
  diff|build-base) shift ;;
  -h|--help) usage 0 ;;
  *) usage 2 >&2 ;;
esac
run_file="" mode=neutral store=baselines base="" repo=. configs="" run_args="" prepare="" base_run="" out="" keep=""
if_no_baseline="" prepare_set=0
base=${CI_MERGE_REQUEST_DIFF_BASE_SHA:-${DRIFTGATE_BASE_SHA:-}}
diff_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --) shift; diff_args=("$@"); break ;;
    --on-missing-baseline|--store|--base|--repo|--configs|--run-args|--prepare|--base-run|-o|--if-no-baseline|--keep-base-run)
      [[ $# -ge 2 ]] || die "$1 needs a value"
      case $1 in
        --on-missing-baseline) mode=$2 ;;
        --store) store=$2 ;;
        --base) base=$2 ;;
        --repo) repo=$2 ;;
        --configs) configs=$2 ;;
        --run-args) run_args=$2 ;;
        --prepare) prepare=$2; prepare_set=1 ;;
        --base-run) base_run=$2 ;;
        -o) out=$2 ;;
        --if-no-baseline) if_no_baseline=$2 ;;
        --keep-base-run) keep=$2 ;;
      esac
      shift 2 ;;
    -h|--help) usage 0 ;;
    -*) die "unknown option $1 (options of driftgate diff go after --)" ;;
    *)
      [[ -z $run_file ]] || die "one run file, not '$run_file' and '$1'"
      run_file=$1; shift ;;
  esac
done
case $mode in neutral|run-base) ;; *) die "--on-missing-baseline '$mode': use neutral or run-base" ;; esac
driftgate=$(find_driftgate) || exit 2
repo_abs=$(cd "$repo" 2>/dev/null && git rev-parse --show-toplevel 2>/dev/null) ||
  die "--repo $repo: not inside a git checkout (the base run is the merge base's checkout)"

tmp=""
worktree=""
cleanup() {
  if [[ -n $worktree ]]; then
    git -C "$repo_abs" worktree remove --force "$worktree" >/dev/null 2>&1
    git -C "$repo_abs" worktree prune >/dev/null 2>&1
  fi
  [[ -z $tmp ]] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 2' INT TERM HUP
tmp=$(mktemp -d "${TMPDIR:-/tmp}/driftgate-run-base.XXXXXX") || die "cannot make a temporary directory"

# probe RUN: prints the verdict of driftgate diff against the stored baseline (pass, fail,
# no_baseline) and keeps its report in $tmp/probe.json; exit 2 with diff's message on an error.
probe() {
  local status=0
  local base_opt=()
  [[ -z $base ]] || base_opt=(--base "$base")
  "$driftgate" diff "$1" --store "$store" --repo "$repo_abs" "${base_opt[@]}" --report "$tmp/probe.json" \
    --propose "$tmp/probe-proposal.jsonl" -q >/dev/null 2>"$tmp/probe.err" || status=$?
  if [[ $status -gt 1 ]]; then
    cat "$tmp/probe.err" >&2
    die "driftgate diff $1 --store $store failed (exit $status)"
  fi
  grep -o '"verdict": *"[a-z_]*"' "$tmp/probe.json" | head -1 | sed 's/.*"\([a-z_]*\)"$/\1/'
}

# json_field FILE SECTION FIELD: the string FIELD of the object SECTION in a report.json.
json_field() {
  tr -d '\n' <"$1" | grep -o "\"$2\": *{[^}]*}" | grep -o "\"$3\": *\"[^\"]*\"" | head -1 |
    sed 's/.*"\([^"]*\)"$/\1/'
}

merge_base=""
# build_base OUT: the merge base's run, made in a worktree of it, written to OUT.
build_base() {
  local dest=$1
  [[ -n $base ]] || die "run-base needs the target branch: pass --base REV (GitLab: CI_MERGE_REQUEST_DIFF_BASE_SHA)"
  [[ -n $configs ]] || die "run-base needs --configs GLOB (the configs driftgate run runs at the merge base)"
  git -C "$repo_abs" rev-parse --verify -q "$base^{commit}" >/dev/null ||
    die "--base $base: no such commit in $repo_abs (fetch the target branch; GitHub: fetch-depth: 0, GitLab: GIT_DEPTH: 0)"
  merge_base=$(git -C "$repo_abs" merge-base HEAD "$base") ||
    die "no merge base of HEAD and $base in $repo_abs (a shallow clone? fetch the whole history)"
  worktree="$tmp/merge-base"
  echo "$me: no stored baseline for this runner's environment; building one from merge base $merge_base" >&2
  git -C "$repo_abs" worktree add -q --detach "$worktree" "$merge_base" >"$tmp/worktree.err" 2>&1 || {
    cat "$tmp/worktree.err" >&2
    die "git worktree add of merge base $merge_base failed"
  }
  if [[ $prepare_set == 1 && -n $prepare ]]; then
    (cd "$worktree" && bash -c "$prepare") >&2 || die "the prepare command failed in the merge base's worktree ($merge_base): $prepare"
  fi
  local status=0
  # The configs glob is expanded in the merge base's checkout, as the job expands it in the PR's.
  # shellcheck disable=SC2086
  (cd "$worktree" && "$driftgate" run $configs -o "$tmp/base-run.jsonl" $run_args) >&2 || status=$?
  if [[ $status -gt 1 || ! -s $tmp/base-run.jsonl ]]; then
    die "driftgate run at merge base $merge_base failed (exit $status): driftgate run $configs $run_args"
  fi
  mv "$tmp/base-run.jsonl" "$dest" || die "cannot write $dest"
  git -C "$repo_abs" worktree remove --force "$worktree" >/dev/null 2>&1
  worktree=""
}

if [[ $action == build-base ]]; then
  [[ -n $out ]] || die "build-base needs -o BASE.jsonl"
  [[ -z $run_file && ${#diff_args[@]} -eq 0 ]] || die "build-base takes no run file and no diff options"
  if [[ -n $if_no_baseline ]]; then
    verdict=$(probe "$if_no_baseline") || exit 2
    if [[ $verdict != no_baseline ]]; then
      echo "$me: a stored baseline in $store is comparable with $if_no_baseline; no base run needed"
      exit 0
    fi
  fi
  out_abs=$(realpath -m "$out")
  build_base "$tmp/base.jsonl"
  mv "$tmp/base.jsonl" "$out_abs" || die "cannot write $out"
  echo "$me: the run of merge base $merge_base is in $out"
  exit 0
fi

[[ -n $run_file ]] || die "diff needs RUN.jsonl"
[[ -f $run_file ]] || die "$run_file: no such run file"
base_opt=()
[[ -z $base ]] || base_opt=(--base "$base")
if [[ $mode == neutral ]]; then
  rm -rf "$tmp"
  exec "$driftgate" diff "$run_file" --store "$store" --repo "$repo" "${base_opt[@]}" "${diff_args[@]}"
fi
verdict=$(probe "$run_file") || exit 2
if [[ $verdict != no_baseline ]]; then
  cleanup
  trap - EXIT
  exec "$driftgate" diff "$run_file" --store "$store" --repo "$repo" "${base_opt[@]}" "${diff_args[@]}"
fi
run_key=$(json_field "$tmp/probe.json" run env_key)
if [[ -n $base_run ]]; then
  [[ -f $base_run ]] || die "--base-run $base_run: no such run file"
  [[ -n $base ]] || die "--base-run needs --base REV (the target branch the base run was made from)"
  merge_base=$(git -C "$repo_abs" merge-base HEAD "$base") || die "no merge base of HEAD and $base in $repo_abs"
  cp "$base_run" "$tmp/base.jsonl" || die "cannot read $base_run"
else
  build_base "$tmp/base.jsonl"
fi
"$driftgate" baseline update "$tmp/base.jsonl" --store "$tmp/store" --repo "$repo_abs" --allow-dirty >/dev/null \
  2>"$tmp/update.err" || { cat "$tmp/update.err" >&2; die "cannot store the base run of $merge_base"; }
stored=$(cd "$tmp/store" && ls -d -- */"$merge_base".jsonl 2>/dev/null)
[[ -n $stored ]] || die "the base run is not of merge base $merge_base (made at another commit?)"
base_key=${stored%%/*}
[[ $base_key == "$run_key" ]] ||
  die "the base run's environment $base_key differs from the run's $run_key: run both on the same runner"
# The base run is kept beside the run: the accept commands a failing diff suggests store it in
# $store first (the temporary store is gone when they are followed).
[[ -n $keep ]] || keep="$(dirname "$run_file")/base-run.jsonl"
if [[ -z $base_run || $(realpath -m "$keep") != $(realpath "$base_run") ]]; then
  cp "$tmp/base.jsonl" "$keep.tmp.$$" 2>/dev/null && mv "$keep.tmp.$$" "$keep" ||
    { rm -f "$keep.tmp.$$"; die "cannot write the base run to $keep (--keep-base-run FILE)"; }
fi
note="baseline built on the spot from merge base $merge_base on this runner (no stored baseline in $store"
note+=" for environment $run_key; on-missing-baseline: run-base), kept as $keep. Accepting needs a baseline of"
note+=" this environment in $store: the commands below store this one there first (commit $store with them)"
echo "$me: $note" >&2
status=0
"$driftgate" diff "$run_file" --store "$tmp/store" --repo "$repo" --base "$merge_base" --note "$note" \
  --refresh-base-run "$keep" --refresh-store "$store" "${diff_args[@]}" || status=$?
exit "$status"

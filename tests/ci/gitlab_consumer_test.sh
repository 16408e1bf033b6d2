#!/usr/bin/env bash
# A consumer repository adopting driftgate on GitLab, end to end under gitlab-ci-local
# (shell executor) against the fake GitLab, with the real runner and a tiny model:
#   1. on main, driftgate-baseline runs the experiments, commits the baseline with
#      "[skip ci]", pushes it (to a local bare remote) and writes the trend report;
#   2. an MR that changes no model: driftgate-gate passes, driftgate-post (no checkout,
#      the gate's artifacts) posts the sticky note;
#   3. an MR whose model regressed: driftgate-gate fails, driftgate-post updates the same
#      note (exactly one note on the MR), and the commit status says failed;
#   4. the same regression from an MR whose runner has another environment key (its
#      .gitlab-ci.yml runs with --threads 2; the stored baseline has 1) and on_missing_baseline:
#      run-base: driftgate-gate runs the merge base in a git worktree and fails, naming it.
# Exit 77 (skipped) without the runner (a -DDRIFTGATE_WITH_TORCH=OFF build),
# gitlab-ci-local or rsync.
# Usage: gitlab_consumer_test.sh DRIFTGATE FAKE_GITLAB TEMPLATE EXPORT_MODELS_PY
# Environment: DRIFTGATE_WITH_TORCH (1 or 0), TEST_MODELS (tools/export_models.py test --out).
set -euo pipefail
driftgate=$(realpath "$1") fake=$(realpath "$2") template=$(realpath "$3") exporter=$(realpath "$4")
if [[ "${DRIFTGATE_WITH_TORCH:-0}" != 1 ]]; then
  echo "SKIP: this build has no runner (-DDRIFTGATE_WITH_TORCH=OFF); the consumer pipeline runs driftgate run"
  exit 77
fi
for tool in gitlab-ci-local rsync git; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not found (npm install -g gitlab-ci-local@4.50.0; apt-get install rsync)"
    exit 77
  fi
done
: "${TEST_MODELS:?set TEST_MODELS to the folder tools/export_models.py test wrote}"
token=glpat-ciLocalTestToken42
work=$(mktemp -d "${TMPDIR:-/tmp}/driftgate-consumer.XXXXXX")
fake_pid=""
cleanup() {
  touch "$work/stop"
  [[ -n "$fake_pid" ]] && wait "$fake_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

"$fake" "$work/url" "$work/stop" "$work/summary.json" &
fake_pid=$!
for _ in $(seq 100); do [[ -f "$work/url" ]] && break; sleep 0.1; done
[[ -f "$work/url" ]] || fail "the fake GitLab did not start"
url=$(cat "$work/url")

# The consumer: a model, a driftgate config, and the two CI lines that include the template.
project="$work/consumer"
mkdir -p "$project/templates" "$project/models" "$project/configs"
cd "$project"
git init -q -b main .
git config user.name consumer && git config user.email consumer@example.invalid
cp "$template" templates/driftgate.yml
cp "$TEST_MODELS/tiny_conv.pt" models/tiny.pt
cat >configs/tiny.yaml <<'YAML'
name: tiny
model: ../models/tiny.pt
inputs:
  - {name: noise0, random: {shape: [1, 3, 32, 32], seed: 0}}
  - {name: noise1, random: {shape: [1, 3, 32, 32], seed: 1, distribution: uniform}}
reference: cpu_fp32
targets: [onednn_off, channels_last, frozen]
tolerance: {atol: 1.0e-5, rtol: 0}
YAML
cat >.gitlab-ci.yml <<YAML
include:
  - local: templates/driftgate.yml
    inputs:
      driftgate: "$driftgate"
      key: linux-cpu
YAML
# gitlab-ci-local runs a job that names an image in Docker; this machine is a shell
# runner (as GitLab's shell executor, which ignores image:). The jobs run from this
# wrapper, after the consumer's own file has passed the schema check (below).
cat >.gitlab-ci-shell.yml <<'YAML'
include:
  - local: .gitlab-ci.yml
driftgate-gate: {image: null}
driftgate-post: {image: null, needs: []}
driftgate-baseline: {image: null}
YAML
printf 'out/\n.gitlab-ci-local/\n.gitlab-ci-shell.yml\n' >.gitignore
git add -A && git commit -qm "a model and its driftgate config"
git clone -q --bare . "$work/remote.git"

pipeline() {  # pipeline LOG JOB VARIABLE=VALUE...: runs one job, returns its exit code
  local log=$1 job=$2
  shift 2
  local variables=()
  for v in "$@"; do variables+=(--variable "$v"); done
  timeout 240 gitlab-ci-local --file .gitlab-ci-shell.yml --json-schema-validation false "$job" "${variables[@]}" \
    >"$log" 2>&1
}
jobs_of() {  # jobs_of PIPELINE_SOURCE: the jobs the consumer's pipeline has (schema-checked)
  gitlab-ci-local --list --variable "CI_PIPELINE_SOURCE=$1" --variable CI_DEFAULT_BRANCH=main 2>&1 |
    awk '$1 ~ /^driftgate-/ {print $1}' | sort | tr '\n' ' '
}
[[ "$(jobs_of push)" == "driftgate-baseline " ]] ||
  fail "a push to main should have the job driftgate-baseline only, got '$(jobs_of push)'"
[[ "$(jobs_of merge_request_event)" == "driftgate-gate driftgate-post " ]] ||
  fail "a merge request pipeline should have driftgate-gate and driftgate-post, got '$(jobs_of merge_request_event)'"
echo "ok: the consumer's pipeline passes the schema check; push: driftgate-baseline, MR: gate and post"

# 1. The default branch: baseline refresh and trend report.
main_sha=$(git rev-parse HEAD)
pipeline "$work/log-baseline" driftgate-baseline CI_PIPELINE_SOURCE=push CI_COMMIT_BRANCH=main \
  CI_DEFAULT_BRANCH=main "CI_COMMIT_SHA=$main_sha" "DRIFTGATE_PUSH_URL=$work/remote.git" ||
  { cat "$work/log-baseline"; fail "the baseline job failed"; }
key=$(head -1 out/run.jsonl | sed 's/.*"env_key":"\([0-9a-f]*\)".*/\1/')
git --git-dir="$work/remote.git" cat-file -e "main:baselines/$key/$main_sha.jsonl" ||
  { cat "$work/log-baseline"; fail "the remote's main has no baselines/$key/$main_sha.jsonl"; }
[[ "$(git --git-dir="$work/remote.git" log -1 --format=%s main)" == "baselines: $main_sha [skip ci]" ]] ||
  fail "the baseline commit's subject is not 'baselines: $main_sha [skip ci]'"
grep -q "<svg" out/trend.html || fail "out/trend.html has no chart"
grep -qF "pass \`${key:0:8}\`" out/trend.md && grep -qF "100.0% (6/6)" out/trend.md ||
  { cat out/trend.md; fail "out/trend.md does not show the baseline of environment ${key:0:8} (6/6 passing)"; }
echo "ok: baseline job: baseline pushed with [skip ci], trend report written"

# 2. An MR that changes no model: the gate passes and posts.
base=$(git rev-parse HEAD)
git checkout -q -b docs
echo "The tiny model." >README.md
git add README.md && git commit -qm "docs"
mr=(CI_PIPELINE_SOURCE=merge_request_event CI_MERGE_REQUEST_IID=9 "CI_MERGE_REQUEST_DIFF_BASE_SHA=$base"
  "CI_API_V4_URL=$url" CI_PROJECT_ID=314 "DRIFTGATE_GITLAB_TOKEN=$token")
pipeline "$work/log-pass" driftgate-gate "${mr[@]}" "CI_COMMIT_SHA=$(git rev-parse HEAD)" ||
  { cat "$work/log-pass"; fail "the gate failed on an MR that changes no model"; }
grep -q "driftgate: PASS" "$work/log-pass" && grep -q "Baseline \`" "$work/log-pass" ||
  { cat "$work/log-pass"; fail "the gate did not pass against the stored baseline"; }
pipeline "$work/log-post-pass" driftgate-post "${mr[@]}" "CI_COMMIT_SHA=$(git rev-parse HEAD)" ||
  { cat "$work/log-post-pass"; fail "the poster failed after a passing gate"; }
grep -q "created note" "$work/log-post-pass" || { cat "$work/log-post-pass"; fail "the passing gate was not posted"; }
echo "ok: unchanged MR: gate passed and posted"

# 3. The regression: the first convolution's weights scaled by 1000 (as tests/e2e/gate_test.sh).
git checkout -q -b regression "$base"
/usr/bin/python3 "$exporter" perturb models/tiny.pt "$work/perturbed.pt" --scale 1000 2>/dev/null
cp "$work/perturbed.pt" models/tiny.pt
git commit -qam "retrain the first convolution"
if pipeline "$work/log-fail" driftgate-gate "${mr[@]}" "CI_COMMIT_SHA=$(git rev-parse HEAD)"; then
  cat "$work/log-fail"
  fail "the gate passed on a regressed model"
fi
grep -q "driftgate: FAIL" "$work/log-fail" && grep -q "driftgate-gate finished in .* FAIL 1" "$work/log-fail" ||
  { cat "$work/log-fail"; fail "the gate did not fail with exit 1 (regression)"; }
pipeline "$work/log-post-fail" driftgate-post "${mr[@]}" "CI_COMMIT_SHA=$(git rev-parse HEAD)" ||
  { cat "$work/log-post-fail"; fail "the poster failed after a failing gate"; }
grep -q "updated note" "$work/log-post-fail" || { cat "$work/log-post-fail"; fail "the failing gate's note was not updated"; }
[[ -s out/junit.xml ]] || fail "no out/junit.xml for the MR widget"

# 4. Mixed runners: no stored baseline for this environment key; run-base builds one on the spot.
# driftgate-run-base is found beside the driftgate command, as the .deb installs them.
mkdir -p "$work/bin"
ln -s "$driftgate" "$work/bin/driftgate"
ln -s "$(dirname "$template")/../tools/driftgate-run-base.sh" "$work/bin/driftgate-run-base"
git checkout -q -b mixed-runner "$base"
cp "$work/perturbed.pt" models/tiny.pt
cat >.gitlab-ci.yml <<YAML
include:
  - local: templates/driftgate.yml
    inputs:
      driftgate: "$work/bin/driftgate"
      key: linux-cpu
      run_args: "--threads 2"
      on_missing_baseline: run-base
YAML
git commit -qam "retrain the first convolution, on a runner of another key"
if pipeline "$work/log-run-base" driftgate-gate "${mr[@]}" "CI_COMMIT_SHA=$(git rev-parse HEAD)"; then
  cat "$work/log-run-base"
  fail "run-base: the gate passed on a regressed model"
fi
grep -q "driftgate: FAIL" "$work/log-run-base" && grep -q "driftgate-gate finished in .* FAIL 1" "$work/log-run-base" ||
  { cat "$work/log-run-base"; fail "run-base: the gate did not fail with exit 1 (regression)"; }
grep -q "baseline built on the spot from merge base $base" "$work/log-run-base" &&
  grep -q "baseline built on the spot from merge base $base" out/report.json ||
  { cat "$work/log-run-base"; fail "run-base: the summary and report.json do not name the merge base $base"; }
[[ "$(git worktree list | wc -l)" == 1 ]] || { git worktree list; fail "run-base: a worktree was left behind"; }
echo "ok: mixed runner: run-base built the merge base's run on the spot and the regression failed the gate"
touch "$work/stop"
wait "$fake_pid"
fake_pid=""

python3 - "$work/summary.json" "$token" "$work"/log-* <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
logs = "".join(open(path).read() for path in sys.argv[3:])
problems = []
notes = summary["notes"]
if len(notes) != 1:
    problems.append(f"expected exactly 1 note on the MR, got {len(notes)}")
else:
    body = notes[0]["body"]
    if not body.startswith("<!-- driftgate-sticky project=314 key=linux-cpu -->"):
        problems.append("the note lacks the sticky marker")
    if "regressed" not in body.lower() or "tiny/noise" not in body:
        problems.append("the note does not name the regressed checks: " + body[:400])
states = [s["state"] for s in summary["statuses"]]
if states != ["success", "failed"]:
    problems.append(f"statuses: expected success then failed, got {states}")
if summary["violations"]:
    problems.append(f"violations: {summary['violations']}")
if sys.argv[2] in logs:
    problems.append("the token appears in a job log")
if problems:
    print("FAIL: " + "; ".join(problems))
    sys.exit(1)
print("ok: regressed MR: gate failed, one sticky note (updated), statuses success then failed, no violations")
PY

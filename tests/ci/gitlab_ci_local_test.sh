#!/usr/bin/env bash
# Runs the GitLab CI/CD component (templates/driftgate.yml) under gitlab-ci-local
# (npm, 4.50.0; shell executor) against the fake GitLab:
#   - its driftgate-post job (no checkout, the gate's artifacts only) posts twice and
#     must leave one note (with the trend folded in), two statuses in the job's own
#     pipeline (CI_PIPELINE_ID), no violation and no token in the job log;
#   - with a Reporter's token (the role docs/ci.md once prescribed), GitLab refuses the
#     commit status (403, lib/api/commit_statuses.rb; the fake refuses it too): the note is
#     still posted and the job still passes, with a warning naming the Developer role;
#   - driftgate's own .gitlab-ci.yml passes the schema check (push: baseline, MR: gate
#     and post);
#   - the component included twice with two keys and two job prefixes gives two gates
#     and two posters (one fixed job name would collapse them into one);
#   - on_missing_baseline reaches the gate of its include only and refuses a value not in
#     its options; pages: true adds PREFIX-pages on default-branch pushes (only to its
#     include), which publishes the baseline job's trend.html as public/index.html.
# Exit 77 (skipped) without gitlab-ci-local or rsync.
# Usage: gitlab_ci_local_test.sh DRIFTGATE FAKE_GITLAB TEMPLATE
set -euo pipefail
driftgate=$1 fake=$2 template=$3
for tool in gitlab-ci-local rsync git; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not found (npm install -g gitlab-ci-local@4.50.0; apt-get install rsync)"
    exit 77
  fi
done
token=glpat-ciLocalTestToken42
work=$(mktemp -d)
fake_pid=""
cleanup() {
  touch "$work/stop"
  [[ -n "$fake_pid" ]] && wait "$fake_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

sha=cccccccccccccccccccccccccccccccccccccccc
"$fake" "$work/url" "$work/stop" "$work/summary.json" developer "4242=$sha" &
fake_pid=$!
for _ in $(seq 100); do [[ -f "$work/url" ]] && break; sleep 0.1; done
[[ -f "$work/url" ]] || { echo "FAIL: the fake GitLab did not start"; exit 1; }
url=$(cat "$work/url")

project="$work/project"
mkdir -p "$project/templates" "$project/out"
cp "$template" "$project/templates/driftgate.yml"
cat > "$project/.gitlab-ci.yml" <<YAML
include:
  - local: templates/driftgate.yml
    inputs:
      driftgate: "$driftgate"
      key: linux-cpu
YAML
# gitlab-ci-local runs a job that names an image in Docker; this is a shell runner (as
# GitLab's shell executor, which ignores image:).
cat > "$project/.gitlab-ci-shell.yml" <<'YAML'
include:
  - local: .gitlab-ci.yml
driftgate-post: {image: null, needs: []}
YAML
# What driftgate-gate leaves as artifacts.
printf '| commit | pass rate |\n|:--|--:|\n| `aaaaaaa` | 100%% |\n' > "$project/out/trend.md"
cat > "$project/out/report.json" <<'JSON'
{"schema": 1, "verdict": "fail", "reason": "", "exit_code": 1,
 "run": {"sha": "cccccccccccccccccccccccccccccccccccccccc", "env_key": "e1"},
 "baseline": {"sha": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "env_key": "e1", "steps": 1, "start_sha": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
 "env_mismatch": false, "env_changes": "", "notes": [], "gated_classes": ["regressed"], "gated_present": ["regressed"],
 "counts": {"regressed": 1, "crashed": 0, "missing": 0, "drift_grew": 0, "new": 0, "fixed": 0, "unchanged": 0},
 "experiment_changes": [],
 "checks": [{"id": "m/@team/a~b/o", "experiment": "m", "class": "regressed", "gated": true, "status_before": "pass",
             "status_after": "fail_numeric", "max_abs_before": 1e-7, "max_abs_after": 0.25, "message": "", "notes": []}]}
JSON
(cd "$project" && git init -q && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm init)

run_pipeline() {
  (cd "$project" && timeout 120 gitlab-ci-local --file .gitlab-ci-shell.yml --json-schema-validation false \
    driftgate-post --variable CI_PIPELINE_SOURCE=merge_request_event \
    --variable "CI_API_V4_URL=$url" --variable CI_PROJECT_ID=314 --variable CI_MERGE_REQUEST_IID=9 \
    --variable CI_MERGE_REQUEST_TARGET_BRANCH_NAME=develop \
    --variable "CI_COMMIT_SHA=$sha" --variable CI_PIPELINE_ID=4242 --variable "DRIFTGATE_GITLAB_TOKEN=$token")
}
run_pipeline > "$work/log1" 2>&1 || { cat "$work/log1"; echo "FAIL: first pipeline"; exit 1; }
run_pipeline > "$work/log2" 2>&1 || { cat "$work/log2"; echo "FAIL: second pipeline"; exit 1; }
touch "$work/stop"
wait "$fake_pid"
fake_pid=""

python3 - "$work/summary.json" "$work/log1" "$work/log2" "$token" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
logs = open(sys.argv[2]).read() + open(sys.argv[3]).read()
problems = []
if len(summary["notes"]) != 1:
    problems.append(f"expected 1 note, got {len(summary['notes'])}")
elif not summary["notes"][0]["body"].startswith("<!-- driftgate-sticky project=314 key=linux-cpu -->"):
    problems.append("the note lacks the sticky marker")
elif "<details><summary>Trend on develop</summary>\n\n| commit | pass rate |" not in summary["notes"][0]["body"]:
    problems.append("the note lacks the trend (DRIFTGATE_TREND)")
if [s["state"] for s in summary["statuses"]] != ["failed", "failed"]:
    problems.append(f"statuses: {summary['statuses']}")
elif [(s.get("landed_in"), s.get("new_pipeline")) for s in summary["statuses"]] != [(4242, False)] * 2:
    problems.append(f"the statuses did not land in the job's pipeline 4242: {summary['statuses']}")
if summary["violations"]:
    problems.append(f"violations: {summary['violations']}")
if sys.argv[4] in logs:
    problems.append("the token appears in the job log")
if "created note" not in logs or "updated note" not in logs:
    problems.append("the job log does not show a create then an update")
if problems:
    print(logs)
    print("FAIL: " + "; ".join(problems))
    sys.exit(1)
print("gitlab-ci-local: template posted once, updated once; 2 statuses in the job's pipeline; no violations")
PY

# A Reporter's token: the note goes out, the status is refused (403), the job passes with a warning.
rm -f "$work/url" "$work/stop"
"$fake" "$work/url" "$work/stop" "$work/reporter.json" reporter &
fake_pid=$!
for _ in $(seq 100); do [[ -f "$work/url" ]] && break; sleep 0.1; done
[[ -f "$work/url" ]] || { echo "FAIL: the fake GitLab (reporter) did not start"; exit 1; }
url=$(cat "$work/url")
run_pipeline > "$work/log-reporter" 2>&1 || { cat "$work/log-reporter"; echo "FAIL: a Reporter's token failed the job"; exit 1; }
touch "$work/stop"
wait "$fake_pid"
fake_pid=""
python3 - "$work/reporter.json" "$work/log-reporter" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read()
problems = []
if len(summary["notes"]) != 1:
    problems.append(f"expected 1 note, got {len(summary['notes'])}")
if summary["statuses"]:
    problems.append(f"the fake accepted a Reporter's status: {summary['statuses']}")
if "warning: the commit status was refused" not in log or "Developer role" not in log:
    problems.append("the job log has no warning naming the Developer role")
if problems:
    print(log)
    print("FAIL: " + "; ".join(problems))
    sys.exit(1)
print("gitlab-ci-local: a Reporter's token posts the note, the status is refused with a warning, the job passes")
PY

# driftgate's own .gitlab-ci.yml includes the component with its inputs: it must pass
# the schema check, with the baseline job on pushes and the gate and poster on merge requests.
own="$work/own"
mkdir -p "$own/templates"
cp "$(dirname "$template")/../.gitlab-ci.yml" "$own/.gitlab-ci.yml"
cp "$template" "$own/templates/driftgate.yml"
(cd "$own" && git init -q -b main && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm init)
jobs_in() {  # jobs_in DIR PIPELINE_SOURCE: the job names of that pipeline, sorted
  (cd "$1" && gitlab-ci-local --list --variable "CI_PIPELINE_SOURCE=$2" --variable CI_DEFAULT_BRANCH=main \
    --variable CI_COMMIT_BRANCH=main 2>&1) | awk '$1 ~ /^(drift[a-z0-9-]*-(gate|post|baseline|pages|deb)|test)$/ {print $1}' |
    sort | tr '\n' ' '
}
for case in "push:driftgate-baseline driftgate-deb test" "merge_request_event:driftgate-deb driftgate-gate driftgate-post test"; do
  jobs=$(jobs_in "$own" "${case%%:*}")
  [[ "$jobs" == "${case#*:} " ]] || { echo "FAIL: .gitlab-ci.yml, ${case%%:*}: jobs '$jobs', expected '${case#*:}'"; exit 1; }
done
echo "gitlab-ci-local: .gitlab-ci.yml passes the schema check; push: deb and baseline, MR: deb, gate and post"

# Two keys, two prefixes: two gates, two posters, two baseline jobs.
double="$work/double"
mkdir -p "$double/templates"
cp "$template" "$double/templates/driftgate.yml"
cat > "$double/.gitlab-ci.yml" <<'YAML'
include:
  - local: templates/driftgate.yml
    inputs:
      job_prefix: drift-cpu
      key: linux-cpu
      on_missing_baseline: run-base
      pages: true
  - local: templates/driftgate.yml
    inputs:
      job_prefix: drift-bf16
      key: linux-bf16
YAML
(cd "$double" && git init -q -b main && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm init)
expected="drift-bf16-gate drift-bf16-post drift-cpu-gate drift-cpu-post "
[[ "$(jobs_in "$double" merge_request_event)" == "$expected" ]] ||
  { echo "FAIL: double include, MR: jobs '$(jobs_in "$double" merge_request_event)', expected '$expected'"; exit 1; }
expected="drift-bf16-baseline drift-cpu-baseline drift-cpu-pages "
[[ "$(jobs_in "$double" push)" == "$expected" ]] ||
  { echo "FAIL: double include, push: jobs '$(jobs_in "$double" push)', expected '$expected'"; exit 1; }
(cd "$double" && gitlab-ci-local --preview --variable CI_PIPELINE_SOURCE=merge_request_event 2>/dev/null) |
  grep -v '^ WARN' >"$work/preview.yml"
python3 - "$work/preview.yml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if isinstance(d, dict)]
jobs = {k: v for d in docs for k, v in d.items()}
keys = {name: jobs[name].get("variables", {}).get("DRIFTGATE_KEY") for name in ("drift-cpu-post", "drift-bf16-post")}
if keys != {"drift-cpu-post": "linux-cpu", "drift-bf16-post": "linux-bf16"}:
    sys.exit(f"FAIL: double include: the posters' keys are {keys}")
policy = {name: jobs[name].get("variables", {}).get("DRIFTGATE_ON_MISSING_BASELINE") for name in ("drift-cpu-gate", "drift-bf16-gate")}
if policy != {"drift-cpu-gate": "run-base", "drift-bf16-gate": "neutral"}:
    sys.exit(f"FAIL: double include: on_missing_baseline reaches the gates as {policy}")
script = "\n".join(jobs["drift-cpu-gate"]["script"])
if "driftgate-run-base\" diff out/run.jsonl --on-missing-baseline run-base" not in script.replace("$run_base", "driftgate-run-base"):
    sys.exit("FAIL: the gate does not call driftgate-run-base diff for run-base")
PY
echo "gitlab-ci-local: the component included twice gives two gates and two posters, one key each"

# on_missing_baseline is typed: a value outside its options is refused before any job runs.
sed -i 's/on_missing_baseline: run-base/on_missing_baseline: sometimes/' "$double/.gitlab-ci.yml"
if (cd "$double" && gitlab-ci-local --list --variable CI_PIPELINE_SOURCE=push >"$work/bad-input.log" 2>&1); then
  cat "$work/bad-input.log"; echo "FAIL: on_missing_baseline: sometimes was accepted"; exit 1; fi
grep -q "not in the list of allowed options" "$work/bad-input.log" ||
  { cat "$work/bad-input.log"; echo "FAIL: on_missing_baseline: sometimes: no options error"; exit 1; }
sed -i 's/on_missing_baseline: sometimes/on_missing_baseline: run-base/' "$double/.gitlab-ci.yml"

# pages: true: drift-cpu-pages publishes the baseline job's trend.html (here a stand-in) as the
# site's index and trend.html, in the public/ artifact GitLab Pages deploys.
mkdir -p "$double/out"
printf '<html>trend of main %s</html>\n' "$RANDOM" >"$double/out/trend.html"
printf 'include:\n  - local: .gitlab-ci.yml\ndrift-cpu-pages: {image: null, needs: []}\n' >"$double/.gitlab-ci-shell.yml"
(cd "$double" && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm trend)
(cd "$double" && timeout 120 gitlab-ci-local --file .gitlab-ci-shell.yml --json-schema-validation false drift-cpu-pages \
  --variable CI_PIPELINE_SOURCE=push --variable CI_DEFAULT_BRANCH=main --variable CI_COMMIT_BRANCH=main) \
  >"$work/pages.log" 2>&1 || { cat "$work/pages.log"; echo "FAIL: the pages job"; exit 1; }
for file in index.html trend.html; do
  cmp -s "$double/out/trend.html" "$double/.gitlab-ci-local/artifacts/drift-cpu-pages/public/$file" ||
    { cat "$work/pages.log"; echo "FAIL: the pages artifact's public/$file is not the trend report"; exit 1; }
done
echo "gitlab-ci-local: on_missing_baseline reaches its gate only and is typed; pages publishes trend.html"

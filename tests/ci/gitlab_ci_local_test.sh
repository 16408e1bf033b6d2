#!/usr/bin/env bash
# Runs the GitLab CI template (ci/driftgate.gitlab-ci.yml) under gitlab-ci-local
# (npm, 4.50.0; shell executor) against the fake GitLab: a job extending
# .driftgate-post posts twice and must leave one note (with the trend folded in), two statuses, no violation
# and no token in the job log. Exit 77 (skipped) without gitlab-ci-local or rsync.
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

"$fake" "$work/url" "$work/stop" "$work/summary.json" &
fake_pid=$!
for _ in $(seq 100); do [[ -f "$work/url" ]] && break; sleep 0.1; done
[[ -f "$work/url" ]] || { echo "FAIL: the fake GitLab did not start"; exit 1; }
url=$(cat "$work/url")

project="$work/project"
mkdir -p "$project/ci"
cp "$template" "$project/ci/driftgate.gitlab-ci.yml"
cat > "$project/.gitlab-ci.yml" <<YAML
include:
  - local: ci/driftgate.gitlab-ci.yml
post:
  extends: .driftgate-post
  variables:
    DRIFTGATE: "$driftgate"
    DRIFTGATE_REPORT: report.json
    DRIFTGATE_TREND: trend.md
    DRIFTGATE_KEY: linux-cpu
YAML
printf '| commit | pass rate |\n|:--|--:|\n| `aaaaaaa` | 100%% |\n' > "$project/trend.md"
cat > "$project/report.json" <<'JSON'
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
  (cd "$project" && timeout 120 gitlab-ci-local post \
    --variable "CI_API_V4_URL=$url" --variable CI_PROJECT_ID=314 --variable CI_MERGE_REQUEST_IID=9 \
    --variable CI_MERGE_REQUEST_TARGET_BRANCH_NAME=develop \
    --variable CI_COMMIT_SHA=cccccccccccccccccccccccccccccccccccccccc --variable "DRIFTGATE_GITLAB_TOKEN=$token")
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
print("gitlab-ci-local: template posted once, updated once; 2 statuses; no violations")
PY

# driftgate's own .gitlab-ci.yml includes the template with its inputs: it must pass
# the schema check, with the baseline job on pushes and the gate on merge requests.
own="$work/own"
mkdir -p "$own/ci"
cp "$(dirname "$template")/../.gitlab-ci.yml" "$own/.gitlab-ci.yml"
cp "$template" "$own/ci/driftgate.gitlab-ci.yml"
(cd "$own" && git init -q -b main && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm init)
for case in "push:driftgate-baseline test" "merge_request_event:driftgate-gate test"; do
  jobs=$(cd "$own" && gitlab-ci-local --list --variable "CI_PIPELINE_SOURCE=${case%%:*}" 2>&1 |
    awk '$1 ~ /^(driftgate-|test$)/ {print $1}' | sort | tr '\n' ' ')
  [[ "$jobs" == "${case#*:} " ]] || { echo "FAIL: .gitlab-ci.yml, ${case%%:*}: jobs '$jobs', expected '${case#*:}'"; exit 1; }
done
echo "gitlab-ci-local: .gitlab-ci.yml passes the schema check; push: baseline, MR: gate"

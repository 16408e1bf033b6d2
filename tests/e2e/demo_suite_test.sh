#!/usr/bin/env bash
# tools/demo-suite.sh, the demo's suite gate (tools/demo.sh step 2), on a machine whose environment
# key has no committed baseline: a clone of this repository's committed history, its suite cut to
# configs/digits_cnn.yaml and run with --threads 2 (threads enter the key; the committed baselines
# were run with --threads 1), so the key differs on any CPU. The gate must not be neutral: it runs
# the committed baseline's commit in a worktree on this machine (run-base) and (a) passes the
# unchanged suite, naming that commit, (b) fails a commit that drops a target (missing checks).
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"

# json_get FILE EXPR: a Python expression over the parsed report (r), printed.
json_get() { /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
expect_equal() {
  checks=$((checks + 1))
  if [[ "$1" != "$2" ]]; then failures=$((failures + 1)); echo "FAIL: $3: '$1', expected '$2'"; return 1; fi
  echo "ok: $3"
}

clone=$work/clone
git clone -q "$root" "$clone" || exit 1
cd "$clone" || exit 1
git config user.name 'E2E Tester' && git config user.email e2e@example.invalid
# The scripts under test as they are in the tree (committed in the clone: its checkout stays clean).
cp "$root/tools/demo-suite.sh" "$root/tools/driftgate-run-base.sh" tools/
git add tools && { git diff --cached --quiet || git commit -qm "the demo scripts under test"; } || exit 1
# models/ as tools/prepare-demo.sh leaves it: the digits models and the exporters' stamp.
/usr/bin/python3 tools/export_models.py digits --out models >/dev/null || exit 1
/usr/bin/python3 - <<'EOF' || exit 1
import hashlib
data = b"".join(open(f"tools/{name}.py", "rb").read() for name in ("export_models", "export_detection", "export_digits"))
open("models/.exporter-stamp", "w").write(hashlib.sha1(data).hexdigest() + "\n")
EOF

# The commit the base is built from: the newest committed baseline's commit on HEAD's history.
base=$(/usr/bin/python3 - <<'EOF'
import glob, json, subprocess
best = None
for path in glob.glob("baselines/*/*.jsonl"):
    sha = json.loads(open(path).readline())["commit"]["sha"]
    if subprocess.run(["git", "merge-base", "--is-ancestor", sha, "HEAD"], capture_output=True).returncode:
        continue
    distance = int(subprocess.run(["git", "rev-list", "--count", f"{sha}..HEAD"], capture_output=True, text=True).stdout)
    if best is None or distance < best[0]:
        best = (distance, sha)
print(best[1] if best else subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip())
EOF
)
export DEMO_CONFIGS=configs/digits_cnn.yaml DEMO_RUN_ARGS='--threads 2'

# (a) the unchanged suite.
expect_exit 0 "(a) the suite's gate passes on a key with no committed baseline" -- \
  bash tools/demo-suite.sh "$DRIFTGATE" "$work/a"
expect_contains "$work/stdout" "gate verdict on the suite: PASS" "(a) the verdict is PASS, not neutral"
run_key=$(head -1 "$work/a/run.jsonl" | /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['env_key'])")
checks=$((checks + 1))
if [[ -n $run_key && ! -d baselines/$run_key ]]; then echo "ok: (a) no committed baseline has the run's key $run_key"; else
  failures=$((failures + 1)); echo "FAIL: (a) the run's key '$run_key' has a committed baseline: the test needs none"; fi
expect_equal "$(json_get "$work/a/report.json" 'r["verdict"]')" pass "(a) report.json: verdict pass"
expect_equal "$(json_get "$work/a/report.json" 'r["baseline"]["sha"]')" "$base" "(a) the baseline is the committed baseline's commit"
expect_equal "$(json_get "$work/a/report.json" 'r["baseline"]["env_key"]')" "$run_key" "(a) built in the run's environment"
expect_equal "$(json_get "$work/a/report.json" 'sum(r["counts"].values())')" "$(grep -c '"type":"check"' "$work/a/run.jsonl")" \
  "(a) every check of the run was compared"
expect_contains "$work/a/summary.md" "baseline built on the spot from merge base $base" "(a) the summary names the commit"
expect_equal "$(git worktree list | wc -l)" 1 "(a) no worktree is left behind"
expect_equal "$(git status --porcelain)" "" "(a) the checkout is untouched"

# (b) a commit that drops the frozen target: its checks go missing, which the gate fails.
sed -i 's/targets: \[onednn_off, channels_last, frozen, cpu_bf16\]/targets: [onednn_off, channels_last, cpu_bf16]/' \
  configs/digits_cnn.yaml
expect_equal "$(git diff --numstat configs/digits_cnn.yaml | cut -f1)" 1 "(b) the config changed"
git commit -qam "Drop the frozen target" || exit 1
expect_exit 1 "(b) the suite's gate fails a commit that drops a target" -- bash tools/demo-suite.sh "$DRIFTGATE" "$work/b"
expect_contains "$work/stdout" "gate verdict on the suite: FAIL" "(b) the verdict is FAIL"
expect_equal "$(json_get "$work/b/report.json" 'r["verdict"]')" fail "(b) report.json: verdict fail"
expect_equal "$(json_get "$work/b/report.json" 'r["counts"].get("missing", 0) > 0')" True "(b) the dropped checks are missing"
expect_equal "$(json_get "$work/b/report.json" 'all("~frozen/" in c["id"] for c in r["checks"] if c["class"] == "missing")')" \
  True "(b) only the frozen target's checks are missing"
expect_equal "$(git worktree list | wc -l)" 1 "(b) no worktree is left behind"

expect_exit 2 "bad use exits 2" -- bash tools/demo-suite.sh "$DRIFTGATE"
finish

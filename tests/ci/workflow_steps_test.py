"""Runs the shell steps and evaluates the `if:` conditions of driftgate's workflows and
composite action as GitHub would, on inputs where the old versions went wrong:
- driftgate.yml's Verdict step reads every verdict of report.json (no_baseline included);
  its Pages job runs only for a refresh asking for it and publishes trend.html as index.html;
  on-missing-baseline: run-base builds each shard's merge-base run (driftgate-run-base
  build-base), merges those shards and diffs through driftgate-run-base; neutral diffs as
  before; any other value is refused by the plan job;
- driftgate-post.yml posts only for gate runs that concluded success or failure (not
  action_required, skipped, cancelled, timed_out);
- action.yml's package cache key changes with tasks/ (compiled into the package);
  a deb-url download is installed only when its SHA-256 matches deb-sha256; the poster
  restores the cache but never saves into the default branch's scope;
- release.yml's SHA256SUMS lists every package with its SHA-256; its matrix builds for Debian 12
  and 13 and names each file _debian<N>_amd64.deb;
- the action's and the GitLab component's release installs take the package of the runner's
  Debian release (os-release: 12 or 13) and refuse any other system (Ubuntu, Debian 11, no
  os-release) with exit 2 before anything is downloaded;
- the reusable workflows check out the driftgate commit the caller's uses: line pins.
The expression evaluator covers the forms these files use (==, !=, &&, ||, !, contains,
fromJSON, literals, context paths); an unknown form fails the test instead of guessing.
Usage: workflow_steps_test.py REPO_ROOT   (exit 1 on any failure)
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

failures = []


def check(name, condition, detail=""):
    if not condition:
        failures.append(f"FAIL: {name} {detail}")


def load(path):
    with open(path) as f:
        document = yaml.safe_load(f)
    if True in document:
        document["on"] = document.pop(True)
    return document


def step(steps, name):
    for candidate in steps:
        if candidate.get("name") == name:
            return candidate
    raise SystemExit(f"FAIL: no step named {name!r}")


# --- a small evaluator of GitHub expressions -------------------------------------
TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+)|(?P<op>==|!=|&&|\|\||!|\(|\)|,)|"
                   r"(?P<word>[A-Za-z_][\w.-]*))")


def tokens(text):
    at, found = 0, []
    text = text.strip()
    while at < len(text):
        match = TOKEN.match(text, at)
        if not match or match.end() == at:
            raise ValueError(f"cannot read expression at {text[at:]!r}")
        kind = match.lastgroup
        found.append((kind, match.group(kind)))
        at = match.end()
    return found


def lookup(context, path):
    value = context
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def evaluate(text, context):
    items = tokens(text[3:-2] if text.strip().startswith("${{") else text)
    position = [0]

    def peek():
        return items[position[0]] if position[0] < len(items) else (None, None)

    def take(expected=None):
        item = peek()
        if expected is not None and item[1] != expected:
            raise ValueError(f"expected {expected!r}, found {item[1]!r} in {text!r}")
        position[0] += 1
        return item

    def primary():
        kind, value = take()
        if value == "(":
            result = disjunction()
            take(")")
            return result
        if value == "!":
            return not truthy(primary())
        if kind == "str":
            return value[1:-1].replace("''", "'")
        if kind == "num":
            return int(value)
        if kind == "word" and value in ("true", "false"):
            return value == "true"
        if kind == "word" and peek()[1] == "(":
            take("(")
            args = [disjunction()]
            while peek()[1] == ",":
                take(",")
                args.append(disjunction())
            take(")")
            if value == "fromJSON":
                return json.loads(args[0])
            if value == "contains":
                haystack, needle = args
                if isinstance(haystack, list):
                    return needle in haystack
                return str(needle).lower() in str(haystack).lower()
            raise ValueError(f"function {value} not supported")
        if kind == "word":
            return lookup(context, value)
        raise ValueError(f"unexpected {value!r} in {text!r}")

    def comparison():
        left = primary()
        while peek()[1] in ("==", "!="):
            op = take()[1]
            right = primary()
            equal = (str(left).lower() == str(right).lower()) if isinstance(left, str) and isinstance(right, str) \
                else left == right
            left = equal if op == "==" else not equal
        return left

    def conjunction():
        left = comparison()
        while peek()[1] == "&&":
            take()
            right = comparison()
            left = left if not truthy(left) else right
        return left

    def disjunction():
        left = conjunction()
        while peek()[1] == "||":
            take()
            right = conjunction()
            left = left if truthy(left) else right
        return left

    result = disjunction()
    if position[0] != len(items):
        raise ValueError(f"trailing tokens in {text!r}")
    return truthy(result)


def truthy(value):
    return value not in (None, False, 0, "")


def run_step(script, env, cwd, pipefail=False):
    """Runs a step as GitHub does: a workflow `run:` with no `shell:` under `bash -e {0}`; a
    `shell: bash` step (the composite action's) under `bash --noprofile --norc -eo pipefail {0}`
    (GitHub docs, "Workflow syntax: jobs.<job_id>.steps[*].shell"). The GitLab component's
    install script is held to pipefail too: it must work whether or not the runner's shell sets it."""
    full_env = dict(os.environ)
    full_env.update(env)
    flags = ["-e", "-o", "pipefail"] if pipefail else ["-e"]
    return subprocess.run(["bash", "--noprofile", "--norc"] + flags + ["-c", script], env=full_env, cwd=cwd,
                          capture_output=True, text=True)


def run_action_step(script, env, cwd):
    return run_step(script, env, cwd, pipefail=True)


def outputs(path):
    found = {}
    if os.path.exists(path):
        for line in open(path):
            if "=" in line:
                key, value = line.rstrip("\n").split("=", 1)
                found[key] = value
    return found


# os-release files as Debian and Ubuntu ship them (os-release(5)), for DRIFTGATE_OS_RELEASE.
OS_RELEASES = {
    "debian12": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
                'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n',
    "debian13": 'PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nNAME="Debian GNU/Linux"\nVERSION_ID="13"\n'
                'VERSION="13 (trixie)"\nVERSION_CODENAME=trixie\nDEBIAN_VERSION_FULL=13.8\nID=debian\n',
    "debian11": 'PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nNAME="Debian GNU/Linux"\nVERSION_ID="11"\n'
                'VERSION="11 (bullseye)"\nVERSION_CODENAME=bullseye\nID=debian\n',
    "ubuntu24": 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
                'VERSION="24.04.1 LTS (Noble Numbat)"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n',
    "sid": 'PRETTY_NAME="Debian GNU/Linux forky/sid"\nNAME="Debian GNU/Linux"\nVERSION_CODENAME=forky\nID=debian\n',
}
# What the refusal must name: (what was found, ...) per unsupported case; None: no os-release file.
UNSUPPORTED = {"ubuntu24": ("ubuntu", "24.04"), "debian11": ("debian", "11"), "sid": ("debian",),
               "missing": None}


def main():
    root = sys.argv[1]
    work = tempfile.mkdtemp(prefix="driftgate-wf-steps.")
    try:
        os.makedirs(os.path.join(work, "os-release"))
        for name, content in OS_RELEASES.items():
            with open(os.path.join(work, "os-release", name), "w") as f:
                f.write(content)

        def os_release(name):
            return os.path.join(work, "os-release", name)  # "missing" names no file

        def refusal_names_both(log, case):
            """The refusal says what was found and what is supported."""
            found = UNSUPPORTED[case]
            named = ("no " + os_release(case) in log) if found is None else all(part in log for part in found)
            return named and "Debian 12 (libtorch 1.13)" in log and "Debian 13 (libtorch 2.6)" in log

        # 1. The Verdict step of driftgate.yml, on each verdict driftgate diff writes.
        gate = load(os.path.join(root, ".github/workflows/driftgate.yml"))
        verdict = step(gate["jobs"]["gate"]["steps"], "Verdict")
        for written in ("pass", "fail", "no_baseline", None):
            os.makedirs(os.path.join(work, "out"), exist_ok=True)
            report = os.path.join(work, "out", "report.json")
            if written is None:
                if os.path.exists(report):
                    os.remove(report)
            else:
                # As differ/json_report.cc writes it (nlohmann dump, indent 2).
                with open(report, "w") as f:
                    json.dump({"schema": 1, "verdict": written, "reason": "", "checks": []}, f, indent=2)
            out_file = os.path.join(work, "github_output")
            open(out_file, "w").close()
            result = run_step(verdict["run"], {"MODE": "gate", "KEY": "k", "GITHUB_OUTPUT": out_file}, work)
            check("verdict step runs", result.returncode == 0, result.stderr)
            expected = written or "error"
            check(f"verdict output for {written}", outputs(out_file).get("verdict") == expected,
                  f"got {outputs(out_file)}")

        # 1b. GitHub Pages: only a refresh that asks for it publishes, and it publishes trend.html
        # as the site's index.
        pages = gate["jobs"]["pages"]
        for mode, wanted, expected in (("refresh", True, True), ("refresh", False, False), ("gate", True, False)):
            check(f"pages job for mode {mode}, pages {wanted}",
                  evaluate(pages["if"], {"inputs": {"mode": mode, "pages": wanted}}) == expected, pages["if"])
        site = os.path.join(work, "site")
        os.makedirs(site)
        with open(os.path.join(site, "trend.html"), "w") as f:
            f.write("<html>trend</html>")
        index_step = step(pages["steps"], "The trend report is the index")
        result = run_step(index_step["run"], {}, work)
        check("trend.html becomes index.html", result.returncode == 0 and
              open(os.path.join(site, "index.html")).read() == "<html>trend</html>", result.stderr)
        os.remove(os.path.join(site, "trend.html"))
        check("no trend.html: nothing published", run_step(index_step["run"], {}, work).returncode != 0)

        # 1c. on-missing-baseline: run-base, with stand-ins for driftgate and driftgate-run-base
        # that record their arguments (the real ones: tests/e2e/run_base_test.sh).
        bin_dir = os.path.join(work, "bin")
        os.makedirs(bin_dir)
        calls = os.path.join(work, "calls")
        for name in ("driftgate", "driftgate-run-base"):
            with open(os.path.join(bin_dir, name), "w") as f:
                f.write(f'#!/bin/bash\nprintf "%s" "{name}" >>"{calls}"; printf " [%s]" "$@" >>"{calls}"; echo >>"{calls}"\n'
                        'exit "${STUB_EXIT:-0}"\n')
            os.chmod(os.path.join(bin_dir, name), 0o755)
        stub_env = {"PATH": bin_dir + os.pathsep + os.environ["PATH"]}

        def recorded():
            found = open(calls).read().splitlines() if os.path.exists(calls) else []
            if os.path.exists(calls):
                os.remove(calls)
            return found

        plan_step = step(gate["jobs"]["plan"]["steps"], "Check the inputs and list the shards")
        for policy, ok in (("neutral", True), ("run-base", True), ("sometimes", False), ("", False)):
            out_file = os.path.join(work, "plan_output")
            open(out_file, "w").close()
            result = run_step(plan_step["run"], {"MODE": "gate", "SHARDS": "1", "LIBTORCH": "debian",
                                                 "ON_MISSING_BASELINE": policy, "GITHUB_OUTPUT": out_file}, work)
            check(f"plan with on-missing-baseline '{policy}'", (result.returncode == 0) == ok, result.stdout)
            if not ok:
                check(f"plan names the choices for '{policy}'", "use neutral or run-base" in result.stdout, result.stdout)
        check("plan passes on-missing-baseline", plan_step["env"].get("ON_MISSING_BASELINE") ==
              "${{ inputs.on-missing-baseline }}", str(plan_step["env"]))
        check("on-missing-baseline defaults to neutral",
              gate["on"]["workflow_call"]["inputs"]["on-missing-baseline"]["default"] == "neutral")

        base_step = step(gate["jobs"]["run"]["steps"],
                         "Run the merge base's shard where no stored baseline matches (run-base)")
        for mode, policy, expected in (("gate", "run-base", True), ("gate", "neutral", False),
                                       ("refresh", "run-base", False)):
            check(f"base shard step for mode {mode}, {policy}",
                  evaluate(base_step["if"], {"inputs": {"mode": mode, "on-missing-baseline": policy}}) == expected,
                  base_step["if"])
        check("the base shard step gets the PR's base SHA",
              base_step["env"].get("DRIFTGATE_BASE_SHA") == "${{ github.event.pull_request.base.sha }}", str(base_step["env"]))
        result = run_step(base_step["run"], dict(stub_env, CONFIGS="configs/*.yaml", RUN_ARGS="--threads 1",
                                                 PREPARE="make models", STORE="baselines", SHARD="1/2", INDEX="1"), work)
        check("base shard step runs", result.returncode == 0, result.stderr)
        check("base shard step calls driftgate-run-base build-base for its shard", recorded() == [
            "driftgate-run-base [build-base] [--if-no-baseline] [out/run-1.jsonl] [--store] [baselines] [--configs] "
            "[configs/*.yaml] [--run-args] [--threads 1 --shard 1/2] [--prepare] [make models] [-o] [out/base-1.jsonl]"])
        upload = [s for s in gate["jobs"]["run"]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
        check("the shard artifact carries the base shard",
              len(upload) == 1 and "out/base-${{ matrix.shard }}.jsonl" in upload[0]["with"]["path"], str(upload))
        # Every file the gate's printed accept commands name travels in the report artifact:
        # `baseline accept GLOB --run out/run.jsonl`, `--proposal out/baseline-proposal.jsonl`,
        # and run-base's `baseline update out/base-run.jsonl`.
        report_upload = [s for s in gate["jobs"]["gate"]["steps"]
                         if str(s.get("uses", "")).startswith("actions/upload-artifact")
                         and "report" in str(s.get("with", {}).get("name", ""))]
        report_paths = report_upload[0]["with"]["path"].split() if len(report_upload) == 1 else []
        for needed in ("out/run.jsonl", "out/baseline-proposal.jsonl", "out/base-run.jsonl", "out/report.json"):
            check("the report artifact carries " + needed, needed in report_paths, str(report_upload))

        shards = os.path.join(work, "out", "shards")
        os.makedirs(shards, exist_ok=True)
        merge_step = step(gate["jobs"]["gate"]["steps"], "Merge the shards")
        diff_step = step(gate["jobs"]["gate"]["steps"], "Diff with the baseline of the merge base (the gate)")
        for name in ("run-0.jsonl", "run-1.jsonl"):
            open(os.path.join(shards, name), "w").close()
        check("merge without base shards", run_step(merge_step["run"], stub_env, work).returncode == 0)
        check("merge without base shards merges the run only", recorded() == [
            "driftgate [merge] [out/shards/run-0.jsonl] [out/shards/run-1.jsonl] [-o] [out/run.jsonl]"])
        for name in ("base-0.jsonl", "base-1.jsonl"):
            open(os.path.join(shards, name), "w").close()
        check("merge with base shards", run_step(merge_step["run"], stub_env, work).returncode == 0)
        check("merge with base shards merges both", recorded() == [
            "driftgate [merge] [out/shards/run-0.jsonl] [out/shards/run-1.jsonl] [-o] [out/run.jsonl]",
            "driftgate [merge] [out/shards/base-0.jsonl] [out/shards/base-1.jsonl] [-o] [out/base-run.jsonl]"])
        check("the diff step gets the PR's base SHA",
              diff_step["env"].get("DRIFTGATE_BASE_SHA") == "${{ github.event.pull_request.base.sha }}", str(diff_step["env"]))
        open(os.path.join(work, "out", "base-run.jsonl"), "w").close()
        for policy, base_run, stub_exit in (("run-base", True, "1"), ("run-base", False, "0"), ("neutral", True, "1")):
            if not base_run:
                os.remove(os.path.join(work, "out", "base-run.jsonl"))
            out_file = os.path.join(work, "diff_output")
            open(out_file, "w").close()
            result = run_step(diff_step["run"], dict(stub_env, STORE="baselines", POLICY="", STUB_EXIT=stub_exit,
                                                     ON_MISSING_BASELINE=policy, GITHUB_OUTPUT=out_file), work)
            check(f"diff step ({policy}, base run {base_run}) runs", result.returncode == 0, result.stderr)
            check(f"diff step ({policy}, base run {base_run}) keeps the exit code",
                  outputs(out_file).get("exit") == stub_exit, str(outputs(out_file)))
            tail = "[--report] [out/report.json] [--markdown] [out/summary.md] [--junit] [out/junit.xml]"
            if policy == "neutral":
                want = "driftgate [diff] [out/run.jsonl] [--store] [baselines] " + tail
            else:
                want = ("driftgate-run-base [diff] [out/run.jsonl] [--on-missing-baseline] [run-base] [--store] [baselines] " +
                        ("[--base-run] [out/base-run.jsonl] " if base_run else "") + "[--] " + tail)
            got = recorded()
            check(f"diff step ({policy}, base run {base_run}) calls", got == [want], f"got {got}, want {want}")

        # 2. The poster runs for gate runs that ran to the end, and only for pull requests.
        post = load(os.path.join(root, ".github/workflows/driftgate-post.yml"))
        condition = post["jobs"]["post"]["if"]
        for conclusion, expected in (("success", True), ("failure", True), ("action_required", False),
                                     ("skipped", False), ("cancelled", False), ("timed_out", False),
                                     ("neutral", False), ("stale", False), (None, False)):
            context = {"github": {"event_name": "workflow_run",
                                  "event": {"workflow_run": {"event": "pull_request", "conclusion": conclusion}}}}
            check(f"poster for a {conclusion} gate run", evaluate(condition, context) == expected, condition)
        context = {"github": {"event_name": "workflow_run",
                              "event": {"workflow_run": {"event": "push", "conclusion": "success"}}}}
        check("poster for a push run", not evaluate(condition, context), condition)
        # workflow_run matches the gate by name; the poster also checks its file (post --gate-workflow),
        # by default the file docs/ci.md names the consumer's gate.
        post_step = step(post["jobs"]["post"]["steps"], "Post the sticky comment, status and check run")
        check("the poster passes --gate-workflow", '--gate-workflow "$GATE_WORKFLOW"' in post_step["run"] and
              post_step["env"].get("GATE_WORKFLOW") == "${{ inputs.gate-workflow }}", post_step["run"])
        check("gate-workflow defaults to the consumer's gate file",
              post["on"]["workflow_call"]["inputs"]["gate-workflow"]["default"] == ".github/workflows/drift-gate.yml")
        own_post = load(os.path.join(root, ".github/workflows/drift-post.yml"))
        check("driftgate's own gate is .github/workflows/drift-gate.yml, the default",
              os.path.exists(os.path.join(root, ".github/workflows/drift-gate.yml")) and
              "gate-workflow" not in (own_post["jobs"]["post"].get("with") or {}))

        # 3. The poster restores the package but never saves it: a workflow_run job writes
        # the default branch's cache scope, which every pull request reads.
        install = [s for s in post["jobs"]["post"]["steps"] if s.get("uses") == "./.driftgate-src"]
        check("poster installs with the action", len(install) == 1)
        action = load(os.path.join(root, "action.yml"))
        steps = action["runs"]["steps"]
        inputs = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
        for s in install:
            inputs.update({k: str(v) for k, v in (s.get("with") or {}).items()})
        saves = [s for s in steps if str(s.get("uses", "")).startswith("actions/cache")
                 and "/restore@" not in s["uses"]]
        check("the action saves through actions/cache/save only", all("/save@" in s["uses"] for s in saves),
              str([s["uses"] for s in saves]))
        for s in saves:
            # Only a source build (the choose step's answer) has anything to save.
            ctx = {"inputs": inputs, "steps": {"cache": {"outputs": {"cache-hit": "false"}},
                                               "choose": {"outputs": {"how": "source"}}}}
            check("the poster's cache miss saves nothing", not evaluate(s["if"], ctx), s["if"])
            ctx["inputs"] = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
            ctx["steps"]["choose"]["outputs"]["how"] = "release"
            check("a release install builds nothing, so saves nothing", not evaluate(s["if"], ctx), s["if"])
            ctx["steps"]["choose"]["outputs"]["how"] = "source"
            check("a gate job's cache miss saves the package", evaluate(s["if"], ctx), s["if"])

        # 4. The cache key covers tasks/ (compiled into the package).
        key_step = step(steps, "Compute the package's cache key")
        source = os.path.join(work, "source")
        os.makedirs(source)
        for part in ("CMakeLists.txt", "cmake", "core", "differ", "ci", "runner", "app", "tasks", "tools"):
            src = os.path.join(root, part)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(source, part))

        def cache_key():
            out_file = os.path.join(work, "key_output")
            open(out_file, "w").close()
            result = run_action_step(key_step["run"], {"TORCH": "false", "LIBTORCH": "debian", "INSTALL": "source", "SOURCE": source,
                                                "DEB_URL": "", "DRIFTGATE_OS_RELEASE": os_release("debian12"),
                                                "GITHUB_OUTPUT": out_file, "RUNNER_TEMP": work}, work)
            check("key step runs", result.returncode == 0, result.stderr)
            return outputs(out_file).get("key")

        before = cache_key()
        task_files = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(source, "tasks")) for f in fs)
        with open(task_files[0], "a") as f:
            f.write("\n// changed\n")
        check("a change under tasks/ changes the cache key", cache_key() != before, before)

        # 5. A deb-url download is installed only with a matching deb-sha256.
        download = step(steps, "Download the package")
        deb = os.path.join(work, "driftgate_0.0.0_amd64.deb")
        with open(deb, "wb") as f:
            f.write(b"!<arch>\nnot really a package\n")
        digest = hashlib.sha256(open(deb, "rb").read()).hexdigest()
        for given, ok in ((digest, True), ("0" * 64, False), ("", False), (digest.upper(), False)):
            out = os.path.join(work, f"deb-{given[:4] or 'none'}")
            result = run_action_step(download["run"], {"URL": "file://" + deb, "SHA256": given, "OUT": out}, work)
            installed = os.path.exists(os.path.join(out, "driftgate.deb"))
            check(f"deb-sha256 {given[:8] or '(none)'}", (result.returncode == 0) == ok and installed == ok,
                  f"exit {result.returncode}, installed {installed}: {result.stdout}{result.stderr}")
            if not ok:
                check("a refused download leaves no file", not os.path.exists(os.path.join(out, "download.part")))

        # 6. A release install (the choose step's answer) downloads the release's .deb and installs
        # it only when it matches the release's SHA256SUMS.
        fetch = step(steps, "Download the release's package")
        defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
        check("install: auto is the default", defaults["install"] == "auto", str(defaults["install"]))
        chose = {how: {"inputs": defaults, "steps": {"cache": {"outputs": {}}, "choose": {"outputs": {"how": how}}}}
                 for how in ("release", "source", "deb-url")}
        check("a release install downloads the release", evaluate(fetch["if"], chose["release"]), fetch["if"])
        check("a source install downloads no release", not evaluate(fetch["if"], chose["source"]), fetch["if"])
        for name in ("Restore the package", "Build the package (cache miss only)"):
            check(f"a release install skips '{name}'", not evaluate(step(steps, name)["if"], chose["release"]))
            check(f"a source install runs '{name}'", evaluate(step(steps, name)["if"], chose["source"]))
            check(f"a deb-url install skips '{name}'", not evaluate(step(steps, name)["if"], chose["deb-url"]))
        mirror = os.path.join(work, "mirror")
        os.makedirs(os.path.join(mirror, "v9.9.9"))
        package = b"!<arch>\nthe notorch package\n"
        file = "driftgate-notorch_9.9.9_debian12_amd64.deb"
        with open(os.path.join(mirror, "v9.9.9", file), "wb") as f:
            f.write(package)
        for listed, ok in ((hashlib.sha256(package).hexdigest(), True), ("1" * 64, False), (None, False)):
            with open(os.path.join(mirror, "v9.9.9", "SHA256SUMS"), "w") as f:
                f.write(f"{'2' * 64}  driftgate_9.9.9_debian12_amd64.deb\n")
                if listed:
                    f.write(f"{listed}  {file}\n")
            out = os.path.join(work, f"release-{str(listed)[:4]}")
            result = run_action_step(fetch["run"], {"REPOSITORY": "", "RELEASE_URL": "file://" + mirror, "VERSION": "9.9.9",
                                             "FILE": file, "OUT": out}, work)
            installed = os.path.exists(os.path.join(out, file))
            check(f"release install with SHA256SUMS entry {str(listed)[:8]}",
                  (result.returncode == 0) == ok and installed == ok,
                  f"exit {result.returncode}, installed {installed}: {result.stdout}{result.stderr}")
            if installed:
                check("the installed file is the release's", open(os.path.join(out, file), "rb").read() == package)

        # 6b. The package is the one for the runner's Debian release (os-release), chosen by the key
        # step and fetched by the release step: Debian 13 gets the debian13 file even when SHA256SUMS
        # also lists the debian12 one; any other system is refused (exit 2) before apt-get or a
        # download. apt-get is a stand-in that records its calls.
        check("the key step reads deb-url", key_step["env"].get("DEB_URL") == "${{ inputs.deb-url }}",
              str(key_step["env"]))
        check("the release step fetches the key step's file",
              fetch["env"].get("FILE") == "${{ steps.key.outputs.file }}", str(fetch["env"]))
        result = run_action_step(key_step["run"], {"TORCH": "true", "LIBTORCH": "pip", "INSTALL": "release", "SOURCE": source,
                                            "DEB_URL": "", "DRIFTGATE_OS_RELEASE": os_release("debian13"),
                                            "GITHUB_OUTPUT": os.path.join(work, "key_output"), "RUNNER_TEMP": work}, work)
        check("libtorch 'pip' is refused, saying what each release gets", result.returncode == 2 and
              "1.13 on Debian 12" in result.stdout and "2.6 on Debian 13" in result.stdout, result.stdout)
        check("the libtorch input says what each release gets",
              "Debian 12's libtorch 1.13" in action["inputs"]["libtorch"]["description"] and
              "Debian 13's libtorch 2.6" in action["inputs"]["libtorch"]["description"])
        apt_bin = os.path.join(work, "apt-bin")
        os.makedirs(apt_bin)
        apt_calls = os.path.join(work, "apt-calls")
        with open(os.path.join(apt_bin, "apt-get"), "w") as f:
            f.write(f'#!/bin/sh\necho "apt-get $*" >> "{apt_calls}"\n')
        with open(os.path.join(apt_bin, "apt-cache"), "w") as f:
            f.write(f'#!/bin/sh\necho "apt-cache $*" >> "{apt_calls}"\necho "Version: 9.9-stub"\n')
        for tool in ("apt-get", "apt-cache"):
            os.chmod(os.path.join(apt_bin, tool), 0o755)

        def run_key(release, torch="false", install="release", deb_url=""):
            out_file = os.path.join(work, "key_output")
            open(out_file, "w").close()
            if os.path.exists(apt_calls):
                os.remove(apt_calls)
            result = run_action_step(key_step["run"], {"TORCH": torch, "LIBTORCH": "debian", "INSTALL": install,
                                                "SOURCE": source, "DEB_URL": deb_url,
                                                "DRIFTGATE_OS_RELEASE": os_release(release),
                                                "GITHUB_OUTPUT": out_file, "RUNNER_TEMP": work,
                                                "PATH": apt_bin + os.pathsep + os.environ["PATH"]}, work)
            calls = open(apt_calls).read().splitlines() if os.path.exists(apt_calls) else []
            return result, outputs(out_file), calls

        version = None
        for release, n in (("debian12", "12"), ("debian13", "13")):
            for torch, package_name, flavour in (("true", "driftgate", "torch"), ("false", "driftgate-notorch", "notorch")):
                result, found, calls = run_key(release, torch)
                check(f"key step on {release}, torch {torch}: runs", result.returncode == 0, result.stdout + result.stderr)
                version = found.get("version")
                check(f"key step on {release}, torch {torch}: the debian{n} package",
                      found.get("file") == f"{package_name}_{version}_debian{n}_amd64.deb", str(found))
                check(f"key step on {release}, torch {torch}: the cache key names the release",
                      str(found.get("key")).endswith(f"-{flavour}-debian{n}"), str(found))
        for install in ("release", "source"):
            for case in UNSUPPORTED:
                result, found, calls = run_key(case, "true", install)
                log = result.stdout + result.stderr
                check(f"key step, install {install}, on {case}: refused with exit 2", result.returncode == 2, log)
                check(f"key step, install {install}, on {case}: says what it found and what is supported",
                      refusal_names_both(log, case), log)
                check(f"key step, install {install}, on {case}: no apt-get, no outputs", calls == [] and found == {},
                      f"{calls} {found}")
        result, found, calls = run_key("ubuntu24", "false", "release", deb_url="https://example.org/own.deb")
        check("a deb-url is the caller's choice on any system", result.returncode == 0, result.stdout + result.stderr)
        result, found, calls = run_key("debian13", "false", "release")
        key13 = found.get("key")
        result, found, calls = run_key("debian12", "false", "release")
        check("the cache keys of Debian 12 and 13 differ", key13 and found.get("key") and key13 != found.get("key"))

        # Both releases' packages on the mirror: each runner fetches and verifies its own.
        mirror2 = os.path.join(work, "mirror2")
        os.makedirs(os.path.join(mirror2, f"v{version}"))
        by_release = {n: f"the notorch package for Debian {n}\n".encode() for n in ("12", "13")}
        names = {n: f"driftgate-notorch_{version}_debian{n}_amd64.deb" for n in ("12", "13")}
        for n in ("12", "13"):
            with open(os.path.join(mirror2, f"v{version}", names[n]), "wb") as f:
                f.write(by_release[n])

        def release_install(release, sums):
            with open(os.path.join(mirror2, f"v{version}", "SHA256SUMS"), "w") as f:
                f.write("".join(f"{digest}  {name}\n" for name, digest in sums.items()))
            result, found, _ = run_key(release, "false", "release")
            if result.returncode != 0:
                return result, None, []
            out = tempfile.mkdtemp(dir=work, prefix="release13-")
            result = run_action_step(fetch["run"], {"REPOSITORY": "", "RELEASE_URL": "file://" + mirror2,
                                             "VERSION": found["version"], "FILE": found["file"], "OUT": out}, work)
            return result, out, sorted(os.listdir(out))

        good = {names[n]: hashlib.sha256(by_release[n]).hexdigest() for n in ("12", "13")}
        for release, n in (("debian13", "13"), ("debian12", "12")):
            result, out, listing = release_install(release, good)
            other = "12" if n == "13" else "13"
            check(f"release install on {release}: installs", result.returncode == 0, result.stdout + result.stderr)
            check(f"release install on {release}: only the debian{n} package is fetched",
                  listing == sorted(["SHA256SUMS", names[n]]), str(listing))
            if names[n] in listing:
                check(f"release install on {release}: the file is the debian{n} one, not debian{other}",
                      open(os.path.join(out, names[n]), "rb").read() == by_release[n])
        # A debian13 entry that does not match is refused even though the debian12 one matches:
        # the check is against the debian13 line.
        result, out, listing = release_install("debian13", dict(good, **{names["13"]: "4" * 64}))
        check("release install on debian13 with a bad debian13 sum: refused",
              result.returncode == 2 and names["13"] not in listing and "download.part" not in listing,
              f"{result.returncode} {listing} {result.stdout}{result.stderr}")
        result, out, listing = release_install("debian13", {names["12"]: good[names["12"]]})
        check("release install on debian13 when only debian12 is listed: refused",
              result.returncode == 2 and "lists no " + names["13"] in result.stdout and listing == ["SHA256SUMS"],
              f"{result.returncode} {listing} {result.stdout}{result.stderr}")

        # 8. The driftgate that runs is the commit the caller pinned: with no driftgate-ref the
        # plan job reads the calling workflow file (GITHUB_WORKFLOW_REF at GITHUB_WORKFLOW_SHA,
        # through the contents API) and takes OWNER/NAME and REF from its uses: line. Served
        # here by a loopback HTTP server that answers like the contents API (raw file).
        import http.server
        import threading
        import re as _re
        ci_doc = open(os.path.join(root, "docs", "ci.md")).read()
        consumer = dict(_re.findall(r"<!-- consumer-file: (\S+) -->\n```yaml\n(.*?)```", ci_doc, _re.S))
        served = {}

        class Contents(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path, _, query = self.path.partition("?")
                body = served.get(path)
                ok = body is not None and self.headers.get("Authorization") == "Bearer t0ken" and \
                    query == "ref=" + "c" * 40
                self.send_response(200 if ok else 404)
                self.end_headers()
                self.wfile.write((body if ok else '{"message":"Not Found"}').encode())

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Contents)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            api = f"http://127.0.0.1:{server.server_port}"
            for workflow, called, caller_file in ((gate, "driftgate.yml", ".github/workflows/drift-gate.yml"),
                                                  (post, "driftgate-post.yml", ".github/workflows/drift-post.yml")):
                first_job = "plan"
                pinned = step(workflow["jobs"][first_job]["steps"], "The driftgate the caller pinned")
                served.clear()
                served[f"/repos/octo/app/contents/{caller_file}"] = consumer[caller_file]

                def resolve(ref="", repository="", path=caller_file):
                    out_file = os.path.join(work, "pinned_output")
                    open(out_file, "w").close()
                    env = {"REPOSITORY": repository, "REF": ref, "CALLED": pinned["env"]["CALLED"],
                           "TOKEN": "t0ken", "GITHUB_OUTPUT": out_file, "GITHUB_API_URL": api,
                           "GITHUB_REPOSITORY": "octo/app", "GITHUB_WORKFLOW_SHA": "c" * 40,
                           "GITHUB_WORKFLOW_REF": f"octo/app/{path}@refs/heads/main"}
                    result = run_step(pinned["run"], env, work)
                    return result.returncode, outputs(out_file), result.stdout + result.stderr

                check(f"{called}: the resolver looks for calls of {called}", pinned["env"]["CALLED"] == called)
                code, found, log = resolve()
                check(f"{called}: docs/ci.md's pinned commit is what runs",
                      code == 0 and found == {"repository": "driftgate/driftgate",
                                              "ref": "0123456789abcdef0123456789abcdef01234567"}, f"{found} {log}")
                code, found, log = resolve(ref="v9", repository="mirror/driftgate")
                check(f"{called}: an explicit driftgate-ref wins",
                      code == 0 and found == {"repository": "mirror/driftgate", "ref": "v9"}, f"{found} {log}")
                served[f"/repos/octo/app/contents/{caller_file}"] = consumer[caller_file] + \
                    consumer[caller_file].replace("0123456789abcdef", "fedcba9876543210")
                code, found, log = resolve()
                check(f"{called}: two different pins are refused", code == 2 and "cannot tell which driftgate" in log,
                      log)
                code, found, log = resolve(path=".github/workflows/missing.yml")
                check(f"{called}: an unreadable caller is refused", code == 2 and "pass driftgate-ref" in log, log)
        finally:
            server.shutdown()

        # 9. The GitLab component installs the release's .deb by default (driftgate not installed,
        # no deb_url), checked against the release's SHA256SUMS; the poster takes driftgate-notorch.
        # apt-get is a stand-in here that records what it was asked to install.
        class Loader(yaml.SafeLoader):
            pass
        Loader.add_constructor("!reference", lambda loader, node: loader.construct_sequence(node))
        text = open(os.path.join(root, "templates/driftgate.yml")).read()
        spec = yaml.safe_load(text.split("\n---\n")[0])["spec"]["inputs"]
        text = re.sub(r"\$\[\[ inputs\.(\w+) \]\]", lambda m: str(spec[m.group(1)]["default"]), text)
        component = list(yaml.load_all(text, Loader=Loader))[1]
        install_script = component[".driftgate-install"]["script"][0]
        check("the gate installs driftgate", component[".driftgate-variables"]["variables"]["DRIFTGATE_PACKAGE"] ==
              "driftgate")
        check("the poster installs driftgate-notorch",
              component["driftgate-post"]["variables"]["DRIFTGATE_PACKAGE"] == "driftgate-notorch")
        bin_dir = os.path.join(work, "gl-bin")
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, "apt-get"), "w") as f:
            f.write('#!/bin/sh\necho "$*" >> "$APT_LOG"\n'
                    'case "$*" in *install*.deb*) printf \'#!/bin/sh\\necho stub 9.9.9\\n\' > "$STUB"; '
                    'chmod +x "$STUB";; esac\n')
        os.chmod(os.path.join(bin_dir, "apt-get"), 0o755)
        gl_mirror = os.path.join(work, "gl-mirror")
        os.makedirs(os.path.join(gl_mirror, "v9.9.9"))
        gl_file = "driftgate-notorch_9.9.9_debian12_amd64.deb"
        with open(os.path.join(gl_mirror, "v9.9.9", gl_file), "wb") as f:
            f.write(package)
        for case, listed, command, ok, downloads in (
                ("release", hashlib.sha256(package).hexdigest(), "dg-stub", True, True),
                ("tampered", "3" * 64, "dg-stub", False, True),
                ("installed", "3" * 64, "bash", True, False)):
            with open(os.path.join(gl_mirror, "v9.9.9", "SHA256SUMS"), "w") as f:
                f.write(f"{listed}  {gl_file}\n")
            job_dir = os.path.join(work, f"gl-{case}")
            os.makedirs(job_dir)
            apt_log = os.path.join(job_dir, "apt.log")
            env = {"DRIFTGATE": command, "DRIFTGATE_DEB_URL": "", "DRIFTGATE_DEB_SHA256": "", "DRIFTGATE_DEB_PATH": "",
                   "DRIFTGATE_INSTALL": "release", "DRIFTGATE_POSTER": "no", "DRIFTGATE_SOURCE_REF": "",
                   "DRIFTGATE_SOURCE_URL": "file:///nonexistent",
                   "DRIFTGATE_RELEASE_URL": "file://" + gl_mirror, "DRIFTGATE_VERSION": "9.9.9",
                   "DRIFTGATE_PACKAGE": "driftgate-notorch", "APT_LOG": apt_log,
                   "DRIFTGATE_OS_RELEASE": os_release("debian12"),
                   "STUB": os.path.join(bin_dir, "dg-stub"), "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
            if os.path.exists(env["STUB"]):
                os.remove(env["STUB"])
            result = run_action_step(install_script, env, job_dir)
            log = open(apt_log).read() if os.path.exists(apt_log) else ""
            # The cache names a .deb by its SHA-256 (checked again on every install).
            cached_name = f"sha256-{hashlib.sha256(package).hexdigest()}.deb"
            cached = os.path.join(job_dir, ".driftgate-cache", cached_name)
            check(f"GitLab install, {case}: exit", (result.returncode == 0) == ok,
                  f"exit {result.returncode}: {result.stdout}{result.stderr}")
            check(f"GitLab install, {case}: apt-get install of the release's .deb",
                  (f"./.driftgate-cache/{cached_name}" in log) == (ok and downloads), log)
            check(f"GitLab install, {case}: the cached .deb is the release's",
                  (os.path.exists(cached) and open(cached, "rb").read() == package) == (ok and downloads))

        # 9b. The GitLab release install takes the job's Debian release (os-release): both releases'
        # packages on the mirror, each job installs its own; any other system is refused (exit 2)
        # before apt-get or a download, unless driftgate is already installed.
        gl_packages = {n: f"the GitLab notorch package for Debian {n}\n".encode() for n in ("12", "13")}
        gl_names = {n: f"driftgate-notorch_9.9.9_debian{n}_amd64.deb" for n in ("12", "13")}
        gl_mirror2 = os.path.join(work, "gl-mirror2")
        os.makedirs(os.path.join(gl_mirror2, "v9.9.9"))
        for n in ("12", "13"):
            with open(os.path.join(gl_mirror2, "v9.9.9", gl_names[n]), "wb") as f:
                f.write(gl_packages[n])

        def gitlab_install(case, release, sums, command="dg-stub"):
            with open(os.path.join(gl_mirror2, "v9.9.9", "SHA256SUMS"), "w") as f:
                f.write("".join(f"{digest}  {name}\n" for name, digest in sums.items()))
            job_dir = os.path.join(work, f"gl2-{case}")
            os.makedirs(job_dir)
            apt_log = os.path.join(job_dir, "apt.log")
            env = {"DRIFTGATE": command, "DRIFTGATE_DEB_URL": "", "DRIFTGATE_DEB_SHA256": "", "DRIFTGATE_DEB_PATH": "",
                   "DRIFTGATE_INSTALL": "release", "DRIFTGATE_POSTER": "no", "DRIFTGATE_SOURCE_REF": "",
                   "DRIFTGATE_SOURCE_URL": "file:///nonexistent",
                   "DRIFTGATE_RELEASE_URL": "file://" + gl_mirror2, "DRIFTGATE_VERSION": "9.9.9",
                   "DRIFTGATE_PACKAGE": "driftgate-notorch", "APT_LOG": apt_log,
                   "DRIFTGATE_OS_RELEASE": os_release(release),
                   "STUB": os.path.join(bin_dir, "dg-stub"), "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
            if os.path.exists(env["STUB"]):
                os.remove(env["STUB"])
            result = run_action_step(install_script, env, job_dir)
            log = open(apt_log).read() if os.path.exists(apt_log) else ""
            cache = os.path.join(job_dir, ".driftgate-cache")
            listing = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
            return result, log, cache, listing

        gl_good = {gl_names[n]: hashlib.sha256(gl_packages[n]).hexdigest() for n in ("12", "13")}
        for release, n in (("debian13", "13"), ("debian12", "12")):
            result, log, cache, listing = gitlab_install(release, release, gl_good)
            check(f"GitLab install on {release}: exit 0", result.returncode == 0, result.stdout + result.stderr)
            check(f"GitLab install on {release}: apt-get installs the debian{n} .deb",
                  f"./.driftgate-cache/sha256-{hashlib.sha256(gl_packages[n]).hexdigest()}.deb" in log, log)
            check(f"GitLab install on {release}: only the debian{n} .deb is cached, with its bytes",
                  listing == [f"sha256-{hashlib.sha256(gl_packages[n]).hexdigest()}.deb"] and
                  open(os.path.join(cache, listing[0]), "rb").read() == gl_packages[n], str(listing))
        result, log, cache, listing = gitlab_install("bad13", "debian13", dict(gl_good, **{gl_names["13"]: "5" * 64}))
        check("GitLab install on debian13 with a bad debian13 sum: refused, nothing installed",
              result.returncode == 2 and log == "" and listing == [], f"{result.returncode} {log} {listing}")
        for case in UNSUPPORTED:
            result, log, cache, listing = gitlab_install("refused-" + case, case, gl_good)
            out = result.stdout + result.stderr
            check(f"GitLab install on {case}: refused with exit 2", result.returncode == 2, out)
            check(f"GitLab install on {case}: says what it found and what is supported", refusal_names_both(out, case), out)
            check(f"GitLab install on {case}: nothing downloaded or installed", log == "" and not os.path.exists(cache),
                  f"{log} {listing}")
        result, log, cache, listing = gitlab_install("installed-ubuntu", "ubuntu24", gl_good, command="bash")
        check("GitLab: an installed driftgate needs no supported release", result.returncode == 0 and log == "",
              result.stdout + result.stderr)

        # 7. The release's SHA256SUMS lists every package with its SHA-256 (checked here with
        # hashlib), in the format sha256sum -c and the install steps read.
        release = load(os.path.join(root, ".github/workflows/release.yml"))
        sums_step = step(release["jobs"]["release"]["steps"], "SHA-256 sums")
        dist = os.path.join(work, "dist")
        os.makedirs(dist)
        packages = {"driftgate_9.9.9_debian12_amd64.deb": b"torch package",
                    "driftgate-notorch_9.9.9_debian12_amd64.deb": b"notorch package"}
        for name, content in packages.items():
            with open(os.path.join(dist, name), "wb") as f:
                f.write(content)
        check("the sums step runs in dist/", sums_step.get("working-directory") == "dist")
        result = run_step(sums_step["run"], {}, dist)
        check("release sums step runs", result.returncode == 0, result.stderr)
        listed = {}
        for line in open(os.path.join(dist, "SHA256SUMS")):
            digest, name = line.rstrip("\n").split("  ", 1)
            listed[name] = digest
        check("SHA256SUMS lists every package with its SHA-256",
              listed == {n: hashlib.sha256(c).hexdigest() for n, c in packages.items()}, str(listed))

        # 7b. Packages are built for Debian 12 and 13, each in its release's container, and named
        # _debian<N>_amd64.deb (the build step run with stand-ins for tools/install-deps.sh and
        # tools/package.sh, which write an unnamed cpack .deb as the real one does).
        job = release["jobs"]["package"]
        check("release matrix: Debian 12 and 13", job["strategy"]["matrix"].get("debian") == ["12", "13"],
              str(job["strategy"]["matrix"]))
        check("release job runs in the matrix's Debian container", job.get("container") == "debian:${{ matrix.debian }}",
              str(job.get("container")))
        build_step = step(job["steps"], "Build the package")
        check("the build step gets the matrix's release", build_step["env"].get("DEBIAN") == "${{ matrix.debian }}",
              str(build_step["env"]))
        for n in ("12", "13"):
            for flavour, name in (("torch", "driftgate"), ("notorch", "driftgate-notorch")):
                tree = os.path.join(work, f"release-build-{n}-{flavour}")
                os.makedirs(os.path.join(tree, "tools"))
                with open(os.path.join(tree, "tools", "install-deps.sh"), "w") as f:
                    f.write("#!/bin/bash\n")
                with open(os.path.join(tree, "tools", "package.sh"), "w") as f:
                    f.write('#!/bin/bash\nname=driftgate; [ "$1" = --no-torch ] && { name=driftgate-notorch; shift; }\n'
                            'mkdir -p "$1"; echo deb > "$1/${name}_9.9.9_amd64.deb"\n')
                for tool in ("install-deps.sh", "package.sh"):
                    os.chmod(os.path.join(tree, "tools", tool), 0o755)
                result = run_step(build_step["run"], {"FLAVOUR": flavour, "DEBIAN": n}, tree)
                got = sorted(os.listdir(os.path.join(tree, "out", "package"))) if result.returncode == 0 else []
                check(f"release build for Debian {n}, {flavour}: the file is named for Debian {n}",
                      got == [f"{name}_9.9.9_debian{n}_amd64.deb"], f"{got} {result.stdout}{result.stderr}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print(failure)
    print(f"workflow steps: {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

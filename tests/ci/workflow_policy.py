"""Checks the GitHub workflows for what actionlint does not: the supply-chain and
fork-safety rules of driftgate's CI integration.

- Every third-party action (`uses: OWNER/REPO[/PATH]@REF`, in steps and in job-level
  reusable-workflow calls, and in the root action.yml) is pinned to a full 40-hex
  commit SHA; local ones (`./...`) need no pin.
- Every workflow that is not only `workflow_call` declares a top-level
  `permissions:` block (no implicit default token), and none grants `write-all`.
- `pull_request` workflows grant no `write` permission anywhere: they run the pull
  request's code, and a fork's token is read-only anyway.
- `pull_request_target` is not used; a `workflow_run` workflow never checks out the
  triggering run's code (a checkout `ref:` naming workflow_run.head_* or refs/pull/).
Usage: workflow_policy.py ROOT   (ROOT/.github/workflows/*.yml and ROOT/action.yml;
exit 1 on any finding, each printed as FILE: finding)
"""
import glob
import os
import re
import sys

import yaml

PINNED = re.compile(r"[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}")


def load(path):
    with open(path) as f:
        document = yaml.safe_load(f) or {}
    # YAML 1.1 reads the key `on` as True.
    if True in document:
        document["on"] = document.pop(True)
    return document


def triggers(document):
    on = document.get("on")
    if isinstance(on, str):
        return {on}
    if isinstance(on, list):
        return set(on)
    return set((on or {}).keys())


def grants_write(permissions):
    if permissions == "write-all":
        return True
    if isinstance(permissions, dict):
        return any(value == "write" for value in permissions.values())
    return False


def uses_of(document):
    """(where, uses) for every job-level call and step of a workflow or composite action."""
    found = []
    for name, job in (document.get("jobs") or {}).items():
        if "uses" in job:
            found.append((f"jobs.{name}", job["uses"]))
        for index, step in enumerate(job.get("steps") or []):
            if "uses" in step:
                found.append((f"jobs.{name}.steps[{index}]", step["uses"]))
    for index, step in enumerate((document.get("runs") or {}).get("steps") or []):
        if "uses" in step:
            found.append((f"runs.steps[{index}]", step["uses"]))
    return found


def check_pins(path, document, findings):
    for where, uses in uses_of(document):
        if uses.startswith("./") or uses.startswith("docker://"):
            continue
        if not PINNED.fullmatch(uses):
            findings.append(f"{path}: {where}: '{uses}' is not pinned to a full commit SHA")


def check_workflow(path, document, findings):
    events = triggers(document)
    permissions = document.get("permissions")
    if events - {"workflow_call"} and "permissions" not in document:
        findings.append(f"{path}: no top-level permissions: block (the default token may be read-write)")
    jobs = document.get("jobs") or {}
    every = [("top level", permissions)] + [(f"jobs.{name}", job.get("permissions")) for name, job in jobs.items()]
    for where, granted in every:
        if granted == "write-all":
            findings.append(f"{path}: {where}: permissions: write-all")
        elif "pull_request" in events and grants_write(granted):
            findings.append(f"{path}: {where}: a pull_request workflow grants write permissions ({granted})")
    if "pull_request_target" in events:
        findings.append(f"{path}: pull_request_target runs with a write token beside the PR's code; use "
                        "pull_request + workflow_run")
    if "workflow_run" in events:
        for name, job in jobs.items():
            for index, step in enumerate(job.get("steps") or []):
                ref = str((step.get("with") or {}).get("ref", ""))
                if str(step.get("uses", "")).startswith("actions/checkout") and (
                        "workflow_run.head" in ref or "refs/pull/" in ref or "pull_requests" in ref):
                    findings.append(f"{path}: jobs.{name}.steps[{index}]: a workflow_run job checks out the "
                                    f"triggering run's code ({ref})")


def main():
    root = sys.argv[1]
    findings = []
    workflows = sorted(glob.glob(os.path.join(root, ".github", "workflows", "*.yml")) +
                       glob.glob(os.path.join(root, ".github", "workflows", "*.yaml")))
    for path in workflows:
        document = load(path)
        check_pins(path, document, findings)
        check_workflow(path, document, findings)
    action = os.path.join(root, "action.yml")
    if os.path.exists(action):
        check_pins(action, load(action), findings)
    for finding in findings:
        print(finding)
    print(f"workflow policy: {len(workflows)} workflows, {len(findings)} findings")
    sys.exit(1 if findings or not workflows else 0)


if __name__ == "__main__":
    main()

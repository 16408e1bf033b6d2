"""Checks calls to driftgate's reusable workflows against their `workflow_call` contract.

actionlint cannot read a reusable workflow that lives in another repository
(`uses: OWNER/driftgate/.github/workflows/driftgate.yml@TAG`), so this does what it
would for a local one: every `with:` key is a declared input, every required input is
given, literal values have the input's type, and `needs.JOB.outputs.NAME` names a
declared output. Calls to other workflows are ignored.
Usage: workflow_contract.py DRIFTGATE_ROOT WORKFLOW.yml...   (exit 1 on any finding)
"""
import os
import re
import sys

import yaml


def load(path):
    with open(path) as f:
        document = yaml.safe_load(f)
    # YAML 1.1 reads the key `on` as True.
    if True in document:
        document["on"] = document.pop(True)
    return document


def contract_of(root, uses):
    match = re.fullmatch(r"(?:[\w.-]+/driftgate/|\./)\.github/workflows/([\w.-]+\.ya?ml)(?:@[\w./-]+)?", uses)
    if not match:
        return None, None
    path = os.path.join(root, ".github", "workflows", match.group(1))
    if not os.path.exists(path):
        return None, f"{uses}: driftgate has no workflow {match.group(1)}"
    call = (load(path).get("on") or {}).get("workflow_call")
    if call is None:
        return None, f"{uses}: {match.group(1)} is not a reusable workflow (no on.workflow_call)"
    return call, None


def type_matches(kind, value):
    if isinstance(value, str) and "${{" in value:
        return True  # an expression: its type is known at run time only
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str)


def check(root, path):
    findings = []
    jobs = load(path).get("jobs") or {}
    outputs_of = {}
    for name, job in jobs.items():
        uses = job.get("uses")
        if not uses:
            continue
        call, problem = contract_of(root, uses)
        if problem:
            findings.append(f"{path}: job {name}: {problem}")
        if call is None:
            continue
        inputs = call.get("inputs") or {}
        given = job.get("with") or {}
        for key, value in given.items():
            if key not in inputs:
                findings.append(f"{path}: job {name}: input '{key}' is not declared by {uses} "
                                f"(declared: {', '.join(sorted(inputs))})")
            elif not type_matches(inputs[key].get("type", "string"), value):
                findings.append(f"{path}: job {name}: input '{key}' = {value!r} is not a {inputs[key].get('type')}")
        for key, spec in inputs.items():
            if spec.get("required") and "default" not in spec and key not in given:
                findings.append(f"{path}: job {name}: required input '{key}' of {uses} is not given")
        for key in (job.get("secrets") or {}) if isinstance(job.get("secrets"), dict) else []:
            if key not in (call.get("secrets") or {}):
                findings.append(f"{path}: job {name}: secret '{key}' is not declared by {uses}")
        outputs_of[name] = set((call.get("outputs") or {}).keys())
    text = open(path).read()
    for job, output in re.findall(r"needs\.([\w-]+)\.outputs\.([\w-]+)", text):
        if job in outputs_of and output not in outputs_of[job]:
            findings.append(f"{path}: needs.{job}.outputs.{output}: the reusable workflow declares "
                            f"{', '.join(sorted(outputs_of[job])) or 'no outputs'}")
    return findings, len(outputs_of)


def main():
    root, files = sys.argv[1], sys.argv[2:]
    findings, calls = [], 0
    for path in files:
        found, count = check(root, path)
        findings += found
        calls += count
    for finding in findings:
        print(finding)
    print(f"workflow contract: {len(files)} workflows, {calls} calls of driftgate's reusable workflows, "
          f"{len(findings)} findings")
    sys.exit(1 if findings or calls == 0 else 0)


if __name__ == "__main__":
    main()

"""The GitLab component's two tokens stay where docs/ci.md says (issue 19, item 3): in
templates/driftgate.yml, with `extends` and `!reference` resolved as GitLab resolves them,
- only PREFIX-post reads the api token (the variable named by DRIFTGATE_TOKEN_VARIABLE); it declares
  the environment PREFIX-post (the token's environment scope), checks out nothing
  (GIT_STRATEGY: none), installs driftgate-notorch and runs no MR code (no prepare, no driftgate run);
- only PREFIX-baseline reads the push token (DRIFTGATE_PUSH_TOKEN_VARIABLE), and only on pushes to
  the default branch;
- PREFIX-gate, which runs the MR's prepare script and models, reads neither and declares no
  environment.
The same checks on copies with a token read added to the gate must fail, so the test can fail.
Usage: gitlab_tokens_test.py TEMPLATE   (exit 1 on any failure)
"""
import copy
import re
import sys

import yaml


class Loader(yaml.SafeLoader):
    pass


Loader.add_constructor("!reference", lambda loader, node: ("!reference", loader.construct_sequence(node)))


def load(path):
    documents = list(yaml.load_all(open(path), Loader=Loader))
    return documents[-1]


def resolve(jobs, value):
    """A script list with every !reference replaced by what it names."""
    if isinstance(value, tuple) and value[0] == "!reference":
        target = jobs
        for key in value[1]:
            target = target[key]
        return resolve(jobs, target)
    if isinstance(value, list):
        out = []
        for item in value:
            item = resolve(jobs, item)
            out.extend(item if isinstance(item, list) else [item])
        return out
    return value


def merged(jobs, name):
    """The job's keys after `extends` (deep merge of mappings, later wins)."""
    job = jobs[name]
    parents = job.get("extends", [])
    parents = [parents] if isinstance(parents, str) else parents
    result = {}
    for parent in parents:
        deep_merge(result, merged(jobs, parent))
    deep_merge(result, {k: v for k, v in job.items() if k != "extends"})
    return result


def deep_merge(into, other):
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            deep_merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


# A token is read where its variable's *name* is dereferenced: printenv "$VAR", ${!VAR}, --token-env "$VAR".
def reads(script, variable):
    return re.search(r'printenv "?\$\{?%s\b|\$\{!%s\}|--token-env "?\$\{?%s\b' % ((variable,) * 3), script) is not None


def findings(jobs):
    problems = []
    concrete = [name for name in jobs if isinstance(jobs[name], dict) and not name.startswith(".") and name != "include"]
    by_suffix = {}
    for name in concrete:
        job = merged(jobs, name)
        script = "\n".join(str(line) for key in ("before_script", "script", "after_script")
                           for line in resolve(jobs, job.get(key, [])))
        by_suffix[name.rsplit("-", 1)[-1]] = (name, job, script)
    for suffix in ("gate", "post", "baseline"):
        if suffix not in by_suffix:
            problems.append(f"no PREFIX-{suffix} job")
    if problems:
        return problems
    api_readers = sorted(s for s, (_, _, script) in by_suffix.items() if reads(script, "DRIFTGATE_TOKEN_VARIABLE"))
    push_readers = sorted(s for s, (_, _, script) in by_suffix.items() if reads(script, "DRIFTGATE_PUSH_TOKEN_VARIABLE"))
    if api_readers != ["post"]:
        problems.append(f"the api token is read by {api_readers}, not only PREFIX-post")
    if push_readers != ["baseline"]:
        problems.append(f"the push token is read by {push_readers}, not only PREFIX-baseline")
    name, post, script = by_suffix["post"]
    if post.get("environment", {}).get("name") != name:
        problems.append(f"{name} does not declare the environment {name} (the api token's scope)")
    variables = post.get("variables", {})
    if variables.get("GIT_STRATEGY") != "none":
        problems.append(f"{name} checks out the repository (GIT_STRATEGY {variables.get('GIT_STRATEGY')})")
    if variables.get("DRIFTGATE_PACKAGE") != "driftgate-notorch":
        problems.append(f"{name} installs {variables.get('DRIFTGATE_PACKAGE')}, not driftgate-notorch")
    if "DRIFTGATE_PREPARE" in script or re.search(r'"\$DRIFTGATE" run\b', script):
        problems.append(f"{name} runs the MR's prepare or experiments")
    gate_name, gate, _ = by_suffix["gate"]
    if "environment" in gate:
        problems.append(f"{gate_name} declares an environment (it would see the api token scoped to it)")
    rules = " ".join(str(rule.get("if", "")) for rule in by_suffix["baseline"][1].get("rules", []))
    if "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH" not in rules:
        problems.append(f"{by_suffix['baseline'][0]} runs beyond the default branch: {rules}")
    return problems


def main():
    jobs = load(sys.argv[1])
    failures = findings(jobs)
    for problem in failures:
        print(f"FAIL: {problem}")
    # The checks must be able to fail: a gate that reads the api token, one in the post environment.
    gate = next(name for name in jobs if name.endswith("-gate"))
    leaky = copy.deepcopy(jobs)
    leaky[gate]["script"] = list(leaky[gate]["script"]) + ['echo "$(printenv "$DRIFTGATE_TOKEN_VARIABLE")"']
    if not any("api token is read by ['gate', 'post']" in p for p in findings(leaky)):
        failures.append("a gate reading the api token was not found")
        print("FAIL: a gate reading the api token was not found")
    scoped = copy.deepcopy(jobs)
    scoped[gate]["environment"] = {"name": "x"}
    if not any("declares an environment" in p for p in findings(scoped)):
        failures.append("a gate with an environment was not found")
        print("FAIL: a gate with an environment was not found")
    if not failures:
        print("ok: only PREFIX-post reads the api token, only PREFIX-baseline the push token; mutations caught")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""The GitLab component (templates/driftgate.yml) under both of GitLab's interpolation paths
(tests/ci/gitlab_semantics.py, which cites the gitlabhq source of each rule):
- the node path (self-managed GitLab without the ci_text_interpolation feature flag): the
  YAML is parsed, then hashes, arrays and strings are interpolated and tagged nodes left
  alone, then `extends` and `!reference` are resolved: a reference the walk left with a
  literal `$[[ ... ]]` names no job and GitLab refuses the configuration;
- the text path (the flag on): the text is interpolated, then parsed.
Each consumer below must give the same jobs on both paths, with every `extends`,
`!reference` and `needs` resolved, every script a string list, every variable a string:
the component included with several job_prefix values, twice with two prefixes, with
pages on and off, and driftgate's own .gitlab-ci.yml. gitlab-ci-local, which interpolates
the raw text first, cannot tell the paths apart; this test can, and it must fail on the
mistakes it exists for (mutated copies of the template, below).
Usage: gitlab_interpolation_test.py REPO_ROOT   (exit 1 on any failure)
"""
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gitlab_semantics import GitlabConfigError, jobs_of  # noqa: E402

failures = []


def check(name, condition, detail=""):
    if not condition:
        failures.append(f"FAIL: {name} {detail}")


def consumer(template, includes):
    """A project whose .gitlab-ci.yml includes the template once per inputs mapping."""
    lines = ["include:"]
    for inputs in includes:
        lines.append("  - local: templates/driftgate.yml")
        if inputs:
            lines.append("    inputs:")
            for key, value in inputs.items():
                value = "true" if value is True else "false" if value is False else f'"{value}"'
                lines.append(f"      {key}: {value}")
    return {".gitlab-ci.yml": "\n".join(lines) + "\n", "templates/driftgate.yml": template}


def both_paths(name, files):
    """The jobs on both paths; a failure (or a difference between them) is recorded."""
    found = {}
    for path in ("nodes", "text"):
        try:
            found[path] = jobs_of(files, path, {"driftgate": "templates/driftgate.yml"})
        except GitlabConfigError as error:
            failures.append(f"FAIL: {name}, {path} path: {error}")
            found[path] = None
    if found["nodes"] is not None and found["text"] is not None:
        check(f"{name}: both paths give the same jobs", found["nodes"] == found["text"],
              f"nodes {sorted(found['nodes'])} text {sorted(found['text'])}")
    return found["nodes"] or found["text"] or {}


def refused(files, path):
    try:
        jobs_of(files, path)
    except GitlabConfigError as error:
        return str(error)
    return None


def main():
    root = sys.argv[1]
    template = open(os.path.join(root, "templates", "driftgate.yml")).read()

    # 1. One include per job_prefix: the four jobs, each complete.
    for prefix in ("driftgate", "drift-cpu", "dg_2", "x", "a" + "b" * 39):
        for pages in (False, True):
            jobs = both_paths(f"prefix {prefix}, pages {pages}",
                              consumer(template, [{"job_prefix": prefix, "key": f"key-{prefix}", "pages": pages}]))
            if not jobs:
                continue
            check(f"prefix {prefix}: the jobs", sorted(jobs) == sorted(f"{prefix}-{job}" for job in
                                                                      ("gate", "post", "baseline", "pages")),
                  str(sorted(jobs)))
            gate, post = jobs.get(f"{prefix}-gate", {}), jobs.get(f"{prefix}-post", {})
            gate_script = "\n".join(gate.get("script", []))
            post_script = "\n".join(post.get("script", []))
            check(f"prefix {prefix}: the gate installs, runs and diffs",
                  '"$DRIFTGATE" --version' in gate_script and '"$DRIFTGATE" run $DRIFTGATE_CONFIGS' in gate_script
                  and '"$DRIFTGATE" diff out/run.jsonl' in gate_script, gate_script[:300])
            check(f"prefix {prefix}: the poster installs and posts",
                  '"$DRIFTGATE" --version' in post_script and '"$DRIFTGATE" post gitlab' in post_script)
            check(f"prefix {prefix}: the poster runs no experiments", '"$DRIFTGATE" run ' not in post_script)
            check(f"prefix {prefix}: the key reaches the jobs",
                  gate.get("variables", {}).get("DRIFTGATE_KEY") == f"key-{prefix}" and
                  post.get("variables", {}).get("DRIFTGATE_KEY") == f"key-{prefix}")
            rule = jobs.get(f"{prefix}-pages", {}).get("rules", [{}])[0].get("if", "")
            check(f"prefix {prefix}: pages {pages} in the pages rule",
                  rule.endswith(f'"{str(pages).lower()}" == "true"'), rule)

    # 2. Included twice with two prefixes: eight jobs, nothing overridden, each poster its key.
    jobs = both_paths("double include", consumer(template, [
        {"job_prefix": "drift-cpu", "key": "linux-cpu", "on_missing_baseline": "run-base", "pages": True},
        {"job_prefix": "drift-bf16", "key": "linux-bf16", "version": "9.9.9", "libtorch": "2.6.0",
         "image": "debian:13"}]))
    check("double include: eight jobs", len(jobs) == 8, str(sorted(jobs)))
    if len(jobs) == 8:
        check("double include: each poster its key",
              jobs["drift-cpu-post"]["variables"]["DRIFTGATE_KEY"] == "linux-cpu" and
              jobs["drift-bf16-post"]["variables"]["DRIFTGATE_KEY"] == "linux-bf16")
        check("double include: each gate its version", jobs["drift-bf16-gate"]["variables"]["DRIFTGATE_VERSION"] ==
              "9.9.9" and jobs["drift-cpu-gate"]["variables"]["DRIFTGATE_VERSION"] != "9.9.9")
        check("double include: each poster needs its own gate",
              jobs["drift-bf16-post"]["needs"][0]["job"] == "drift-bf16-gate")

    # 3. driftgate's own pipeline.
    own = {".gitlab-ci.yml": open(os.path.join(root, ".gitlab-ci.yml")).read(), "templates/driftgate.yml": template}
    jobs = both_paths("driftgate's .gitlab-ci.yml", own)
    check("driftgate's .gitlab-ci.yml: gate, post, baseline", all(
        name in jobs for name in ("driftgate-gate", "driftgate-post", "driftgate-baseline")), str(sorted(jobs)))
    # Issue 34, item 5: the gate and the baseline job install the .deb an earlier stage built (deb_path);
    # the poster, which never installs it, builds the default branch.
    if all(name in jobs for name in ("driftgate-deb", "driftgate-gate", "driftgate-post", "driftgate-baseline")):
        stages = yaml.safe_load(own[".gitlab-ci.yml"])["stages"]
        built = jobs["driftgate-deb"]["artifacts"]["paths"]
        for name in ("driftgate-gate", "driftgate-baseline"):
            check(f"driftgate's .gitlab-ci.yml: {name} installs driftgate-deb's artifact",
                  jobs[name]["variables"].get("DRIFTGATE_DEB_PATH") in built and
                  stages.index(jobs["driftgate-deb"]["stage"]) < stages.index(jobs[name]["stage"]) and
                  "needs" not in jobs[name], f"{jobs[name]['variables'].get('DRIFTGATE_DEB_PATH')} {built} {stages}")
        post_variables = jobs["driftgate-post"]["variables"]
        check("driftgate's .gitlab-ci.yml: the poster builds the default branch",
              post_variables.get("DRIFTGATE_POSTER") == "yes" and post_variables.get("DRIFTGATE_INSTALL") == "source"
              and post_variables.get("DRIFTGATE_SOURCE_REF") == "$CI_DEFAULT_BRANCH", str(post_variables))
        check("driftgate's .gitlab-ci.yml: no job points at a build/ binary",
              all(job.get("variables", {}).get("DRIFTGATE", "driftgate") == "driftgate" for job in jobs.values()))
    else:
        failures.append(f"FAIL: driftgate's .gitlab-ci.yml: no driftgate-deb job: {sorted(jobs)}")

    # 3b. The .gitlab-ci.yml docs/ci.md tells a consumer to write (its set-up steps), the component
    # read from this checkout.
    import re
    docs = open(os.path.join(root, "docs", "ci.md")).read()
    shown = dict(re.findall(r"<!-- consumer-file: (\S+) -->\n```yaml\n(.*?)```", docs, re.S))
    check("docs/ci.md shows a consumer .gitlab-ci.yml", ".gitlab-ci.yml" in shown)
    if ".gitlab-ci.yml" in shown:
        jobs = both_paths("docs/ci.md's .gitlab-ci.yml", {".gitlab-ci.yml": shown[".gitlab-ci.yml"],
                                                          "templates/driftgate.yml": template})
        gate = jobs.get("driftgate-gate", {}).get("variables", {})
        check("docs/ci.md's .gitlab-ci.yml: the gate builds or installs the pinned commit",
              re.fullmatch(r"[0-9a-f]{40}", str(gate.get("DRIFTGATE_SOURCE_REF"))) is not None and
              gate.get("DRIFTGATE_INSTALL") == "auto", str(gate))
        pin = re.search(r"driftgate@([0-9a-f]{40})", shown[".gitlab-ci.yml"])
        check("docs/ci.md's .gitlab-ci.yml: source_ref is the component's pin",
              pin is not None and gate.get("DRIFTGATE_SOURCE_REF") == pin.group(1), str(gate))

    # 4. The mistakes this test exists for must fail it.
    old_reference = '!reference [".$[[ inputs.job_prefix ]]-install", script]'
    check("mutation: the gate's install line is there to replace", template.count("    - *driftgate_install\n") >= 3)
    with_reference = template.replace("    - *driftgate_install\n", f"    - {old_reference}\n", 1)
    files = consumer(with_reference, [{"job_prefix": "drift-cpu"}])
    error = refused(files, "nodes")
    check("mutation: a !reference naming an input is refused on the node path",
          error is not None and "could not be found" in error and "$[[ inputs.job_prefix ]]-install" in error,
          str(error))
    check("mutation: ... and resolved on the text path (why gitlab-ci-local passes it)",
          refused(files, "text") is None, str(refused(files, "text")))

    boolean_variable = template.replace("  variables:\n    GIT_STRATEGY: none\n  pages:",
                                        '  variables:\n    GIT_STRATEGY: none\n    DRIFTGATE_PAGES: "$[[ inputs.pages ]]"'
                                        "\n  pages:", 1)
    check("mutation: the pages job's variables are there to extend", boolean_variable != template)
    error = refused(consumer(boolean_variable, [{"pages": True}]), "nodes")
    check("mutation: a variable holding a whole boolean block is refused on the node path",
          error is not None and "variable DRIFTGATE_PAGES is True" in error, str(error))

    fixed_name = template.replace('".$[[ inputs.job_prefix ]]-variables"', '".driftgate-variables"')
    error = refused(consumer(fixed_name, [{"job_prefix": "a", "key": "one"}, {"job_prefix": "b", "key": "two"}]),
                    "nodes")
    check("mutation: a fixed hidden job name collides when the component is included twice",
          error is not None and "`.driftgate-variables` is defined by include 0 and include 1" in error, str(error))

    error = refused(consumer(template, [{"on_missing_baseline": "sometimes"}]), "nodes")
    check("an input outside its options is refused", error is not None and "allowed options" in error, str(error))
    error = refused(consumer(template, [{"job_prefix": "Drift"}]), "nodes")
    check("a job_prefix outside its regex is refused", error is not None and "RegEx" in error, str(error))

    for failure in failures:
        print(failure)
    print(f"gitlab interpolation: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

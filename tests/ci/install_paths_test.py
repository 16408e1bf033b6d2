"""Where driftgate comes from in CI, on a project's first pipeline and after: the composite
action's choose step (action.yml), the GitLab component's install script
(templates/driftgate.yml) and the release workflow (release.yml), run with stand-ins for
apt-get and driftgate's build scripts, git repositories and release mirrors on file://:
- install: auto (the default) takes the release vVERSION only when its tag is the pinned
  commit and the release exists, else builds from source, and says which and why;
  install: release refuses another commit's release (its code is not the pinned commit's)
  and a missing release, exit 2;
- the GitLab poster never installs deb_path (the merge request built it) nor a cached
  source build, and a cached .deb (which a merge request's code could have planted) is
  installed only when its SHA-256 matches a sum read from outside the cache;
- release.yml attaches exactly the files the action and the component download, for
  Debian 12 and 13, with and without the runner;
- the component's `version` default is CMakeLists.txt's version.
Usage: install_paths_test.py REPO_ROOT   (exit 1 on any failure)
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workflow_steps_test import OS_RELEASES, load, outputs, run_action_step, run_step, step  # noqa: E402

failures = []


def check(name, condition, detail=""):
    if not condition:
        failures.append(f"FAIL: {name} {detail}")


def git(*args, cwd=None):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def write(path, content, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(content, bytes) else "w") as f:
        f.write(content)
    if mode:
        os.chmod(path, mode)


def template_parts(root):
    text = open(os.path.join(root, "templates", "driftgate.yml")).read()
    spec = yaml.safe_load(text.split("\n---\n")[0])["spec"]["inputs"]
    return text, spec


def main():
    root = sys.argv[1]
    work = tempfile.mkdtemp(prefix="driftgate-install-paths.")
    try:
        version = re.search(r"^project\(driftgate VERSION ([0-9.]+)", open(os.path.join(root, "CMakeLists.txt")).read(),
                            re.M).group(1)
        text, spec = template_parts(root)
        # 9a. The component's version default is the version release.yml tags (CMakeLists.txt's).
        check("the template's version default is CMakeLists.txt's", spec["version"]["default"] == version,
              f"{spec['version']['default']} != {version}")
        check("install: auto is the component's default", spec["install"]["default"] == "auto" and
              spec["install"].get("options") == ["auto", "release", "source"], str(spec["install"]))
        for name in ("driftgate.yml", "driftgate-post.yml"):
            workflow = load(os.path.join(root, ".github", "workflows", name))
            check(f"{name}: install: auto is the default",
                  workflow["on"]["workflow_call"]["inputs"]["install"]["default"] == "auto")
        baselines = load(os.path.join(root, ".github", "workflows", "baselines.yml"))
        check("baselines.yml installs this commit's driftgate, not a release",
              baselines["jobs"]["refresh"]["with"].get("install") == "source", str(baselines["jobs"]["refresh"]))

        for name, content in OS_RELEASES.items():
            write(os.path.join(work, "os-release", name), content)

        # A driftgate repository: commit A tagged vVERSION (annotated), then commit B.
        server = os.path.join(work, "server")
        repo = os.path.join(server, "octo", "driftgate.git")
        checkout = os.path.join(work, "driftgate-checkout")
        os.makedirs(checkout)
        git("init", "-q", "-b", "main", cwd=checkout)
        write(os.path.join(checkout, "tools", "install-deps.sh"),
              '#!/bin/sh\necho "install-deps $*" >>"$BUILD_LOG"\n', 0o755)
        write(os.path.join(checkout, "tools", "package.sh"),
              '#!/bin/sh\nname=driftgate; [ "$1" = --no-torch ] && { name=driftgate-notorch; shift; }\n'
              'out=$(realpath -m "$1"); cd "$(dirname "$0")/.."\n'
              'echo "package $name $(git rev-parse HEAD)" >>"$BUILD_LOG"\n'
              f'mkdir -p "$out"; git rev-parse HEAD >"$out/${{name}}_{version}_amd64.deb"\n', 0o755)
        git("add", "-A", cwd=checkout)
        git("commit", "-qm", "A", cwd=checkout)
        commit_a = git("rev-parse", "HEAD", cwd=checkout)
        git("tag", "-a", f"v{version}", "-m", "release", cwd=checkout)
        git("commit", "-q", "--allow-empty", "-m", "B", cwd=checkout)
        commit_b = git("rev-parse", "HEAD", cwd=checkout)
        os.makedirs(os.path.dirname(repo))
        git("clone", "-q", "--bare", checkout, repo)
        git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=repo)

        # 10. The action's choose step.
        action = load(os.path.join(root, "action.yml"))
        choose = step(action["runs"]["steps"], "Choose where the package comes from")
        mirror = os.path.join(work, "mirror")
        sums_file = os.path.join(mirror, f"v{version}", "SHA256SUMS")

        def choose_step(install, commit, published=True, action_ref="", deb_url="", tag_version=version):
            if published:
                write(sums_file, "0" * 64 + "  x.deb\n")
            elif os.path.exists(sums_file):
                os.remove(sums_file)
            out_file = os.path.join(work, "choose_output")
            open(out_file, "w").close()
            result = run_action_step(choose["run"], {
                "INSTALL": install, "DEB_URL": deb_url, "REPOSITORY": "octo/driftgate",
                "RELEASE_URL": "file://" + mirror, "SERVER": "file://" + server, "VERSION": tag_version,
                "COMMIT": commit, "ACTION_REF": action_ref, "GITHUB_OUTPUT": out_file}, work)
            return result.returncode, outputs(out_file).get("how"), result.stdout + result.stderr

        for case, args, code, how, says in (
                ("auto, the release's commit", ("auto", commit_a), 0, "release", f"installing release v{version}"),
                ("auto, another commit", ("auto", commit_b), 0, "source",
                 f"this driftgate is commit {commit_b} and release v{version} was tagged on {commit_a}"),
                ("release, another commit", ("release", commit_b), 2, None, "the release's package is another commit's code"),
                ("auto, tagged but not published", ("auto", commit_a, False), 0, "source", f"there is no release v{version}"),
                ("release, tagged but not published", ("release", commit_a, False), 2, None, "install: release, but"),
                ("auto, no tag of that version", ("auto", commit_a, True, "", "", "9.9.9"), 0, "source",
                 "has no tag v9.9.9"),
                ("auto, commit unknown", ("auto", ""), 0, "source", "this action's commit is unknown"),
                ("pinned by the release tag", ("release", "", True, f"v{version}"), 0, "release", "installing release"),
                ("source", ("source", commit_a), 0, "source", "install: source"),
                ("deb-url", ("release", commit_b, True, "", "https://example.org/own.deb"), 0, "deb-url", "")):
            got_code, got_how, log = choose_step(*args)
            check(f"action, {case}: exit {code}, from {how}", got_code == code and got_how == how,
                  f"exit {got_code}, how {got_how}: {log}")
            check(f"action, {case}: says why", says in log, log)
            if how == "source" and args[0] == "auto":
                check(f"action, {case}: a notice, not an error", "::notice::" in log and "::error::" not in log, log)

        # The key step knows the action's commit: its checkout's HEAD, else a SHA in its uses: line.
        key_step = step(action["runs"]["steps"], "Compute the package's cache key")
        source = os.path.join(work, "action-source")
        shutil.copytree(checkout, source, ignore=shutil.ignore_patterns(".git"))
        shutil.copy(os.path.join(root, "CMakeLists.txt"), source)
        for part in ("cmake", "core", "differ", "ci", "runner", "app", "tasks"):
            os.makedirs(os.path.join(source, part), exist_ok=True)

        def key_commit(action_ref):
            out_file = os.path.join(work, "key_output")
            open(out_file, "w").close()
            result = run_action_step(key_step["run"], {
                "TORCH": "false", "LIBTORCH": "debian", "INSTALL": "auto", "SOURCE": source, "DEB_URL": "",
                "ACTION_REF": action_ref, "DRIFTGATE_OS_RELEASE": os.path.join(work, "os-release", "debian12"),
                "GITHUB_OUTPUT": out_file, "RUNNER_TEMP": work}, work)
            check("key step runs", result.returncode == 0, result.stdout + result.stderr)
            return outputs(out_file).get("commit")

        check("key step: a SHA in the uses: line", key_commit(commit_b) == commit_b)
        check("key step: a tag in the uses: line is no commit", key_commit(f"v{version}") == "")
        git("init", "-q", cwd=source)
        git("add", "-A", cwd=source)
        git("commit", "-qm", "action", cwd=source)
        check("key step: the checkout's HEAD wins", key_commit(commit_b) == git("rev-parse", "HEAD", cwd=source))

        # 11. release.yml attaches exactly what the action and the component download.
        release = load(os.path.join(root, ".github", "workflows", "release.yml"))
        build_step = step(release["jobs"]["package"]["steps"], "Build the package")
        matrix = release["jobs"]["package"]["strategy"]["matrix"]
        dist = os.path.join(work, "release", "dist")
        os.makedirs(dist)
        for debian in matrix["debian"]:
            for flavour in matrix["flavour"]:
                tree = os.path.join(work, f"release-{debian}-{flavour}")
                shutil.copytree(checkout, tree)
                env = {"FLAVOUR": flavour, "DEBIAN": debian, "BUILD_LOG": os.path.join(work, "release-build.log")}
                result = run_step(build_step["run"], env, tree)
                check(f"release build {debian} {flavour}", result.returncode == 0, result.stdout + result.stderr)
                for name in os.listdir(os.path.join(tree, "out", "package")):  # download-artifact merge-multiple
                    shutil.copy(os.path.join(tree, "out", "package", name), dist)
        check("release builds run install-deps.sh --package",
              "install-deps --package" in open(os.path.join(work, "release-build.log")).read())
        result = run_step(step(release["jobs"]["release"]["steps"], "SHA-256 sums")["run"], {}, dist)
        check("release sums", result.returncode == 0, result.stderr)
        create = step(release["jobs"]["release"]["steps"], "Create the release with the packages and their sums")
        gh_bin = os.path.join(work, "gh-bin")
        gh_log = os.path.join(work, "gh.log")
        write(os.path.join(gh_bin, "gh"), f'#!/bin/sh\nfor a in "$@"; do echo "$a"; done >"{gh_log}"\n', 0o755)
        result = run_step(create["run"], {"GH_TOKEN": "t", "GITHUB_REF_NAME": f"v{version}", "GITHUB_REPOSITORY": "o/d",
                                          "PATH": gh_bin + os.pathsep + os.environ["PATH"]}, os.path.dirname(dist))
        attached = sorted(os.path.basename(a) for a in open(gh_log).read().splitlines()
                          if a.startswith("dist/") and os.path.isfile(os.path.join(os.path.dirname(dist), a)))
        check("the release attaches its packages and SHA256SUMS", "SHA256SUMS" in attached and len(attached) == 5,
              str(attached))
        release_mirror = os.path.join(work, "release-mirror")
        shutil.copytree(dist, os.path.join(release_mirror, f"v{version}"))

        # What the action and the component fetch, logged by a curl wrapper.
        real_curl = shutil.which("curl")
        curl_bin = os.path.join(work, "curl-bin")
        curl_log = os.path.join(work, "curl.log")
        write(os.path.join(curl_bin, "curl"),
              f'#!/bin/sh\nfor a in "$@"; do last="$a"; done\necho "$last" >>"{curl_log}"\nexec {real_curl} "$@"\n',
              0o755)
        apt_bin = os.path.join(work, "apt-bin")
        stub = os.path.join(apt_bin, "dg-stub")
        write(os.path.join(apt_bin, "apt-get"),
              '#!/bin/sh\necho "$*" >>"$APT_LOG"\n'
              f'case "$*" in *install*.deb*) printf \'#!/bin/sh\\necho stub\\n\' >"{stub}"; chmod +x "{stub}";; esac\n',
              0o755)
        path = os.pathsep.join([curl_bin, apt_bin, os.environ["PATH"]])
        downloaded = set()
        fetch = step(action["runs"]["steps"], "Download the release's package")
        for debian in matrix["debian"]:
            for torch in ("true", "false"):
                out_file = os.path.join(work, "key_output")
                open(out_file, "w").close()
                result = run_action_step(key_step["run"], {
                    "TORCH": torch, "LIBTORCH": "debian", "INSTALL": "release", "SOURCE": source, "DEB_URL": "",
                    "DRIFTGATE_OS_RELEASE": os.path.join(work, "os-release", f"debian{debian}"),
                    "GITHUB_OUTPUT": out_file, "RUNNER_TEMP": work, "APT_LOG": os.path.join(work, "apt.log"),
                    "PATH": path}, work)
                found = outputs(out_file)
                open(curl_log, "w").close()
                result = run_action_step(fetch["run"], {
                    "REPOSITORY": "o/d", "RELEASE_URL": "file://" + release_mirror, "SERVER": "",
                    "VERSION": found.get("version", ""), "FILE": found.get("file", ""),
                    "OUT": tempfile.mkdtemp(dir=work), "PATH": path}, work)
                check(f"action fetches the Debian {debian} release, torch {torch}", result.returncode == 0,
                      result.stdout + result.stderr)
                downloaded |= {os.path.basename(u) for u in open(curl_log).read().split()}
        check("the action downloads exactly what release.yml attaches", sorted(downloaded) == attached,
              f"{sorted(downloaded)} vs {attached}")

        install_script = yaml.safe_load(text.replace("$[[ inputs.job_prefix ]]", "driftgate").split("\n---\n", 1)[1])[
            ".driftgate-install"]["script"][0]

        def component(job, install="auto", package="driftgate-notorch", poster="no", deb_path="", source_ref="",
                      release_url="file://" + release_mirror, debian="12", driftgate="dg-stub", deb_url="",
                      deb_sha256=""):
            job_dir = os.path.join(work, "gl", job)
            os.makedirs(job_dir, exist_ok=True)
            for name in (stub,):
                if os.path.exists(name):
                    os.remove(name)
            logs = {name: os.path.join(job_dir, name + ".log") for name in ("apt", "build")}
            for log in logs.values():
                open(log, "w").close()
            open(curl_log, "w").close()
            env = {"DRIFTGATE": driftgate, "DRIFTGATE_DEB_URL": deb_url, "DRIFTGATE_DEB_SHA256": deb_sha256,
                   "DRIFTGATE_DEB_PATH": deb_path, "DRIFTGATE_INSTALL": install, "DRIFTGATE_POSTER": poster,
                   "DRIFTGATE_RELEASE_URL": release_url, "DRIFTGATE_VERSION": spec["version"]["default"],
                   "DRIFTGATE_SOURCE_URL": "file://" + repo, "DRIFTGATE_SOURCE_REF": source_ref,
                   "DRIFTGATE_PACKAGE": package, "APT_LOG": logs["apt"], "BUILD_LOG": logs["build"],
                   "DRIFTGATE_OS_RELEASE": os.path.join(work, "os-release", f"debian{debian}"), "PATH": path}
            result = run_action_step(install_script, env, job_dir)
            return (result.returncode, result.stdout + result.stderr, open(logs["apt"]).read(),
                    open(logs["build"]).read(), job_dir)

        gl_downloaded = set()
        for debian in matrix["debian"]:
            for package in ("driftgate", "driftgate-notorch"):
                code, log, apt, build, _ = component(f"release-{debian}-{package}", "release", package, debian=debian)
                check(f"component installs the Debian {debian} release of {package}", code == 0 and
                      f"installed release v{version} ({package}_{version}_debian{debian}_amd64.deb" in log, log)
                gl_downloaded |= {os.path.basename(u) for u in open(curl_log).read().split()}
        check("the component downloads exactly what release.yml attaches", sorted(gl_downloaded) == attached,
              f"{sorted(gl_downloaded)} vs {attached}")

        # 12. The component without a release: install: auto builds from source and says so;
        # install: release stops.
        no_release = "file://" + os.path.join(work, "no-release")
        code, log, apt, build, job_dir = component("auto-no-release", release_url=no_release, source_ref=commit_a)
        built = f".driftgate-cache/source-{commit_a}-driftgate-notorch-debian12.deb"
        check("auto without a release: built from source", code == 0 and
              f"no release v{version} at {no_release} yet: building driftgate from source" in log and
              f"built from source: file://{repo} at {commit_a}" in log, log)
        check("auto without a release: the build is the pinned commit's and is installed",
              f"package driftgate-notorch {commit_a}" in build and built in apt, f"{build} {apt}")
        code, log, apt, build, _ = component("auto-no-release", release_url=no_release, source_ref=commit_a)
        check("auto without a release: the next job takes the cached build", code == 0 and build == "" and built in apt,
              f"{build} {apt} {log}")
        code, log, apt, build, _ = component("auto-no-release", release_url=no_release, source_ref=commit_a,
                                             poster="yes")
        check("the poster never installs a cached source build", code == 0 and
              f"package driftgate-notorch {commit_a}" in build and built not in apt, f"{build} {apt}")
        code, log, apt, build, _ = component("release-no-release", "release", release_url=no_release)
        check("install: release without a release: exit 2, saying so", code == 2 and
              f"no release v{version} at {no_release}" in log and apt == "", log)
        code, log, apt, build, _ = component("auto-no-tag", release_url=no_release)
        check("auto with neither release nor source_ref: built from the tag", code == 0 and
              f"package driftgate-notorch {commit_a}" in build, log)

        # 8. A pinned commit gets its own code: release refuses another commit's release, auto builds it.
        code, log, apt, build, _ = component("release-other-commit", "release", source_ref=commit_b)
        check("release with source_ref another commit: exit 2", code == 2 and "another commit's code" in log and
              apt == "" and build == "", log)
        code, log, apt, build, _ = component("auto-other-commit", source_ref=commit_b)
        check("auto with source_ref another commit: builds that commit", code == 0 and
              f"is not release v{version}'s commit ({commit_a}): building it from source" in log and
              f"package driftgate-notorch {commit_b}" in build, log)
        code, log, apt, build, _ = component("auto-release-commit", source_ref=commit_a)
        check("auto with source_ref the release's commit: the release", code == 0 and
              f"installed release v{version}" in log and build == "", log)

        # 6. A planted .deb in the cache is never installed unchecked.
        name = f"driftgate-notorch_{version}_debian12_amd64.deb"
        good = open(os.path.join(release_mirror, f"v{version}", name), "rb").read()
        digest = hashlib.sha256(good).hexdigest()
        planted_dir = os.path.join(work, "gl", "planted", ".driftgate-cache")
        write(os.path.join(planted_dir, f"sha256-{digest}.deb"), b"planted by a merge request\n")
        code, log, apt, build, job_dir = component("planted", "release")
        cached = os.path.join(planted_dir, f"sha256-{digest}.deb")
        check("a planted cached release .deb is replaced by the checked download",
              code == 0 and open(cached, "rb").read() == good and "from the cache" not in log, log)
        code, log, apt, build, _ = component("planted", "release")
        check("a cached .deb whose SHA-256 matches is reused", code == 0 and "from the cache (SHA-256 checked)" in log,
              log)
        write(os.path.join(planted_dir, f"sha256-{'1' * 64}.deb"), b"planted\n")
        code, log, apt, build, _ = component("planted", deb_url="file:///nonexistent/x.deb", deb_sha256="1" * 64)
        check("a planted deb_url .deb with the expected name but other bytes is not installed",
              code == 2 and "cannot download" in log and apt == "", log)

        # deb_path: the gate and the baseline install it; the poster never does.
        own = os.path.join(work, "own.deb")
        write(own, b"this pipeline's package\n")
        code, log, apt, build, _ = component("deb-path", deb_path=own)
        check("deb_path is installed", code == 0 and own in apt and "installed " + own + " (deb_path" in log, log)
        code, log, apt, build, _ = component("deb-path-poster", "release", deb_path=own, poster="yes")
        check("the poster ignores deb_path", code == 0 and own not in apt and f"installed release v{version}" in log,
              log)
        code, log, apt, build, _ = component("deb-path-missing", deb_path=os.path.join(work, "absent.deb"))
        check("a missing deb_path: exit 2, naming artifacts", code == 2 and "artifact of an earlier job" in log, log)
        code, log, apt, build, _ = component("installed", "release", driftgate="bash")
        check("an installed driftgate: nothing installed, said so", code == 0 and apt == "" and
              "is already installed" in log, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print(failure)
    print(f"install paths: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

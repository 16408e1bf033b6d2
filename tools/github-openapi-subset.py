#!/usr/bin/env python3
"""Cuts GitHub's official OpenAPI description down to the paths driftgate calls.

Usage: tools/github-openapi-subset.py API_GITHUB_COM_DEREF_JSON > tests/data/api/github/openapi-subset.json
where the input is generated/api.github.com.deref.json of the npm package @octokit/openapi@23.0.2
(`npm pack @octokit/openapi@23.0.2`). Each listed path keeps all of its operations, unchanged, so the
fake GitHub accepts exactly what GitHub documents. Adding a path here and re-running is the only way
the subset changes (it is never edited by hand).
"""
import json
import sys

PATHS = [
    "/repos/{owner}/{repo}/issues/{issue_number}/comments",
    "/repos/{owner}/{repo}/issues/comments/{comment_id}",
    "/repos/{owner}/{repo}/statuses/{sha}",
    "/repos/{owner}/{repo}/check-runs",
    "/repos/{owner}/{repo}/check-runs/{check_run_id}",
    # GET: list a repository's pull requests, filtered by head=OWNER:BRANCH (how a fork's PR is found).
    "/repos/{owner}/{repo}/pulls",
    "/repos/{owner}/{repo}/pulls/{pull_number}",
    "/repos/{owner}/{repo}/commits/{commit_sha}/pulls",
    "/repos/{owner}/{repo}/compare/{basehead}",
    "/repos/{owner}/{repo}/commits/{ref}/check-runs",
    "/repos/{owner}/{repo}/commits/{ref}/statuses",
]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        full = json.load(f)
    missing = [p for p in PATHS if p not in full["paths"]]
    if missing:
        print(f"{sys.argv[1]}: no path {', '.join(missing)}; is it api.github.com.deref.json of "
              "@octokit/openapi@23.0.2?", file=sys.stderr)
        return 2
    subset = {key: full[key] for key in ("openapi", "info", "servers")}
    subset["paths"] = {p: full["paths"][p] for p in PATHS}
    sys.stdout.write(json.dumps(subset, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

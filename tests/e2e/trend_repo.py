#!/usr/bin/env python3
"""Makes a git repository with COMMITS first-parent commits on `main` for trend tests and benchmarks.

Uses git fast-import, so 1,000 commits take about a second. Commit i (0-based) is authored one hour
after commit i-1; the second newest commit's subject holds HTML and markdown metacharacters, to test escaping.
Prints the SHAs, oldest first, one per line (the input of trend_fixture --shas).
"""
import argparse
import os
import subprocess


def make_commits(repo, count):
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True, env=env)
    stream = []
    for i in range(count):
        subject = "change %d" % (i + 1)
        if i == count - 2:
            subject = "tolerance <b>bold</b> & a | pipe"
        message = (subject + "\n").encode()
        content = ("line %d\n" % i).encode()
        stream.append(b"commit refs/heads/main\nmark :%d\n" % (i + 1))
        stream.append(b"author Dev Eloper <dev@example.invalid> %d +0000\n" % (1767225600 + 3600 * i))
        stream.append(b"committer Dev Eloper <dev@example.invalid> %d +0000\n" % (1767225600 + 3600 * i))
        stream.append(b"data %d\n%s" % (len(message), message))
        if i > 0:
            stream.append(b"from :%d\n" % i)
        stream.append(b"M 644 inline file.txt\ndata %d\n%s\n" % (len(content), content))
    subprocess.run(["git", "-C", repo, "fast-import", "--quiet"], input=b"".join(stream), check=True, env=env)
    subprocess.run(["git", "-C", repo, "checkout", "-q", "main"], check=True, env=env)
    out = subprocess.run(["git", "-C", repo, "rev-list", "--first-parent", "--reverse", "main"], check=True,
                         env=env, capture_output=True, text=True).stdout
    return out.split()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--commits", type=int, default=30)
    args = parser.parse_args()
    print("\n".join(make_commits(args.repo, args.commits)))


if __name__ == "__main__":
    main()

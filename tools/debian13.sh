#!/usr/bin/env bash
# Runs a command under Debian 13 ("trixie") and its LibTorch 2.6, with the repository as the
# working directory:
#   bash tools/debian13.sh bash tools/demo.sh        the main job under LibTorch 2.6
#   bash tools/debian13.sh tools/build.sh            build/ there (build-lt26/ here)
#   bash tools/debian13.sh --status                  where the root is and what it has
#
# The root is made once with `debootstrap --variant=minbase trixie` (Debian 12's debootstrap
# package; the mirror is the one this machine's apt sources name) and cached outside the
# repository, in $DRIFTGATE_DEBIAN13_ROOT (default /var/cache/driftgate/debian13); every entry
# runs tools/install-deps.sh inside it, which installs LibTorch 2.6 and the build dependencies
# the first time and only checks afterwards. Needs root (debootstrap, chroot, mount).
#
# Inside, the repository is bind-mounted at its own path, so CMake caches and test paths are
# the same strings in both worlds. The generated directories are bind-mounted from siblings
# with a -lt26 suffix: build/ is build-lt26/, build-notorch/ is build-notorch-lt26/, models/ is
# models-lt26/, out/ is out-lt26/ (and so on), so objects and TorchScript files of the two
# toolchains never mix. All mounts live in a private mount namespace (unshare) and are also
# undone by a trap on every exit path, so nothing stays mounted on the host.
#
# Environment: DRIFTGATE_DEBIAN13_ROOT (the cached root), DRIFTGATE_DEBIAN_MIRROR (overrides
# the mirror read from /etc/apt/sources.list{,.d}), DRIFTGATE_DEBIAN13_BINDS (colon-separated
# absolute host directories also bind-mounted at their own paths).
set -euo pipefail

root=${DRIFTGATE_DEBIAN13_ROOT:-/var/cache/driftgate/debian13}
repo=$(cd "$(dirname "$0")/.." && pwd -P)
# The generated directories that get a Debian 13 twin (see above). Keep in step with .gitignore.
twins=(build build-notorch build-asan build-asan-torch build-fuzz models out)

die() {
  echo "debian13.sh: $*" >&2
  exit 2
}

usage() {
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
}

if [[ $# -eq 0 ]]; then
  usage >&2
  die "no command given; e.g. bash tools/debian13.sh bash tools/demo.sh"
fi
if [[ $1 == -h || $1 == --help ]]; then
  usage
  exit 0
fi

# The archive this machine's own apt sources name (deb822 .sources first, then one-line lists).
host_mirror() {
  local uri
  if [[ -n ${DRIFTGATE_DEBIAN_MIRROR:-} ]]; then
    echo "$DRIFTGATE_DEBIAN_MIRROR"
    return
  fi
  uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' \
    /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 || true)
  if [[ -z $uri ]]; then
    uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):.*\/debian\/?$/) { print $i; exit } }' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -1 || true)
  fi
  [[ -n $uri ]] || die "no Debian archive in /etc/apt/sources.list{,.d}; set DRIFTGATE_DEBIAN_MIRROR (e.g. http://deb.debian.org/debian)"
  echo "$uri"
}

if [[ $1 == --status ]]; then
  if [[ -f $root/.driftgate-ready ]]; then
    echo "root: $root (ready; made $(cat "$root/.driftgate-ready"))"
    chroot "$root" dpkg-query -W -f='${Package} ${Version}\n' libtorch-dev g++ 2>/dev/null | sed 's/^/  /'
  else
    echo "root: $root (not made yet; the first command makes it)"
  fi
  echo "mirror: $(host_mirror)"
  exit 0
fi

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot and mount); run it with sudo"
for tool in unshare chroot mount flock; do
  command -v "$tool" >/dev/null || die "'$tool' is missing; install util-linux and coreutils"
done

# Stage 2, inside a private mount namespace: mount, chroot, run, unmount.
if [[ ${DRIFTGATE_DEBIAN13_INNER:-} == 1 ]]; then
  mounted=()
  cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
      umount -R "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
    done
  }
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  bind() {  # bind SOURCE TARGET [--rbind]
    mkdir -p "$2"
    mount "${3:---bind}" "$1" "$2"
    mounted+=("$2")
  }
  mount --make-rprivate / 2>/dev/null || true
  mkdir -p "$root/proc"
  mount -t proc proc "$root/proc"
  mounted+=("$root/proc")
  bind /dev "$root/dev" --rbind
  bind /sys "$root/sys" --rbind
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  bind "$repo" "$root$repo"
  # A git worktree's .git names the main repository's git directory: make it visible too.
  common=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  if [[ -n $common && -d $common && $common != "$repo"/* ]]; then
    bind "$common" "$root$common"
  fi
  # Extra host directories a caller needs inside (tests/e2e/upgrade_test.sh: its work directory).
  IFS=: read -r -a extra <<<"${DRIFTGATE_DEBIAN13_BINDS:-}"
  for dir in "${extra[@]}"; do
    [[ -n $dir ]] || continue
    [[ -d $dir && $dir == /* ]] || die "DRIFTGATE_DEBIAN13_BINDS: '$dir' is not an absolute path to a directory"
    bind "$dir" "$root$dir"
  done
  for name in "${twins[@]}"; do
    mkdir -p "$repo/$name-lt26"
    bind "$repo/$name-lt26" "$root$repo/$name"
  done
  status=0
  chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    DRIFTGATE_LIBTORCH_LINE=debian13 \
    /bin/bash -c 'cd "$1" && shift && tools/install-deps.sh >&2 && exec "$@"' \
    debian13 "$repo" "$@" || status=$?
  exit "$status"
fi

# Stage 1: make the root once (serialized by a lock), then enter it in a private namespace.
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9
if [[ ! -f $root/.driftgate-ready ]]; then
  command -v debootstrap >/dev/null || die "debootstrap is missing; install it (apt-get install debootstrap)"
  mirror=$(host_mirror)
  echo "debian13.sh: making the Debian 13 root in $root from $mirror (once; about a minute)" >&2
  rm -rf "$root.partial"
  # In a namespace of its own too: the proc and sys debootstrap mounts in the target never reach the host.
  unshare --mount --propagation private debootstrap --variant=minbase trixie "$root.partial" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $root.debootstrap.log (is $mirror reachable?)"
  rm -rf "$root"
  mv "$root.partial" "$root"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$root/.driftgate-ready"
fi
flock -u 9
DRIFTGATE_DEBIAN13_INNER=1 exec unshare --mount --propagation private -- bash "$0" "$@"

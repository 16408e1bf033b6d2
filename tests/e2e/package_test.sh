#!/usr/bin/env bash
# The Debian package (cmake/packaging.cmake): cpack -G DEB from this build directory
# into a temp dir, inspected with dpkg-deb -I/-c, extracted into a temp root where the
# packaged driftgate runs --version and --help. Needs BUILD_DIR and PROJECT_VERSION.
source "$(dirname "$0")/lib.sh"
: "${BUILD_DIR:?set BUILD_DIR to the CMake build directory}"
: "${PROJECT_VERSION:?set PROJECT_VERSION to the project version}"
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not found (apt-get install cmake dpkg-dev)"
    exit 77
  fi
done

expect_exit 0 "cpack -G DEB builds the package" -- \
  cpack --config "$BUILD_DIR/CPackConfig.cmake" -G DEB -B "$work/package"
debs=("$work"/package/*.deb)
checks=$((checks + 1))
if [[ ${#debs[@]} -eq 1 && -f "${debs[0]}" ]]; then echo "ok: one .deb: $(basename "${debs[0]}")"; else
  failures=$((failures + 1)); echo "FAIL: expected one .deb in $work/package"; ls -la "$work/package"; finish; exit 1; fi
deb=${debs[0]}

if [[ "$DRIFTGATE_WITH_TORCH" == 1 ]]; then name=driftgate other=driftgate-notorch; else
  name=driftgate-notorch other=driftgate; fi
dpkg-deb -I "$deb" >"$work/info"
expect_contains "$work/info" "Package: $name" "the package is named $name"
expect_contains "$work/info" "Version: $PROJECT_VERSION" "the version is the project's"
expect_contains "$work/info" "Architecture: $(dpkg --print-architecture)" "the architecture is this machine's"
expect_contains "$work/info" "Conflicts: $other" "it conflicts with $other (both install /usr/bin/driftgate)"
grep '^ Depends:' "$work/info" >"$work/depends"
# dpkg-shlibdeps: the Debian runtime packages of the libraries the binary links
# (OpenSSL arrives through libcpp-httplib0.11, which links it).
for package in git libgit2-1.5 libyaml-cpp0.7 libcpp-httplib0.11 libboost-program-options1.74.0 libc6 libstdc++6; do
  expect_contains "$work/depends" "$package" "Depends names $package"
done
if [[ "$DRIFTGATE_WITH_TORCH" == 1 ]]; then
  expect_contains "$work/depends" "libtorch1.13" "Depends names libtorch1.13 (the runner)"
else
  checks=$((checks + 1))
  if grep -q libtorch "$work/depends"; then failures=$((failures + 1)); echo "FAIL: a torch-free package depends on LibTorch";
  else echo "ok: no LibTorch in the torch-free package's Depends"; fi
fi
checks=$((checks + 1))
if grep -q -- '-dev\b' "$work/depends"; then failures=$((failures + 1)); echo "FAIL: Depends names a -dev package";
  cat "$work/depends"; else echo "ok: Depends names runtime packages only"; fi

dpkg-deb -c "$deb" | awk '{print $NF}' >"$work/contents"
expect_contains "$work/contents" "./usr/bin/driftgate" "the package installs /usr/bin/driftgate"
expect_contains "$work/contents" "./usr/bin/driftgate-run-base" "and /usr/bin/driftgate-run-base (on-missing-baseline)"
expect_contains "$work/contents" "./usr/share/doc/driftgate/README.md" "the package carries the README"
expect_contains "$work/contents" "./usr/share/doc/driftgate/docs/ci.md" "and the docs/ files it links"
checks=$((checks + 1))
if grep -qE 'test|gtest|\.a$|include/' "$work/contents"; then failures=$((failures + 1));
  echo "FAIL: the package carries tests, headers or static libraries"; cat "$work/contents"; else
  echo "ok: no tests, headers or static libraries in the package"; fi

root="$work/root"
expect_exit 0 "dpkg-deb -x extracts the package" -- dpkg-deb -x "$deb" "$root"
expect_exit 0 "the packaged driftgate runs --version" -- "$root/usr/bin/driftgate" --version
expect_contains "$work/stdout" "driftgate $PROJECT_VERSION" "--version prints the package version"
expect_exit 0 "the packaged driftgate runs --help" -- "$root/usr/bin/driftgate" --help
expect_contains "$work/stdout" "Subcommands:" "--help lists the subcommands"
expect_contains "$work/stdout" "post" "--help lists post"
expect_exit 0 "the packaged driftgate-run-base runs --help" -- "$root/usr/bin/driftgate-run-base" --help
expect_contains "$work/stdout" "--on-missing-baseline neutral|run-base" "driftgate-run-base --help names its policies"
finish

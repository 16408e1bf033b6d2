# Debian packaging (CPack): `cpack -G DEB` in a build directory, or tools/package.sh,
# writes an installable .deb of the driftgate binary, so a consumer's CI installs
# driftgate with `apt-get install ./driftgate_*.deb` instead of building it from source.
#
# Depends comes from dpkg-shlibdeps over the installed binary: exactly the Debian
# runtime packages (libtorch1.13, libgit2-1.5, libyaml-cpp0.7, libcpp-httplib0.11, ...) whose
# libraries it links. A build without LibTorch makes the smaller driftgate-notorch
# package (diff, baseline, trend, post: the posting job's), which conflicts with
# driftgate since both install /usr/bin/driftgate.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/driftgate)
# The README links docs/*.md by relative path: they sit beside it in the package.
file(GLOB DRIFTGATE_DOCS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${DRIFTGATE_DOCS} DESTINATION share/doc/driftgate/docs)
# driftgate-run-base: the gate with its on-missing-baseline policy (run-base builds the merge base's
# run on the spot), which the GitHub reusable workflow and the GitLab component both call.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/driftgate-run-base.sh DESTINATION bin RENAME driftgate-run-base)

if(DRIFTGATE_WITH_TORCH)
  set(CPACK_PACKAGE_NAME driftgate)
  set(CPACK_DEBIAN_PACKAGE_CONFLICTS driftgate-notorch)
  # Without the pthread OpenBLAS, LibTorch falls back to the reference BLAS (10-50x slower).
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS libopenblas0-pthread)
else()
  set(CPACK_PACKAGE_NAME driftgate-notorch)
  set(CPACK_DEBIAN_PACKAGE_CONFLICTS driftgate)
endif()
set(CPACK_PACKAGE_VENDOR "driftgate")
set(CPACK_PACKAGE_CONTACT "driftgate maintainers <driftgate@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "guards deep-learning models against cross-backend drift")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
# git: baselines are chosen by git ancestry in the consumer's checkout.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "git")
# Only what `make install` would install: the binary and its documentation, no tests.
set(CPACK_INSTALL_CMAKE_PROJECTS "${CMAKE_BINARY_DIR};driftgate;ALL;/")
include(CPack)

# End-to-end tests of baselines and the gate on real temporary git repositories
# (included from tests/e2e/CMakeLists.txt). Runs come from bench/make_run.cc, which
# writes them through the real record writer, so these tests need no LibTorch.
add_executable(make_run ${PROJECT_SOURCE_DIR}/bench/make_run.cc)
target_compile_options(make_run PRIVATE ${DRIFTGATE_WARNINGS})
target_link_libraries(make_run PRIVATE driftgate_core)

foreach(name baseline_repo baseline_stores gate_history)
  driftgate_e2e_test(${name})
  set_property(TEST e2e_${name} APPEND PROPERTY ENVIRONMENT "MAKE_RUN=$<TARGET_FILE:make_run>")
endforeach()

# Fault injection and bad input through the real binary (included from tests/e2e/CMakeLists.txt):
# SIGKILL during `baseline update`, failed writes (full disk, /dev/full, read-only store), and the
# pinned bad-input corpus in tests/data/bad_inputs. Runs come from make_run (baselines.cmake).
foreach(name fault_baseline_kill fault_write)
  driftgate_e2e_test(${name})
  set_property(TEST e2e_${name} APPEND PROPERTY ENVIRONMENT "MAKE_RUN=$<TARGET_FILE:make_run>")
endforeach()
driftgate_e2e_test(bad_inputs)
# The two longest of these (about 1.5 minutes each) start first: see COST in CMakeLists.txt.
set_tests_properties(e2e_fault_baseline_kill e2e_bad_inputs PROPERTIES COST 1000)
if(DRIFTGATE_WITH_TORCH)
  set_property(TEST e2e_bad_inputs APPEND PROPERTY FIXTURES_REQUIRED test_models)
endif()

# driftgate trend's end-to-end tests (included from tests/e2e/CMakeLists.txt).
# trend_fixture writes baseline stores through the real record writer; trend_repo.py makes the
# git history; trend_screenshot_test.sh renders the HTML in headless Chromium (skips without it).
add_executable(trend_fixture ${CMAKE_CURRENT_LIST_DIR}/trend_fixture.cc)
target_compile_options(trend_fixture PRIVATE ${DRIFTGATE_WARNINGS})
target_link_libraries(trend_fixture PRIVATE driftgate_differ)

driftgate_e2e_test(trend)
driftgate_e2e_test(trend_screenshot SKIP_RETURN_CODE 77)
foreach(name trend trend_screenshot)
  set_property(TEST e2e_${name} APPEND PROPERTY ENVIRONMENT "TREND_FIXTURE=$<TARGET_FILE:trend_fixture>")
endforeach()

// The JUnit XML rendering of a diff report: one testcase per check.
//
// CI systems (GitLab's test report widget, Jenkins, GitHub test-reporter actions)
// show new failures from JUnit files without reading anything driftgate-specific.
// Each check is a testcase named by its id in a testsuite per experiment; a check
// the gate fails on is a <failure> whose message says its class; a check that
// was not compared (missing) and is not gated is <skipped>. Everything from run
// files is XML-escaped, and characters XML 1.0 cannot carry become U+FFFD.
#pragma once

#include <string>

#include "differ/report.h"

namespace driftgate {

// The whole document, ending with a newline. A report without a baseline gives
// one suite with no testcases and a property saying why.
std::string render_junit(const Report& report);

// `text` escaped for XML character data and attribute values.
std::string xml_escape(const std::string& text);

}  // namespace driftgate

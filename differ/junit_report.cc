#include "differ/junit_report.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/safe_text.h"

namespace driftgate {

namespace {

constexpr const char* k_replacement = "\xEF\xBF\xBD";  // U+FFFD

std::string describe(const CheckDiff& check) {
  std::string text = to_label(check.diff_class) + ": " + format_status(check.status_before) + " -> " +
                     format_status(check.status_after) + ", max_abs " + format_number(check.max_abs_before) + " -> " +
                     format_number(check.max_abs_after);
  for (const auto& note : check.notes) {
    text += "; " + note;
  }
  return text;
}

void render_case(std::ostream& out, const Report& report, const CheckDiff& check) {
  GateDecision decision = decide(report.policy, check);
  out << "    <testcase classname=\"" << xml_escape(check.experiment) << "\" name=\"" << xml_escape(check.id)
      << "\" time=\"0\"";
  if (decision.gated) {
    out << ">\n      <failure type=\"" << to_string(check.diff_class) << "\" message=\"" << xml_escape(describe(check))
        << "\">" << xml_escape(check.message) << "</failure>\n    </testcase>\n";
    return;
  }
  if (check.diff_class == DiffClass::k_missing) {
    out << ">\n      <skipped message=\"" << xml_escape(describe(check)) << "\"/>\n    </testcase>\n";
    return;
  }
  if (decision.allowed_by != nullptr) {
    const AllowEntry& entry = *decision.allowed_by;
    out << ">\n      <system-out>"
        << xml_escape(describe(check) + "; allowed by '" + entry.check_glob + "' (" + entry.origin + ", owner " +
                      entry.owner + ", until " + entry.expires + "): " + entry.reason)
        << "</system-out>\n    </testcase>\n";
    return;
  }
  out << "/>\n";
}

}  // namespace

std::string xml_escape(const std::string& raw) {
  // C0 controls (but tab and line breaks) and DEL become U+FFFD, not allowed in XML 1.0
  // even as character references; C1, bidi and zero-width characters are escaped.
  std::string replaced;
  for (char c : raw) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t' && c != '\r') || byte == 0x7f) {
      replaced += k_replacement;
    } else {
      replaced += c;
    }
  }
  const std::string text = escape_invisible(replaced, /*keep_whitespace=*/true);
  std::string escaped;
  escaped.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    switch (text[i]) {
      case '&':
        escaped += "&amp;";
        continue;
      case '<':
        escaped += "&lt;";
        continue;
      case '>':
        escaped += "&gt;";
        continue;
      case '"':
        escaped += "&quot;";
        continue;
      case '\'':
        escaped += "&apos;";
        continue;
      case '\n':
        escaped += "&#10;";
        continue;
      case '\t':
        escaped += "&#9;";
        continue;
      case '\r':
        escaped += "&#13;";
        continue;
      default:
        break;
    }
    escaped += text[i];
  }
  return escaped;
}

std::string render_junit(const Report& report) {
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  if (!report.diff) {
    out << "<testsuites name=\"driftgate\" tests=\"0\" failures=\"0\">\n"
        << "  <testsuite name=\"driftgate\" tests=\"0\" failures=\"0\" skipped=\"0\">\n"
        << "    <properties><property name=\"verdict\" value=\"" << to_string(report.verdict)
        << "\"/><property name=\"reason\" value=\"" << xml_escape(report.reason) << "\"/></properties>\n"
        << "  </testsuite>\n</testsuites>\n";
    return out.str();
  }
  std::map<std::string, std::vector<const CheckDiff*>> suites;
  std::map<std::string, std::vector<size_t>> quiet;  // the quiet unchanged checks of each suite: passed
  int64_t failures = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> suite_counts;
  const QuietChecks& quiet_checks = report.diff->quiet;
  if (!quiet_checks.named()) {
    // A diff made with DiffOptions::name_quiet_checks false cannot list every check.
    throw std::logic_error("render_junit: the diff counted its quiet checks without naming them");
  }
  for (size_t i = 0; i < quiet_checks.size(); ++i) {
    quiet[quiet_checks.experiment(i)].push_back(i);
    suites[quiet_checks.experiment(i)];
  }
  for (const auto& check : report.diff->checks) {
    suites[check.experiment].push_back(&check);
    GateDecision decision = decide(report.policy, check);
    int64_t failed = decision.gated ? 1 : 0;
    int64_t skip = !decision.gated && check.diff_class == DiffClass::k_missing ? 1 : 0;
    failures += failed;
    suite_counts[check.experiment].first += failed;
    suite_counts[check.experiment].second += skip;
  }
  out << "<testsuites name=\"driftgate\" tests=\"" << report.diff->checks.size() + quiet_checks.size()
      << "\" failures=\"" << failures << "\">\n";
  for (const auto& [experiment, checks] : suites) {
    const std::vector<size_t>& passed = quiet[experiment];
    out << "  <testsuite name=\"" << xml_escape(experiment) << "\" tests=\"" << checks.size() + passed.size()
        << "\" failures=\"" << suite_counts[experiment].first << "\" skipped=\"" << suite_counts[experiment].second
        << "\">\n";
    for (const CheckDiff* check : checks) {
      render_case(out, report, *check);
    }
    std::string classname = xml_escape(experiment);
    for (size_t i : passed) {
      out << "    <testcase classname=\"" << classname << "\" name=\"" << xml_escape(std::string(quiet_checks.id(i)))
          << "\" time=\"0\"/>\n";
    }
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
  return out.str();
}

}  // namespace driftgate

#include "ci/comment_body.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <vector>

#include "ci/markdown_escape.h"
#include "core/error.h"

namespace driftgate {

namespace {

using Json = nlohmann::json;

const char* const k_arrow = " \xE2\x86\x92 ";  // →
const char* const k_classes[] = {"regressed",  "crashed",      "missing", "failure_grew", "new_failure",
                                 "drift_grew", "task_changed", "new",     "fixed",        "unchanged"};

std::string text_field(const Json& object, const char* name) {
  if (!object.is_object() || !object.contains(name) || !object[name].is_string()) {
    return "";
  }
  return object[name].get<std::string>();
}

std::string value_text(const Json& value) {
  if (value.is_null()) {
    return "none";
  }
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_number()) {
    std::ostringstream out;
    out.precision(3);
    out << value.get<double>();
    return out.str();
  }
  return value.dump();
}

// "drift_grew" -> "drift grew", "task_changed" -> "task changed".
std::string label(std::string diff_class) {
  std::replace(diff_class.begin(), diff_class.end(), '_', ' ');
  return diff_class;
}

std::string check_line(const Json& check) {
  std::string line = "- " + code_span(text_field(check, "id")) + " " + escape_text(label(text_field(check, "class"))) +
                     ": " + escape_text(value_text(check.value("status_before", Json()))) + k_arrow +
                     escape_text(value_text(check.value("status_after", Json()))) + "; max_abs " +
                     escape_text(value_text(check.value("max_abs_before", Json()))) + k_arrow +
                     escape_text(value_text(check.value("max_abs_after", Json())));
  if (check.contains("notes") && check["notes"].is_array()) {
    for (const auto& note : check["notes"]) {
      if (note.is_string()) {
        line += "; " + escape_text(truncate_utf8(note.get<std::string>(), 300));
      }
    }
  }
  std::string message = text_field(check, "message");
  if (!message.empty()) {
    line += "; " + code_span(truncate_utf8(message, 300));
  }
  return line + "\n";
}

std::string short_sha(const std::string& sha) { return sha.substr(0, 12); }

// Severity of a diff class: its place in k_classes (regressed first).
size_t class_rank(const std::string& diff_class) {
  size_t rank = 0;
  for (const char* name : k_classes) {
    if (diff_class == name) {
      return rank;
    }
    ++rank;
  }
  return rank;
}

// How far a check moved: max_abs_after, or infinity when it has none (a crash).
double magnitude(const Json& check) {
  const Json& after = check.value("max_abs_after", Json());
  return after.is_number() ? after.get<double>() : std::numeric_limits<double>::infinity();
}

std::string render_head(const Json& report, const BodyOptions& options) {
  std::ostringstream out;
  if (!options.marker.empty()) {
    out << options.marker << "\n";
  }
  out << "### " << escape_text(verdict_line(report));
  if (!options.key.empty()) {
    out << " (" << code_span(options.key) << ")";
  }
  out << "\n\n";
  if (!options.notice.empty()) {
    out << "> **" << escape_text(options.notice) << "**\n\n";
  }
  std::string verdict = text_field(report, "verdict");
  if (verdict == "no_baseline") {
    out << "No comparable baseline, so nothing was gated: " << escape_text(text_field(report, "reason")) << "\n";
  }
  const Json& baseline = report.value("baseline", Json());
  if (baseline.is_object()) {
    out << "Baseline " << code_span(short_sha(text_field(baseline, "sha"))) << " (environment "
        << code_span(text_field(baseline, "env_key")) << "); run "
        << code_span(short_sha(text_field(report["run"], "sha"))) << ".\n";
  }
  if (report.value("env_mismatch", false)) {
    out << "\n> **Compared across environments:** " << code_span(text_field(report, "env_changes")) << "\n";
  }
  for (const auto& note : report.value("notes", Json::array())) {
    if (note.is_string()) {
      out << "\n> " << escape_text(truncate_utf8(note.get<std::string>(), 500)) << "\n";
    }
  }
  for (const auto& change : report.value("experiment_changes", Json::array())) {
    out << "- " << code_span(text_field(change, "experiment")) << ": "
        << code_span(truncate_utf8(text_field(change, "note"), 200)) << "\n";
  }
  if (baseline.is_object()) {
    out << "\n| class | checks |\n|:--|--:|\n";
    for (const char* name : k_classes) {
      int count = report["counts"].value(name, 0);
      if (count == 0 && std::string(name) == "task_changed") {
        continue;  // only tier-3 suites have it; like the differ's own table
      }
      out << "| " << label(name) << " | " << count << " |\n";
    }
  }
  return out.str();
}

std::string artifact_link(const std::string& url) {
  if (url.empty()) {
    return "report.json (not linked: no --artifact-url)";
  }
  if ((url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0) ||
      url.find_first_of(" <>()[]\"'`\n\r") != std::string::npos) {
    throw Error("--artifact-url '" + url + "': not a plain http(s) URL; it is linked from the comment");
  }
  return "[report.json](" + url + ")";
}

}  // namespace

int json_nesting_depth(const std::string& text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) {
        return deepest;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Json parse_report(const std::string& text, const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Error(path + ": " + why + "; expected the report.json that driftgate diff --report FILE writes");
  };
  if (text.size() > k_report_max_bytes) {
    throw bad("larger than " + std::to_string(k_report_max_bytes / (1024 * 1024)) + " MiB");
  }
  if (json_nesting_depth(text, k_report_max_depth) > k_report_max_depth) {
    throw bad("nested deeper than " + std::to_string(k_report_max_depth) + " levels");
  }
  Json report = Json::parse(text, nullptr, false);
  if (report.is_discarded() || !report.is_object()) {
    throw bad("not a JSON object");
  }
  if (report.value("schema", Json()) != Json(1)) {
    throw bad("\"schema\" is not 1");
  }
  std::string verdict = text_field(report, "verdict");
  if (verdict != "pass" && verdict != "fail" && verdict != "no_baseline") {
    throw bad("\"verdict\" is not pass, fail or no_baseline");
  }
  if (!report.contains("counts") || !report["counts"].is_object() || !report.contains("checks") ||
      !report["checks"].is_array() || !report.contains("run") || !report["run"].is_object()) {
    throw bad("\"counts\", \"checks\" or \"run\" is missing");
  }
  for (const auto& check : report["checks"]) {
    if (!check.is_object() || !check.contains("id") || !check["id"].is_string() || !check.contains("class")) {
      throw bad("a check without \"id\" or \"class\"");
    }
    if (check.contains("gated") && !check["gated"].is_boolean()) {
      throw bad("a check whose \"gated\" is not true or false");
    }
  }
  // The fields the renderers read with a type: a fork's report that types them otherwise
  // is refused here, never a type error half-way through a comment.
  if (report.contains("env_mismatch") && !report["env_mismatch"].is_boolean()) {
    throw bad("\"env_mismatch\" is not true or false");
  }
  for (const auto& [name, count] : report["counts"].items()) {
    if (!count.is_number_integer() || count.get<long long>() < 0 ||
        count.get<long long>() > std::numeric_limits<int>::max()) {
      throw bad("\"counts\"." + name + " is not a count");
    }
  }
  for (const char* list : {"notes", "experiment_changes"}) {
    if (report.contains(list) && !report[list].is_array()) {
      throw bad(std::string("\"") + list + "\" is not a list");
    }
  }
  return report;
}

std::string verdict_line(const Json& report) {
  std::string verdict = text_field(report, "verdict");
  if (verdict == "no_baseline") {
    return "driftgate: NO BASELINE - nothing gated";
  }
  std::string line = verdict == "fail" ? "driftgate: FAIL" : "driftgate: PASS";
  std::string counts;
  for (const char* name : k_classes) {
    int count = report["counts"].value(name, 0);
    if (count > 0 && std::string(name) != "unchanged") {
      counts += (counts.empty() ? "" : ", ") + std::to_string(count) + " " + label(name);
    }
  }
  return line + " - " + (counts.empty() ? "no changes" : counts);
}

size_t measure(const std::string& text, const BodyBudget& budget) {
  return budget.bytes ? text.size() : utf16_length(text);
}

namespace {

// The verdict, counts and changed checks within options.budget (no appendix);
// `whole` is false when checks were left out.
std::string render_summary(const Json& report, const BodyOptions& options, bool& whole) {
  whole = true;
  std::string body = render_head(report, options);
  // The worst gated checks: most severe class first, then the largest max_abs_after
  // (report order is by class and id, which would show the alphabetically first).
  std::vector<const Json*> gated;
  for (const auto& check : report["checks"]) {
    if (text_field(check, "class") != "unchanged" && check.value("gated", false)) {
      gated.push_back(&check);
    }
  }
  std::stable_sort(gated.begin(), gated.end(), [](const Json* a, const Json* b) {
    size_t rank_a = class_rank(text_field(*a, "class"));
    size_t rank_b = class_rank(text_field(*b, "class"));
    return rank_a != rank_b ? rank_a < rank_b : magnitude(*a) > magnitude(*b);
  });
  if (gated.size() > static_cast<size_t>(k_worst_checks_shown)) {
    gated.resize(k_worst_checks_shown);
  }
  std::vector<std::string> worst;
  std::vector<std::string> rest;
  for (const Json* check : gated) {
    worst.push_back(check_line(*check));
  }
  for (const auto& check : report["checks"]) {
    if (text_field(check, "class") != "unchanged" && std::find(gated.begin(), gated.end(), &check) == gated.end()) {
      rest.push_back(check_line(check));
    }
  }
  const std::string link = artifact_link(options.artifact_url);
  const std::string details_open =
      "\n<details><summary>All other changed checks (" + std::to_string(rest.size()) + ")</summary>\n\n";
  const std::string details_close = "\n</details>\n";
  const std::string footer = "\nFull report: " + link + "\n";
  auto notice = [&](size_t left_out) {
    return "\n**Truncated:** " + std::to_string(left_out) + " more checks not shown (this surface allows " +
           std::to_string(options.budget.limit) + (options.budget.bytes ? " bytes" : " characters") + "); see " + link +
           "\n";
  };
  // The longest notice plus the details frame is always kept free.
  size_t reserve = measure(notice(worst.size() + rest.size()) + details_open + details_close + footer, options.budget);
  if (measure(body, options.budget) + reserve > options.budget.limit) {
    throw Error("the comment limit of " + std::to_string(options.budget.limit) + " is too small for the summary");
  }
  size_t shown = 0;
  size_t used = 0;
  auto add = [&](const std::string& line) {
    size_t size = measure(line, options.budget);
    if (used + size + reserve > options.budget.limit) {
      return false;
    }
    body += line;
    used += size;
    ++shown;
    return true;
  };
  if (!worst.empty()) {
    body += "\n#### Worst regressions\n\n";
  }
  used = measure(body, options.budget);
  bool complete = true;
  for (const auto& line : worst) {
    complete = complete && add(line);
  }
  if (complete && !rest.empty()) {
    body += details_open;
    used += measure(details_open, options.budget);
    for (const auto& line : rest) {
      if (!add(line)) {
        complete = false;
        break;
      }
    }
    body += details_close;
  }
  if (!complete) {
    whole = false;
    return body + notice(worst.size() + rest.size() - shown);
  }
  return body + footer;
}

// `summary` followed by `appendix` when the summary is whole and the appendix fits
// what it left of `budget`; else followed by a one-line notice when that fits.
std::string append_to_body(const std::string& summary, bool summary_whole, const CommentAppendix& appendix,
                           const BodyBudget& budget) {
  if (appendix.markdown.empty()) {
    return summary;
  }
  const std::string title = escape_text(appendix.title.empty() ? "Appendix" : appendix.title);
  std::string section = "\n<details><summary>" + title + "</summary>\n\n" + appendix.markdown;
  if (section.back() != '\n') {
    section += "\n";
  }
  section += "\n</details>\n";
  const size_t used = measure(summary, budget);
  const size_t left = used < budget.limit ? budget.limit - used : 0;
  const size_t size = measure(section, budget);
  if (summary_whole && !appendix.oversized && size <= left) {
    return summary + section;
  }
  const std::string unit = budget.bytes ? " bytes" : " characters";
  const std::string notice =
      summary_whole ? "\n**" + title + " left out:** it is " + (appendix.oversized ? "over " : "") +
                          std::to_string(size) + unit + " and the regression summary left " + std::to_string(left) +
                          " of this surface's " + std::to_string(budget.limit) + "; the summary comes first.\n"
                    : "\n**" + title + " left out:** the changed checks alone did not fit this surface's " +
                          std::to_string(budget.limit) + unit + "; they come first.\n";
  if (measure(notice, budget) <= left) {
    return summary + notice;
  }
  return summary;
}

}  // namespace

std::string render_comment_body(const Json& report, const BodyOptions& options) {
  bool whole = true;
  std::string summary = render_summary(report, options, whole);
  return append_to_body(summary, whole, options.appendix, options.budget);
}

}  // namespace driftgate

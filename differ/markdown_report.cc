#include "differ/markdown_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace driftgate {

namespace {

constexpr const char* k_dash = "\xE2\x80\x94";         // —
constexpr const char* k_arrow = "\xE2\x86\x92";        // →
constexpr const char* k_word_joiner = "\xE2\x81\xA0";  // U+2060: keeps "@name" from becoming a mention
constexpr size_t k_message_limit = 300;

std::string short_sha(const std::string& sha) { return sha.substr(0, 7); }

std::string format_number(const std::optional<double>& value) {
  if (!value) {
    return "n/a";
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", *value);
  return buffer;
}

std::string status_name(const std::optional<CheckStatus>& status) { return status ? to_string(*status) : "absent"; }

std::string truncate_message(const std::string& message) {
  if (message.size() <= k_message_limit) {
    return message;
  }
  size_t cut = k_message_limit;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) {
    --cut;  // do not split a UTF-8 sequence
  }
  return message.substr(0, cut) + "...";
}

// The verdict already says "no comparable baseline"; do not say it twice.
std::string without_prefix(const std::string& reason) {
  static const std::string k_prefix = "no comparable baseline: ";
  return reason.compare(0, k_prefix.size(), k_prefix) == 0 ? reason.substr(k_prefix.size()) : reason;
}

std::string counts_phrase(const DiffResult& diff) {
  std::string phrase;
  for (DiffClass diff_class : all_diff_classes()) {
    int64_t count = diff.count(diff_class);
    if (diff_class == DiffClass::k_unchanged || count == 0) {
      continue;
    }
    phrase += phrase.empty() ? "" : ", ";
    phrase += std::to_string(count) + " " + to_label(diff_class);
  }
  if (phrase.empty()) {
    return std::to_string(diff.count(DiffClass::k_unchanged)) + " unchanged";
  }
  return phrase;
}

void render_baseline(std::ostream& out, const Report& report) {
  out << "Baseline " << markdown_code(short_sha(report.baseline_sha)) << " (environment "
      << markdown_code(report.baseline_env_key) << "), " << report.baseline_steps << " first-parent "
      << (report.baseline_steps == 1 ? "step" : "steps") << " back from " << markdown_code(short_sha(report.start_sha))
      << "; run " << markdown_code(short_sha(report.run_sha)) << ".\n";
  if (report.env_mismatch) {
    out << "\n> **Compared across environments** (`--allow-env-mismatch`): the baseline's environment "
        << markdown_code(report.baseline_env_key) << " is not the run's " << markdown_code(report.run_env_key) << " ("
        << markdown_code(report.env_changes) << "); differences may come from the environment.\n";
  }
}

void render_counts(std::ostream& out, const Report& report) {
  out << "\n| class | checks | gates |\n|:--|--:|:--|\n";
  for (DiffClass diff_class : all_diff_classes()) {
    bool gated = report.policy.gated.count(diff_class) != 0;
    out << "| " << to_label(diff_class) << " | " << report.diff->count(diff_class) << " | " << (gated ? "yes" : "no")
        << " |\n";
  }
}

void render_experiment_changes(std::ostream& out, const DiffResult& diff) {
  if (diff.experiment_changes.empty()) {
    return;
  }
  out << "\nChanged since the baseline (differences in these experiments may come from this):\n";
  for (const auto& change : diff.experiment_changes) {
    out << "- " << markdown_code(change.experiment) << ": " << markdown_code(change.note()) << "\n";
  }
}

void render_check(std::ostream& out, const CheckDiff& check) {
  out << "- " << markdown_code(check.id) << ": " << status_name(check.status_before) << " " << k_arrow << " "
      << status_name(check.status_after) << "; max_abs " << format_number(check.max_abs_before) << " " << k_arrow << " "
      << format_number(check.max_abs_after);
  for (const auto& note : check.notes) {
    out << "; " << markdown_text(note);
  }
  if (!check.message.empty()) {
    out << "; " << markdown_code(truncate_message(check.message));
  }
  out << "\n";
}

void render_class(std::ostream& out, const Report& report, DiffClass diff_class) {
  int64_t count = report.diff->count(diff_class);
  if (count == 0 || diff_class == DiffClass::k_unchanged) {
    return;
  }
  std::string title = to_label(diff_class);
  title[0] = static_cast<char>(title[0] - 'a' + 'A');
  out << "\n### " << title << " (" << count << ")" << (report.policy.gated.count(diff_class) != 0 ? " - gated" : "")
      << "\n";
  int listed = 0;
  for (const auto& check : report.diff->checks) {
    if (check.diff_class != diff_class) {
      continue;
    }
    if (listed == k_markdown_checks_per_class) {
      out << "- ... and " << (count - listed) << " more (see report.json)\n";
      return;
    }
    render_check(out, check);
    ++listed;
  }
}

}  // namespace

std::string markdown_code(const std::string& text) {
  std::string content = text;
  std::replace(content.begin(), content.end(), '\n', ' ');
  std::replace(content.begin(), content.end(), '\r', ' ');
  size_t longest = 0;
  size_t run = 0;
  for (char c : content) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  std::string fence(longest + 1, '`');
  bool pad = content.empty() || content.front() == '`' || content.back() == '`' || content.front() == ' ' ||
             content.back() == ' ';
  std::string space = pad ? " " : "";
  return fence + space + content + space + fence;
}

std::string markdown_text(const std::string& text) {
  // Inline constructs: emphasis, code, links, HTML, tables, strikethrough, entities.
  static const std::string k_special = "\\`*_[]<|~&";
  // Block constructs only start a line: a heading, list, quote or rule.
  static const std::string k_line_start = "#+->=";
  std::string escaped;
  if (!text.empty() && k_line_start.find(text.front()) != std::string::npos) {
    escaped += '\\';
  }
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      escaped += ' ';
      continue;
    }
    if (k_special.find(c) != std::string::npos) {
      escaped += '\\';
    }
    escaped += c;
    if (c == '@') {
      escaped += k_word_joiner;
    }
  }
  return escaped;
}

std::string render_verdict_line(const Report& report) {
  std::string across = report.env_mismatch ? std::string(" (compared across environments)") : "";
  switch (report.verdict) {
    case Verdict::k_fail:
      return std::string("**driftgate: FAIL** ") + k_dash + " " + counts_phrase(*report.diff) + across;
    case Verdict::k_pass:
      return std::string("**driftgate: PASS** ") + k_dash + " " + counts_phrase(*report.diff) + across;
    case Verdict::k_no_baseline:
      return std::string("**driftgate: no comparable baseline** ") + k_dash + " " +
             markdown_text(without_prefix(report.reason));
  }
  return "";
}

std::string render_markdown(const Report& report) {
  std::ostringstream out;
  out << render_verdict_line(report) << "\n";
  for (const auto& note : report.notes) {
    out << "\n> " << markdown_text(note) << "\n";
  }
  if (report.verdict == Verdict::k_no_baseline) {
    out << "\nNothing was compared, so the gate is neutral (exit 0). Store a baseline on the target branch with "
           "`driftgate baseline update run.jsonl`.\n";
    return out.str();
  }
  out << "\n";
  render_baseline(out, report);
  render_counts(out, report);
  render_experiment_changes(out, *report.diff);
  for (DiffClass diff_class : all_diff_classes()) {
    render_class(out, report, diff_class);
  }
  return out.str();
}

}  // namespace driftgate

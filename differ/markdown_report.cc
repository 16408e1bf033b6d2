#include "differ/markdown_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "differ/gate_policy.h"

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
    if (diff_class == DiffClass::k_task_changed && !gated && report.diff->count(diff_class) == 0) {
      continue;  // only suites with tier-3 checks can have it: other tables stay as they were
    }
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

std::string check_line(const Report& report, const CheckDiff& check) {
  std::ostringstream out;
  out << "- " << markdown_code(check.id) << ": " << status_name(check.status_before) << " " << k_arrow << " "
      << status_name(check.status_after) << "; max_abs " << format_number(check.max_abs_before) << " " << k_arrow << " "
      << format_number(check.max_abs_after);
  for (const auto& note : check.notes) {
    out << "; " << markdown_text(note);
  }
  if (!check.message.empty()) {
    out << "; " << markdown_code(truncate_message(check.message));
  }
  GateDecision decision = decide(report.policy, check);
  if (decision.allowed_by != nullptr) {
    const AllowEntry& entry = *decision.allowed_by;
    out << "; allowed by " << markdown_code(entry.check_glob) << " (" << markdown_text(entry.origin) << ", owner "
        << markdown_code(entry.owner) << ", until " << entry.expires << ": " << markdown_code(entry.reason) << ")";
  }
  if (check.localization && check.status_after && is_failure(*check.status_after)) {
    out << "\n  - tier 2: `" << layer_sparkline(*check.localization) << "` "
        << markdown_text(describe_localization(*check.localization));
  }
  out << "\n";
  return out.str();
}

// Appends blocks while they fit the byte budget; counts the checks left out.
class BudgetWriter {
 public:
  BudgetWriter(std::string& out, size_t budget) : m_out(out), m_budget(budget) {}

  // Appends `text` when it fits, leaving room for the closing text and the notice.
  bool add(const std::string& text, size_t reserve) {
    if (m_full || m_out.size() + text.size() + reserve + k_notice_room > m_budget) {
      m_full = true;
      return false;
    }
    m_out += text;
    return true;
  }
  void skip_check() { ++m_skipped; }
  bool full() const { return m_full; }
  int64_t skipped() const { return m_skipped; }

  static constexpr size_t k_notice_room = 200;

 private:
  std::string& m_out;
  size_t m_budget;
  bool m_full = false;
  int64_t m_skipped = 0;
};

// One class's section: its checks for which `wanted` holds, at most k_markdown_checks_per_class.
template <typename Wanted>
void render_section(BudgetWriter& writer, const Report& report, DiffClass diff_class, const std::string& suffix,
                    size_t reserve, Wanted wanted) {
  std::vector<const CheckDiff*> checks;
  for (const auto& check : report.diff->checks) {
    if (check.diff_class == diff_class && wanted(check)) {
      checks.push_back(&check);
    }
  }
  if (checks.empty()) {
    return;
  }
  std::string title = to_label(diff_class);
  title[0] = static_cast<char>(title[0] - 'a' + 'A');
  if (!writer.add("\n### " + title + " (" + std::to_string(checks.size()) + ")" + suffix + "\n", reserve)) {
    for (size_t i = 0; i < checks.size(); ++i) {
      writer.skip_check();
    }
    return;
  }
  for (size_t i = 0; i < checks.size(); ++i) {
    if (static_cast<int>(i) == k_markdown_checks_per_class) {
      writer.add("- ... and " + std::to_string(checks.size() - i) + " more (see report.json)\n", reserve);
      return;
    }
    if (!writer.add(check_line(report, *checks[i]), reserve)) {
      writer.skip_check();
    }
  }
}

void render_policy(std::ostream& out, const Report& report) {
  out << "\nGate policy" << (report.policy.source.empty() ? "" : " from " + markdown_code(report.policy.source))
      << ":\n";
  for (const auto& line : describe_policy(report.policy)) {
    out << "- " << markdown_code(line) << "\n";
  }
}

void render_refresh(std::ostream& out, const Report& report) {
  if (report.refresh_command.empty()) {
    return;
  }
  out << "\nIf these changes are intended, take the run's values for the gated checks into the baseline:\n\n"
      << markdown_code(report.refresh_command) << "\n";
  if (!report.proposed_baseline.empty()) {
    out << "\nor apply the proposal " << markdown_code(report.proposed_baseline) << " (" << report.proposal_changes
        << " changed, " << report.proposal_drops << " dropped), which needs no run file:\n\n"
        << markdown_code(report.proposal_command) << "\n";
  }
}

// The check lists: gated checks open, worst class first; the rest folded.
void render_checks(std::string& text, const Report& report, size_t budget) {
  BudgetWriter writer(text, budget);
  for (DiffClass diff_class : all_diff_classes()) {
    render_section(writer, report, diff_class, " - gated", 0,
                   [&](const CheckDiff& check) { return decide(report.policy, check).gated; });
  }
  int64_t others = 0;
  std::string phrase;
  for (DiffClass diff_class : all_diff_classes()) {
    int64_t count = 0;
    for (const auto& check : report.diff->checks) {
      count +=
          check.diff_class == diff_class && diff_class != DiffClass::k_unchanged && !decide(report.policy, check).gated;
    }
    if (count > 0) {
      phrase += (phrase.empty() ? "" : ", ") + std::to_string(count) + " " + to_label(diff_class);
      others += count;
    }
  }
  if (others > 0) {
    const std::string closing = "\n</details>\n";
    if (writer.add("\n<details><summary>Not gated: " + phrase + "</summary>\n", closing.size())) {
      for (DiffClass diff_class : all_diff_classes()) {
        if (diff_class == DiffClass::k_unchanged) {
          continue;
        }
        render_section(writer, report, diff_class, "", closing.size(),
                       [&](const CheckDiff& check) { return !decide(report.policy, check).gated; });
      }
      text += closing;
    } else {
      for (int64_t i = 0; i < others; ++i) {
        writer.skip_check();
      }
    }
  }
  if (writer.skipped() > 0) {
    text += "\n*" + std::to_string(writer.skipped()) + " more checks not shown: this summary is limited to " +
            std::to_string(budget) + " bytes (--markdown-budget); report.json lists every check.*\n";
  }
}

// The latency table, last and only where it fits the budget whole (the checks come first).
void add_latency(std::string& text, const Report& report, size_t budget) {
  const std::string table = render_latency_markdown(report.latency);
  if (table.empty()) {
    return;
  }
  if (text.size() + table.size() <= budget) {
    text += table;
  } else {
    text += "\n*The latency table is left out: it does not fit the " + std::to_string(budget) +
            " bytes of this summary (--markdown-budget).*\n";
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

std::string render_markdown(const Report& report, size_t budget) {
  std::ostringstream out;
  out << render_verdict_line(report) << "\n";
  for (const auto& note : report.notes) {
    out << "\n> " << markdown_text(note) << "\n";
  }
  if (report.verdict == Verdict::k_no_baseline) {
    out << "\nNothing was compared, so the gate is neutral (exit 0). Store a baseline on the target branch with "
           "`driftgate baseline update run.jsonl`.\n";
    std::string text = out.str();
    add_latency(text, report, budget);
    return text;
  }
  out << "\n";
  render_baseline(out, report);
  render_counts(out, report);
  render_policy(out, report);
  render_experiment_changes(out, *report.diff);
  render_refresh(out, report);
  std::string text = out.str();
  render_checks(text, report, budget);
  add_latency(text, report, budget);
  return text;
}

}  // namespace driftgate

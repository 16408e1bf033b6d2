#include "differ/text_report.h"

#include <cstdio>
#include <sstream>

#include "core/safe_text.h"

namespace driftgate {

namespace {

constexpr const char* k_red = "\x1b[1;31m";
constexpr const char* k_green = "\x1b[1;32m";
constexpr const char* k_yellow = "\x1b[1;33m";
constexpr const char* k_bold = "\x1b[1m";
constexpr const char* k_reset = "\x1b[0m";

class Painter {
 public:
  explicit Painter(bool color) : m_color(color) {}
  std::string operator()(const char* style, const std::string& text) const {
    return m_color ? style + text + k_reset : text;
  }

 private:
  bool m_color;
};

std::string short_sha(const std::string& sha) { return sha.substr(0, 7); }

std::string counts(const DiffResult& diff) {
  std::string phrase;
  for (DiffClass diff_class : all_diff_classes()) {
    if (diff.count(diff_class) > 0) {
      phrase += (phrase.empty() ? "" : ", ") + std::to_string(diff.count(diff_class)) + " " + to_label(diff_class);
    }
  }
  return phrase.empty() ? "no checks" : phrase;
}

std::string verdict_line(const Report& report, const Painter& paint) {
  switch (report.verdict) {
    case Verdict::k_fail:
      return "driftgate: " + paint(k_red, "FAIL") + " - " + counts(*report.diff) +
             (report.env_mismatch ? " (compared across environments)" : "");
    case Verdict::k_pass:
      return "driftgate: " + paint(k_green, "PASS") + " - " + counts(*report.diff) +
             (report.env_mismatch ? " (compared across environments)" : "");
    case Verdict::k_no_baseline:
      return "driftgate: " + paint(k_yellow, "no comparable baseline") + " - " + terminal_safe(report.reason);
  }
  return "";
}

void render_check(std::ostream& out, const Report& report, const CheckDiff& check) {
  out << "  " << terminal_safe(check.id) << "  " << format_status(check.status_before) << " -> "
      << format_status(check.status_after) << "  max_abs " << format_number(check.max_abs_before) << " -> "
      << format_number(check.max_abs_after);
  for (const auto& note : check.notes) {
    out << "; " << terminal_safe(note);
  }
  if (!check.message.empty()) {
    out << "; " << terminal_safe(check.message);
  }
  GateDecision decision = decide(report.policy, check);
  if (decision.allowed_by != nullptr) {
    out << "; allowed by '" << terminal_safe(decision.allowed_by->check_glob) << "' ("
        << terminal_safe(decision.allowed_by->origin) << ", owner " << terminal_safe(decision.allowed_by->owner)
        << ", until " << decision.allowed_by->expires << ")";
  }
  if (check.localization && check.status_after && is_failure(*check.status_after)) {
    // Tier 2: one character per layer (log error / threshold, full block over it).
    out << "\n    layers " << layer_sparkline(*check.localization) << "  "
        << terminal_safe(describe_localization(*check.localization));
  }
  out << "\n";
}

void render_classes(std::ostream& out, const Report& report, const Painter& paint) {
  for (DiffClass diff_class : all_diff_classes()) {
    if (diff_class == DiffClass::k_unchanged || report.diff->count(diff_class) == 0) {
      continue;
    }
    int64_t gated = 0;
    for (const auto& check : report.diff->checks) {
      gated += check.diff_class == diff_class && decide(report.policy, check).gated;
    }
    std::string title = to_label(diff_class) + " (" + std::to_string(report.diff->count(diff_class)) + ")";
    out << "\n"
        << (gated > 0 ? paint(k_red, title + ", " + std::to_string(gated) + " gated") : paint(k_bold, title)) << ":\n";
    for (const auto& check : report.diff->checks) {
      if (check.diff_class == diff_class) {
        render_check(out, report, check);
      }
    }
  }
}

}  // namespace

std::string terminal_safe(const std::string& text) {
  std::string safe = text;
  for (char& c : safe) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r') {
      c = ' ';
    } else if (byte < 0x20 || byte == 0x7f) {
      c = '?';
    }
  }
  // C1 controls, bidi and zero-width characters, bytes that are not UTF-8.
  return escape_invisible(safe);
}

std::string render_text(const Report& report, const TextOptions& options) {
  Painter paint(options.color);
  std::ostringstream out;
  out << verdict_line(report, paint) << "\n";
  for (const auto& note : report.notes) {
    out << paint(k_yellow, "note:") << " " << terminal_safe(note) << "\n";
  }
  if (report.verdict == Verdict::k_no_baseline) {
    out << "Nothing was compared, so the gate is neutral (exit 0). Store a baseline on the target branch with "
           "driftgate baseline update run.jsonl.\n";
    return out.str();
  }
  out << "baseline " << short_sha(report.baseline_sha) << " (environment " << report.baseline_env_key << "), "
      << report.baseline_steps << " first-parent " << (report.baseline_steps == 1 ? "step" : "steps") << " back from "
      << short_sha(report.start_sha) << "; run " << short_sha(report.run_sha) << "\n";
  if (report.env_mismatch) {
    out << paint(k_yellow, "compared across environments")
        << " (--allow-env-mismatch): " << terminal_safe(report.env_changes) << "\n";
  }
  out << "policy" << (report.policy.source.empty() ? "" : " (" + terminal_safe(report.policy.source) + ")") << ":\n";
  for (const auto& line : describe_policy(report.policy)) {
    out << "  " << terminal_safe(line) << "\n";
  }
  for (const auto& change : report.diff->experiment_changes) {
    out << "changed: " << terminal_safe(change.experiment) << ": " << change.note() << "\n";
  }
  render_classes(out, report, paint);
  if (!report.refresh_command.empty()) {
    out << "\nto accept the run's values for the gated checks:\n  " << report.refresh_command << "\n";
    if (!report.proposed_baseline.empty()) {
      out << "proposed: " << report.proposed_baseline << " (" << report.proposal_changes << " changed, "
          << report.proposal_drops << " dropped); to apply it without the run:\n  " << report.proposal_command << "\n";
    }
  }
  return out.str();
}

std::string render_text_verdict_line(const Report& report, const TextOptions& options) {
  Painter paint(options.color);
  return verdict_line(report, paint);
}

}  // namespace driftgate

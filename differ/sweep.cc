#include "differ/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>

#include "core/error.h"

namespace driftgate {
namespace {

std::string format_value(double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

// Whether `check` passes the assert_close rule at (atol, rtol), or nullopt when the
// record cannot tell.
std::optional<bool> passes_at(const CheckRecord& check, double atol, double rtol) {
  if (!check.stats || (check.status != CheckStatus::k_pass && check.status != CheckStatus::k_fail_numeric)) {
    return false;  // crashed, other shape, NaN pattern, structure: no atol fixes it
  }
  const Tier1Stats& stats = *check.stats;
  const double recorded_rtol = check.tolerance.rtol;
  // min atol as a function of rtol, f(r) = max(0, max_i |a_i-b_i| - r|b_i|), is
  // non-increasing and convex; we know f(0) = max_abs and f(recorded) = min_atol.
  if (rtol == recorded_rtol) {
    return stats.min_atol <= atol;
  }
  if (rtol == 0.0) {
    return stats.max_abs <= atol;
  }
  // min_rtol is the smallest r with f(r) <= the recorded atol.
  const double recorded_atol = check.tolerance.atol;
  if (rtol >= stats.min_rtol && atol >= recorded_atol) {
    return true;
  }
  if (rtol < stats.min_rtol && atol <= recorded_atol) {
    return false;
  }
  if (rtol > recorded_rtol) {
    if (stats.min_atol <= atol) {
      return true;
    }
    return std::nullopt;
  }
  if (atol < stats.min_atol) {
    return false;
  }
  if (stats.max_abs <= atol) {
    return true;
  }
  // Convexity: f(rtol) <= f(0) + (f(recorded) - f(0)) * rtol / recorded.
  const double chord = stats.max_abs + (stats.min_atol - stats.max_abs) * (rtol / recorded_rtol);
  if (chord <= atol) {
    return true;
  }
  return std::nullopt;
}

std::string percent(int64_t passing, int64_t checks) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1f%% (%lld/%lld)",
                checks > 0 ? 100.0 * static_cast<double>(passing) / static_cast<double>(checks) : 0.0,
                static_cast<long long>(passing), static_cast<long long>(checks));
  return buffer;
}

void render_aligned(std::ostream& out, const std::vector<std::vector<std::string>>& cells) {
  std::vector<size_t> widths(cells.front().size(), 0);
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) {
      widths[c] = std::max(widths[c], line[c].size());
    }
  }
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) {
      const std::string pad(widths[c] - line[c].size(), ' ');
      out << (c == 0 ? line[c] + pad : "  " + pad + line[c]);
    }
    out << "\n";
  }
}

}  // namespace

bool is_task_check(const CheckRecord& check) { return check.task.has_value() || check.output.rfind("task:", 0) == 0; }

std::vector<double> parse_tolerance_list(const std::string& text, const std::string& option) {
  std::vector<double> values;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    char* rest = nullptr;
    double value = std::strtod(item.c_str(), &rest);
    if (item.empty() || rest == nullptr || *rest != '\0' || !std::isfinite(value) || value < 0.0) {
      throw Error(option + " '" + text + "': '" + item +
                  "' is not a non-negative number; give a comma-separated list such as 1e-6,1e-5,1e-4,1e-3");
    }
    values.push_back(value);
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return values;
}

SweepTable sweep_run(const RunFile& run, const SweepRequest& request) {
  SweepTable table;
  table.request = request;
  for (const CheckRecord& check : run.checks) {
    if (check.status == CheckStatus::k_skipped) {
      ++table.skipped;
      continue;
    }
    if (is_task_check(check)) {
      auto task_row = std::find_if(table.task_rows.begin(), table.task_rows.end(),
                                   [&](const TaskRow& item) { return item.target == check.target; });
      if (task_row == table.task_rows.end()) {
        task_row = table.task_rows.insert(table.task_rows.end(), TaskRow{check.target, 0, 0});
      }
      ++task_row->checks;
      task_row->passing += check.status == CheckStatus::k_pass ? 1 : 0;
      continue;
    }
    auto row = std::find_if(table.rows.begin(), table.rows.end(),
                            [&](const SweepRow& item) { return item.target == check.target; });
    if (row == table.rows.end()) {
      table.rows.push_back(SweepRow{check.target, 0, std::vector<int64_t>(request.atols.size(), 0)});
      row = table.rows.end() - 1;
    }
    ++row->checks;
    const double rtol = request.rtol.value_or(check.tolerance.rtol);
    for (size_t a = 0; a < request.atols.size(); ++a) {
      std::optional<bool> pass = passes_at(check, request.atols[a], rtol);
      if (!pass) {
        throw Error("check '" + check.id + "' was recorded at rtol " + format_value(check.tolerance.rtol) +
                    " (min atol " + format_value(check.stats->min_atol) + ", max |a-b| " +
                    format_value(check.stats->max_abs) + "); its verdict at atol " + format_value(request.atols[a]) +
                    ", rtol " + format_value(rtol) +
                    " does not follow from that. Sweep at the recorded rtol (omit --rtol) or at --rtol 0, or "
                    "re-run with tolerance rtol " +
                    format_value(rtol));
      }
      row->passing[a] += *pass ? 1 : 0;
    }
  }
  return table;
}

void render_sweep_text(std::ostream& out, const SweepTable& table) {
  out << "assert_close pass rate (|target - reference| <= atol + rtol*|reference|) at rtol "
      << (table.request.rtol ? format_value(*table.request.rtol) : std::string("as recorded per check")) << "\n";
  std::vector<std::string> header{"target", "checks"};
  for (double atol : table.request.atols) {
    header.push_back("atol=" + format_value(atol));
  }
  std::vector<std::vector<std::string>> cells{header};
  for (const SweepRow& row : table.rows) {
    std::vector<std::string> line{row.target, std::to_string(row.checks)};
    for (int64_t passing : row.passing) {
      line.push_back(percent(passing, row.checks));
    }
    cells.push_back(line);
  }
  render_aligned(out, cells);
  if (!table.task_rows.empty()) {
    out << "task checks (tier 3), judged by their task tolerances at every atol:\n";
    std::vector<std::vector<std::string>> task_cells{{"target", "checks", "pass"}};
    for (const TaskRow& row : table.task_rows) {
      task_cells.push_back({row.target, std::to_string(row.checks), percent(row.passing, row.checks)});
    }
    render_aligned(out, task_cells);
  }
  if (table.skipped > 0) {
    out << table.skipped << " skipped check(s) are not counted\n";
  }
}

}  // namespace driftgate

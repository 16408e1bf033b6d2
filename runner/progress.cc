#include "runner/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace driftgate {

std::string format_duration(double seconds) {
  const int64_t whole = std::max<int64_t>(0, static_cast<int64_t>(std::llround(seconds)));
  char text[48];
  if (whole < 60) {
    std::snprintf(text, sizeof text, "%lld s", static_cast<long long>(whole));
  } else if (whole < 3600) {
    std::snprintf(text, sizeof text, "%lld min %02lld s", static_cast<long long>(whole / 60),
                  static_cast<long long>(whole % 60));
  } else {
    std::snprintf(text, sizeof text, "%lld h %02lld min", static_cast<long long>(whole / 3600),
                  static_cast<long long>(whole % 3600 / 60));
  }
  return text;
}

Progress::Progress(std::ostream& out, bool terminal, int64_t total, Clock clock)
    : m_out(out),
      m_terminal(terminal),
      m_total(std::max<int64_t>(total, 0)),
      m_clock(std::move(clock)),
      m_start(m_clock()) {}

Progress::~Progress() {
  if (m_terminal && !m_shown.empty()) {
    m_out << "\n";
    m_out.flush();
  }
}

std::string Progress::status(const std::string& label) const {
  const double elapsed = std::chrono::duration<double>(m_clock() - m_start).count();
  std::string text =
      "[" + std::to_string(m_done) + "/" + std::to_string(m_total) + "] " + label + " (" + format_duration(elapsed);
  if (m_done > 0 && m_done < m_total) {
    // The steps so far, extrapolated: loads and forwards dominate every step alike.
    text += ", about " +
            format_duration(elapsed / static_cast<double>(m_done) * static_cast<double>(m_total - m_done)) + " left";
  }
  return text + ")";
}

void Progress::clear_status() {
  if (m_terminal && !m_shown.empty()) {
    m_out << "\r\x1b[K";  // carriage return, erase to the end of the line
    m_shown.clear();
  }
}

void Progress::step(const std::string& label) {
  m_done = std::min(m_done + 1, m_total);
  const std::string text = status(label);
  if (m_terminal) {
    clear_status();
    m_out << text;
    m_shown = text;
  } else {
    m_out << text << "\n";
  }
  m_out.flush();
}

void Progress::skip(int64_t steps) { m_done = std::min(m_done + std::max<int64_t>(steps, 0), m_total); }

void Progress::line(const std::string& text) {
  const std::string shown = m_shown;
  clear_status();
  m_out << text << "\n";
  if (!shown.empty()) {
    m_out << shown;  // the status line again, below the new result line
    m_shown = shown;
  }
  m_out.flush();
}

}  // namespace driftgate

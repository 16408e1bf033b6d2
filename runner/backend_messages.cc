#include "runner/backend_messages.h"

#include <algorithm>
#include <cctype>

#include "core/safe_text.h"

namespace driftgate {
namespace {

bool digits(std::string_view text, size_t from, size_t count) {
  if (from + count > text.size()) {
    return false;
  }
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(from),
                     text.begin() + static_cast<std::ptrdiff_t>(from + count),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// glog's "Lmmdd hh:mm:ss.uuuuuu threadid " prefix (LibTorch 1.13 writes the year too:
// "Lyyyymmdd ..."): the severity letter, the date and time, the thread id. Returns
// "L " + the rest, or the line as it was.
std::string_view drop_glog_prefix(std::string_view line, std::string& buffer) {
  if (line.empty() || std::string_view("IWEF").find(line[0]) == std::string_view::npos) {
    return line;
  }
  size_t date = 1;
  while (date < line.size() && std::isdigit(static_cast<unsigned char>(line[date])) != 0) {
    ++date;
  }
  const size_t time = date + 1;  // "hh:mm:ss.uuuuuu"
  if ((date != 5 && date != 9) || line.size() < time + 16 || line[date] != ' ' || !digits(line, time, 2) ||
      line[time + 2] != ':' || !digits(line, time + 3, 2) || line[time + 5] != ':' || !digits(line, time + 6, 2) ||
      line[time + 8] != '.' || !digits(line, time + 9, 6) || line[time + 15] != ' ') {
    return line;
  }
  size_t at = time + 16;
  while (at < line.size() && line[at] == ' ') {
    ++at;
  }
  size_t thread_end = at;
  while (thread_end < line.size() && std::isdigit(static_cast<unsigned char>(line[thread_end])) != 0) {
    ++thread_end;
  }
  if (thread_end == at || thread_end >= line.size() || line[thread_end] != ' ') {
    return line;
  }
  buffer.assign(1, line[0]);
  buffer += ' ';
  buffer.append(line.substr(thread_end + 1));
  return buffer;
}

// Cut to at most `max` bytes without splitting a UTF-8 character (the text is printable).
std::string cut(std::string text, size_t max) {
  if (text.size() <= max) {
    return text;
  }
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  text.resize(end);
  return text + "...";
}

}  // namespace

std::vector<std::string> message_lines(std::string_view bytes) {
  std::vector<std::string> lines;
  std::string buffer;
  while (!bytes.empty()) {
    size_t end = bytes.find('\n');
    std::string_view line = bytes.substr(0, end);
    bytes = end == std::string_view::npos ? std::string_view() : bytes.substr(end + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      continue;
    }
    lines.push_back(cut(escape_invisible(drop_glog_prefix(line, buffer)), k_backend_message_max));
  }
  return lines;
}

void add_backend_messages(std::vector<BackendMessage>& messages, const std::string& backend,
                          const std::vector<std::string>& lines) {
  const std::string more = k_more_backend_messages;
  for (const std::string& line : lines) {
    size_t distinct = 0;
    BackendMessage* found = nullptr;
    BackendMessage* overflow = nullptr;
    for (BackendMessage& message : messages) {
      if (message.backend != backend) {
        continue;
      }
      if (message.text == more) {
        overflow = &message;
        continue;
      }
      ++distinct;
      if (message.text == line) {
        found = &message;
      }
    }
    if (found != nullptr) {
      ++found->count;
    } else if (distinct < k_backend_messages_per_backend) {
      messages.push_back(BackendMessage{backend, line, 1});
    } else if (overflow != nullptr) {
      ++overflow->count;
    } else {
      messages.push_back(BackendMessage{backend, more, 1});
    }
  }
}

}  // namespace driftgate

#include "core/environment.h"

#include <cstdint>
#include <cstdio>

namespace driftgate {

std::string fnv1a_hex(const std::string& bytes) {
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

std::string Environment::key() const {
  std::string canonical;
  for (const auto& [field, value] : keyed) {
    canonical += field;
    canonical += '=';
    canonical += value;
    canonical += '\n';
  }
  return fnv1a_hex(canonical);
}

std::vector<EnvironmentChange> diff_environments(const Environment& before, const Environment& after) {
  std::vector<EnvironmentChange> changes;
  for (const auto& [field, value] : before.keyed) {
    auto it = after.keyed.find(field);
    std::string now = it == after.keyed.end() ? "" : it->second;
    if (now != value) {
      changes.push_back({field, value, now});
    }
  }
  for (const auto& [field, value] : after.keyed) {
    if (before.keyed.count(field) == 0) {
      changes.push_back({field, "", value});
    }
  }
  return changes;
}

std::string describe_changes(const std::vector<EnvironmentChange>& changes) {
  std::string text;
  for (const auto& change : changes) {
    if (!text.empty()) {
      text += ", ";
    }
    text += change.field + " " + (change.before.empty() ? "(none)" : change.before) + " -> " +
            (change.after.empty() ? "(none)" : change.after);
  }
  return text;
}

}  // namespace driftgate

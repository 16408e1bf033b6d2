#include "core/id_order.h"

#include <algorithm>
#include <cstdint>

namespace driftgate {

namespace {

struct Entry {
  uint64_t digit;  // 8 bytes of the id from the current offset, big-endian, zero-padded
  size_t index;
};

uint64_t digit_at(std::string_view id, size_t offset) {
  uint64_t digit = 0;
  for (size_t i = 0; i < 8; ++i) {
    size_t at = offset + i;
    uint64_t byte = at < id.size() ? static_cast<unsigned char>(id[at]) : 0;
    digit = (digit << 8) | byte;
  }
  return digit;
}

size_t common_prefix(const std::vector<std::string_view>& ids) {
  if (ids.empty()) {
    return 0;
  }
  size_t length = ids[0].size();
  for (std::string_view id : ids) {
    size_t i = 0;
    size_t limit = std::min(length, id.size());
    while (i < limit && id[i] == ids[0][i]) {
      ++i;
    }
    length = i;
  }
  return length;
}

// Sorts entries[begin, end), whose ids agree on their first `offset` bytes.
void sort_range(const std::vector<std::string_view>& ids, std::vector<Entry>& entries, size_t begin, size_t end,
                size_t offset) {
  for (size_t i = begin; i < end; ++i) {
    entries[i].digit = digit_at(ids[entries[i].index], offset);
  }
  std::sort(entries.begin() + static_cast<std::ptrdiff_t>(begin), entries.begin() + static_cast<std::ptrdiff_t>(end),
            [](const Entry& a, const Entry& b) { return a.digit < b.digit; });
  size_t next = offset + 8;
  for (size_t run = begin; run < end;) {
    size_t run_end = run + 1;
    while (run_end < end && entries[run_end].digit == entries[run].digit) {
      ++run_end;
    }
    if (run_end - run > 1) {
      // Equal digits: ids that end within this digit are prefixes of the others with
      // the same digit (the padding is zero), so shorter first; the rest go on.
      auto ends_here = [&](const Entry& entry) { return ids[entry.index].size() <= next; };
      auto first = entries.begin() + static_cast<std::ptrdiff_t>(run);
      auto last = entries.begin() + static_cast<std::ptrdiff_t>(run_end);
      auto longer = std::stable_partition(first, last, ends_here);
      std::sort(first, longer,
                [&](const Entry& a, const Entry& b) { return ids[a.index].size() < ids[b.index].size(); });
      size_t rest = run + static_cast<size_t>(longer - first);
      if (run_end - rest > 1) {
        sort_range(ids, entries, rest, run_end, next);
      }
    }
    run = run_end;
  }
}

}  // namespace

std::vector<size_t> id_order(const std::vector<std::string_view>& ids) {
  std::vector<Entry> entries(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    entries[i].index = i;
  }
  sort_range(ids, entries, 0, entries.size(), common_prefix(ids));
  std::vector<size_t> order(ids.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    order[i] = entries[i].index;
  }
  return order;
}

}  // namespace driftgate

#include "differ/id_order.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

namespace driftgate {

namespace {

struct Entry {
  uint64_t digit;  // 8 bytes of the id from the current offset, big-endian, zero-padded
  size_t index;
};

uint64_t digit_at(std::string_view id, size_t offset) {
  if (offset + 8 <= id.size()) {
    uint64_t word = 0;
    std::memcpy(&word, id.data() + offset, 8);
    return __builtin_bswap64(word);  // big-endian: the first byte most significant
  }
  uint64_t digit = 0;
  for (size_t i = 0; i < 8; ++i) {
    size_t at = offset + i;
    uint64_t byte = at < id.size() ? static_cast<unsigned char>(id[at]) : 0;
    digit = (digit << 8) | byte;
  }
  return digit;
}

// How many bytes from `offset` on the ids of entries[begin, end) all share (each id is
// at least `offset` long).
size_t common_prefix(const std::vector<std::string_view>& ids, const std::vector<Entry>& entries, size_t begin,
                     size_t end, size_t offset) {
  std::string_view first = ids[entries[begin].index];
  size_t length = first.size() - offset;
  for (size_t i = begin + 1; i < end && length > 0; ++i) {
    std::string_view id = ids[entries[i].index];
    size_t limit = std::min(length, id.size() - offset);
    const char* a = id.data() + offset;
    const char* b = first.data() + offset;
    size_t same = 0;
    for (; same + 8 <= limit; same += 8) {
      uint64_t x = 0;
      uint64_t y = 0;
      std::memcpy(&x, a + same, 8);
      std::memcpy(&y, b + same, 8);
      if (x != y) {
        break;
      }
    }
    while (same < limit && a[same] == b[same]) {
      ++same;
    }
    length = same;
  }
  return length;
}

// Sorts entries by digit: least significant byte first, one counting pass per byte that
// is not the same in all of them. For large ranges, where it beats std::sort.
void radix_sort(std::vector<Entry>& entries, size_t begin, size_t end, Entry* scratch) {
  size_t count = end - begin;
  uint64_t all_and = ~uint64_t{0};
  uint64_t all_or = 0;
  for (size_t i = begin; i < end; ++i) {
    all_and &= entries[i].digit;
    all_or |= entries[i].digit;
  }
  uint64_t varies = all_and ^ all_or;
  Entry* from = entries.data() + begin;
  Entry* to = scratch;
  for (int shift = 0; shift < 64; shift += 8) {
    if (((varies >> shift) & 0xff) == 0) {
      continue;
    }
    size_t counts[256] = {};
    for (size_t i = 0; i < count; ++i) {
      ++counts[(from[i].digit >> shift) & 0xff];
    }
    size_t sum = 0;
    for (size_t& c : counts) {
      size_t n = c;
      c = sum;
      sum += n;
    }
    for (size_t i = 0; i < count; ++i) {
      to[counts[(from[i].digit >> shift) & 0xff]++] = from[i];
    }
    std::swap(from, to);
  }
  if (from != entries.data() + begin) {
    std::copy(from, from + count, entries.data() + begin);
  }
}

// Sorts entries by digit when they are in few ascending runs (ids in a run file come
// in the order they were written, mostly by experiment and input, so long stretches
// are already in order): the runs are merged pairwise, log2(runs) passes.
void merge_runs(std::vector<Entry>& entries, size_t begin, size_t end, std::vector<size_t>& starts, Entry* scratch) {
  size_t count = end - begin;
  Entry* from = entries.data() + begin;
  Entry* to = scratch;
  auto less = [](const Entry& a, const Entry& b) { return a.digit < b.digit; };
  // starts: where each run begins (relative to begin), and `count` last.
  while (starts.size() > 2) {
    size_t kept = 0;
    for (size_t i = 0; i + 1 < starts.size(); i += 2) {
      size_t a = starts[i];
      size_t b = starts[i + 1];
      size_t c = i + 2 < starts.size() ? starts[i + 2] : b;
      std::merge(from + a, from + b, from + b, from + c, to + a, less);
      starts[kept++] = a;
    }
    starts[kept++] = count;
    starts.resize(kept);
    std::swap(from, to);
  }
  if (from != entries.data() + begin) {
    std::copy(from, from + count, entries.data() + begin);
  }
}

// Sorts entries[begin, end) by digit, as their order allows.
void sort_digits(std::vector<Entry>& entries, size_t begin, size_t end, Entry* scratch) {
  size_t count = end - begin;
  std::vector<size_t> starts{0};
  for (size_t i = begin + 1; i < end; ++i) {
    if (entries[i].digit < entries[i - 1].digit) {
      starts.push_back(i - begin);
      if (starts.size() > count / 16 + 1) {
        break;  // too many runs to merge
      }
    }
  }
  if (starts.size() == 1) {
    return;  // in order already
  }
  if (starts.size() <= count / 16 + 1) {
    starts.push_back(count);
    merge_runs(entries, begin, end, starts, scratch);
  } else if (count >= 2048) {
    radix_sort(entries, begin, end, scratch);
  } else {
    std::sort(entries.begin() + static_cast<std::ptrdiff_t>(begin), entries.begin() + static_cast<std::ptrdiff_t>(end),
              [](const Entry& a, const Entry& b) { return a.digit < b.digit; });
  }
}

// Sorts entries[begin, end), whose ids agree on their first `offset` bytes.
void sort_range(const std::vector<std::string_view>& ids, std::vector<Entry>& entries, size_t begin, size_t end,
                size_t offset, Entry* scratch) {
  for (size_t i = begin; i < end; ++i) {
    entries[i].digit = digit_at(ids[entries[i].index], offset);
  }
  sort_digits(entries, begin, end, scratch);
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
      auto longer = std::any_of(first, last, ends_here) ? std::stable_partition(first, last, ends_here) : first;
      std::sort(first, longer,
                [&](const Entry& a, const Entry& b) { return ids[a.index].size() < ids[b.index].size(); });
      size_t rest = run + static_cast<size_t>(longer - first);
      if (run_end - rest > 1) {
        // The bytes these ids all share past this digit decide nothing: skip them.
        sort_range(ids, entries, rest, run_end, next + common_prefix(ids, entries, rest, run_end, next), scratch);
      }
    }
    run = run_end;
  }
}

}  // namespace

std::vector<size_t> id_order(const std::vector<std::string_view>& ids) {
  // Each vector written once (not zeroed first): for a million ids, fresh memory the
  // kernel zeroes as it is first touched is most of the cost.
  std::vector<Entry> entries;
  entries.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    entries.push_back(Entry{0, i});
  }
  if (!entries.empty()) {
    std::unique_ptr<Entry[]> scratch(new Entry[entries.size()]);  // for the merges; touched only if used
    sort_range(ids, entries, 0, entries.size(), common_prefix(ids, entries, 0, entries.size(), 0), scratch.get());
  }
  std::vector<size_t> order;
  order.reserve(entries.size());
  for (const Entry& entry : entries) {
    order.push_back(entry.index);
  }
  return order;
}

}  // namespace driftgate

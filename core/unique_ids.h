// Duplicate detection over the check ids of a run file as it is read.
//
// A run may hold millions of checks; a std::set or std::unordered_set of the ids
// costs a node allocation per id and cache misses on every probe. This set keeps
// only (hash, index) pairs in one open-addressing table; the caller owns the ids,
// and a probe reads one only when its full 64-bit hash matches.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace driftgate {

class UniqueIds {
 public:
  // Adds the id at `index` of the caller's records; false (and nothing added) when an
  // equal id is already in the set. `id_of(i)` returns the id of record i.
  template <typename IdOf>
  bool insert(size_t index, const IdOf& id_of) {
    if ((m_size + 1) * 2 > m_slots.size()) {
      grow();
    }
    std::string_view id = id_of(index);
    uint64_t hash = std::hash<std::string_view>{}(id);
    size_t mask = m_slots.size() - 1;
    for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
      Slot& entry = m_slots[slot];
      if (entry.index == k_empty) {
        entry = Slot{hash, index};
        ++m_size;
        return true;
      }
      if (entry.hash == hash && id_of(entry.index) == id) {
        return false;
      }
    }
  }

  size_t size() const { return m_size; }

  // Sizes the table for `count` ids at once, instead of rehashing as it grows.
  void reserve(size_t count) {
    size_t slots = m_slots.empty() ? 1024 : m_slots.size();
    while (slots < count * 2 + 2) {
      slots *= 2;
    }
    if (slots > m_slots.size()) {
      rehash(slots);
    }
  }

 private:
  static constexpr size_t k_empty = SIZE_MAX;
  struct Slot {
    uint64_t hash = 0;
    size_t index = k_empty;
  };

  void grow() { rehash(m_slots.empty() ? 1024 : m_slots.size() * 2); }

  // Moves every entry into a table of `slots` slots (a power of two).
  void rehash(size_t slots) {
    std::vector<Slot> old(slots);
    old.swap(m_slots);
    size_t mask = m_slots.size() - 1;
    for (const Slot& entry : old) {
      if (entry.index == k_empty) {
        continue;
      }
      size_t slot = entry.hash & mask;
      while (m_slots[slot].index != k_empty) {
        slot = (slot + 1) & mask;
      }
      m_slots[slot] = entry;
    }
  }

  std::vector<Slot> m_slots;
  size_t m_size = 0;
};

}  // namespace driftgate

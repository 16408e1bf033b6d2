// Byte comparisons of the record's hot paths, inline: equality and order of short texts
// (check ids, experiment and output names) and the shared prefix of two lines.
//
// Why: a diff of a million checks compares ids and names some ten million times and
// its reader compares every member key of two million lines; through libc's memcmp, a
// call per comparison of twenty-odd bytes, that was a sixth of the diff's time. These
// compare in registers and give exactly the answers of memcmp and std::string_view's
// operators (bytes compared as unsigned char); tests/differ/run_digest_test.cc checks
// them against std on random texts.
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace driftgate {

// memcmp(a, b, n) == 0, in registers: sixteen bytes at a time (SSE2) from 16 on, two
// overlapping words below. Always inlined, so a literal's constant length folds the
// branches away (the canonical check reader compares every member's key this way).
__attribute__((always_inline)) inline bool same_bytes(const char* a, const char* b, size_t n) {
  auto word = [](const char* p, auto type) {
    decltype(type) value = 0;
    std::memcpy(&value, p, sizeof value);
    return value;
  };
  if (n >= 16) {
#if defined(__SSE2__)
    auto same16 = [a, b](size_t at) {
      __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + at));
      __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + at));
      return _mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) == 0xffff;
    };
    for (size_t at = 0; at + 16 < n; at += 16) {
      if (!same16(at)) {
        return false;
      }
    }
    return same16(n - 16);  // the tail, overlapping the last block
#else
    for (size_t at = 0; at + 8 < n; at += 8) {
      if (word(a + at, uint64_t{}) != word(b + at, uint64_t{})) {
        return false;
      }
    }
    return word(a + n - 8, uint64_t{}) == word(b + n - 8, uint64_t{});
#endif
  }
  if (n >= 8) {
    return ((word(a, uint64_t{}) ^ word(b, uint64_t{})) |
            (word(a + n - 8, uint64_t{}) ^ word(b + n - 8, uint64_t{}))) == 0;
  }
  if (n >= 4) {
    return ((word(a, uint32_t{}) ^ word(b, uint32_t{})) |
            (word(a + n - 4, uint32_t{}) ^ word(b + n - 4, uint32_t{}))) == 0;
  }
  if (n == 0) {
    return true;
  }
  // One to three bytes: the first, the middle and the last cover them.
  return ((a[0] ^ b[0]) | (a[n / 2] ^ b[n / 2]) | (a[n - 1] ^ b[n - 1])) == 0;
}

// How many leading bytes a[0, n) and b[0, n) share (sixteen at a time with SSE2).
inline size_t shared_prefix(const char* a, const char* b, size_t n) {
  size_t at = 0;
#if defined(__SSE2__)
  for (; at + 16 <= n; at += 16) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + at));
    __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + at));
    auto same = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)));
    if (same != 0xffff) {
      return at + static_cast<size_t>(__builtin_ctz(~same));
    }
  }
  if (at < n && n >= 16) {
    // The rest within the last sixteen bytes, which overlap those compared already.
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + n - 16));
    __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + n - 16));
    auto differ = ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y))) & 0xffff;
    differ >>= at - (n - 16);
    return differ == 0 ? n : at + static_cast<size_t>(__builtin_ctz(differ));
  }
#endif
  while (at < n && a[at] == b[at]) {
    ++at;
  }
  return at;
}

inline bool same_text(std::string_view a, std::string_view b) {
  return a.size() == b.size() && same_bytes(a.data(), b.data(), a.size());
}

// a < b as std::string_view's operator< orders them.
inline bool text_less(std::string_view a, std::string_view b) {
  size_t n = a.size() < b.size() ? a.size() : b.size();
  size_t at = 0;
  for (; at + 8 <= n; at += 8) {
    uint64_t x = 0;
    uint64_t y = 0;
    std::memcpy(&x, a.data() + at, 8);
    std::memcpy(&y, b.data() + at, 8);
    if (x != y) {
      return __builtin_bswap64(x) < __builtin_bswap64(y);  // the first differing byte decides
    }
  }
  for (; at < n; ++at) {
    auto x = static_cast<unsigned char>(a[at]);
    auto y = static_cast<unsigned char>(b[at]);
    if (x != y) {
      return x < y;
    }
  }
  return a.size() < b.size();
}

}  // namespace driftgate

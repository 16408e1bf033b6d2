#include "core/unique_ids.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

namespace driftgate {
namespace {

TEST(UniqueIds, AgreesWithStdSetOnManyIdsWithDuplicates) {
  std::mt19937 random(3);
  std::vector<std::string> ids;
  std::set<std::string> reference;
  UniqueIds set;
  auto id_of = [&ids](size_t index) { return std::string_view(ids[index]); };
  for (int i = 0; i < 50000; ++i) {
    ids.push_back("e" + std::to_string(random() % 40000) + "/in/cpu_fp32~t/out");
    bool fresh = reference.insert(ids.back()).second;
    ASSERT_EQ(set.insert(ids.size() - 1, id_of), fresh) << ids.back();
    if (!fresh) {
      ids.pop_back();  // the caller keeps only what was added, as parse_run throws instead
    }
  }
  EXPECT_EQ(set.size(), reference.size());
  EXPECT_LT(set.size(), 50000u);  // the test did see duplicates
}

// Sized up front (as parse_run does from the file size), before and after some ids
// are in: the same answers as growing, and growth past the reserved size still works.
TEST(UniqueIds, ReservingKeepsEveryIdAndStillGrows) {
  std::vector<std::string> ids;
  UniqueIds set;
  auto id_of = [&ids](size_t index) { return std::string_view(ids[index]); };
  set.reserve(100);
  for (int i = 0; i < 5000; ++i) {
    if (i == 50) {
      set.reserve(3000);  // with entries already in
    }
    ids.push_back("exp/in" + std::to_string(i) + "/cpu_fp32~t/out");
    ASSERT_TRUE(set.insert(ids.size() - 1, id_of)) << ids.back();
  }
  for (int i = 0; i < 5000; i += 7) {
    ids.push_back("exp/in" + std::to_string(i) + "/cpu_fp32~t/out");
    EXPECT_FALSE(set.insert(ids.size() - 1, id_of)) << ids.back();
    ids.pop_back();
  }
  EXPECT_EQ(set.size(), 5000u);
}

TEST(UniqueIds, EmptyAndEqualHashPrefixesAreDistinct) {
  std::vector<std::string> ids = {"", "a", "a\0b", "ab"};
  ids[2] = std::string("a\0b", 3);
  UniqueIds set;
  auto id_of = [&ids](size_t index) { return std::string_view(ids[index]); };
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_TRUE(set.insert(i, id_of));
  }
  ids.push_back("a");
  EXPECT_FALSE(set.insert(ids.size() - 1, id_of));
}

}  // namespace
}  // namespace driftgate

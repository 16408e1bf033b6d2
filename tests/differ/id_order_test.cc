#include "differ/id_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace driftgate {
namespace {

// The ids in the order id_order gives.
std::vector<std::string> ordered(const std::vector<std::string>& ids) {
  std::vector<std::string_view> views(ids.begin(), ids.end());
  std::vector<size_t> order = id_order(views);
  std::vector<std::string> result;
  for (size_t index : order) {
    result.push_back(ids.at(index));
  }
  return result;
}

std::vector<std::string> sorted(std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(IdOrder, EmptyAndSingle) {
  EXPECT_TRUE(id_order({}).empty());
  EXPECT_EQ(id_order({"only"}), std::vector<size_t>{0});
}

TEST(IdOrder, PrefixesSortBeforeTheIdsTheyPrefix) {
  // Zero bytes pad a short id's last digit: "ab" and "ab\0" tie on it and must still order.
  std::vector<std::string> ids = {
      "abcdefghij",   "ab", std::string("ab\0", 3), "", "abcdefgh", "abcdefghi", std::string("ab\0\0\0\0\0\0\0x", 10),
      "abcdefgh\xff", "a"};
  EXPECT_EQ(ordered(ids), sorted(ids));
}

TEST(IdOrder, BytesAboveAsciiCompareUnsigned) {
  std::vector<std::string> ids = {"e/\xc3\xa9", "e/z", "e/\x7f", "e/\x80", "e/A"};
  EXPECT_EQ(ordered(ids), sorted(ids));
}

TEST(IdOrder, AgreesWithStdSortOnRandomIdsWithLongCommonPrefixes) {
  std::mt19937 random(11);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::string> ids;
    int count = 1 + static_cast<int>(random() % 3000);
    for (int i = 0; i < count; ++i) {
      // Check-id shaped: shared experiment, numbered inputs and targets, a few outputs,
      // sometimes a short tail or a byte from the whole range.
      std::string id = "experiment_" + std::to_string(round % 3) + "/img_" + std::to_string(random() % 200) +
                       "/cpu_fp32~t" + std::to_string(random() % 40);
      if (random() % 4 != 0) {
        id += "/out[" + std::to_string(random() % 3) + "]";
      }
      if (random() % 50 == 0) {
        id += static_cast<char>(random() % 256);
      }
      ids.push_back(id);
    }
    ASSERT_EQ(ordered(ids), sorted(ids)) << "round " << round;
  }
}

TEST(IdOrder, IsAPermutation) {
  std::vector<std::string> ids = {"b", "a", "b", "c", "a"};  // duplicates too
  std::vector<std::string_view> views(ids.begin(), ids.end());
  std::vector<size_t> order = id_order(views);
  std::vector<size_t> indices = order;
  std::sort(indices.begin(), indices.end());
  EXPECT_EQ(indices, (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ordered(ids), sorted(ids));
}

}  // namespace
}  // namespace driftgate

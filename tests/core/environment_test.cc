#include "core/environment.h"

#include <gtest/gtest.h>

namespace driftgate {
namespace {

TEST(Environment, KeyIsStableAndIgnoresInfo) {
  Environment a;
  a.keyed = {{"libtorch", "1.13.1"}, {"onednn", "2.6.3"}};
  a.info = {{"cpu_model", "one"}};
  Environment b = a;
  b.info = {{"cpu_model", "another"}};
  EXPECT_EQ(a.key(), b.key());
  EXPECT_EQ(a.key().size(), 16U);
  // Pinned: the key must not change between driftgate versions for the same fields.
  EXPECT_EQ(fnv1a_hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a_hex("a"), "af63dc4c8601ec8c");
}

TEST(Environment, KeyChangesWithAnyKeyedField) {
  Environment a;
  a.keyed = {{"libtorch", "1.13.1"}, {"onednn", "2.6.3"}};
  Environment b = a;
  b.keyed["onednn"] = "3.1";
  EXPECT_NE(a.key(), b.key());
}

TEST(Environment, DescribesChanges) {
  Environment a;
  a.keyed = {{"onednn", "2.6.3"}, {"threads", "1"}};
  Environment b;
  b.keyed = {{"onednn", "3.1"}, {"threads", "1"}, {"blas", "openblas"}};
  EXPECT_EQ(describe_changes(diff_environments(a, b)), "onednn 2.6.3 -> 3.1, blas (none) -> openblas");
}

}  // namespace
}  // namespace driftgate

#include "ci/redactor.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace driftgate {
namespace {

TEST(Redactor, ReplacesEveryOccurrenceOfEverySecret) {
  Redactor redactor;
  redactor.add_secret("ghs_abcdef123456");
  redactor.add_secret("glpat-XYZW");
  EXPECT_EQ(redactor.redact("Authorization: Bearer ghs_abcdef123456, again ghs_abcdef123456; glpat-XYZW"),
            "Authorization: Bearer ***, again ***; ***");
}

TEST(Redactor, LongerSecretContainingAShorterOneIsRemovedWhole) {
  Redactor redactor;
  redactor.add_secret("abcd");
  redactor.add_secret("xxabcdxx");
  EXPECT_EQ(redactor.redact("[xxabcdxx] [abcd]"), "[***] [***]");
}

TEST(Redactor, EmptySecretIsIgnoredAndTinyOneRefused) {
  Redactor redactor;
  redactor.add_secret("");
  EXPECT_EQ(redactor.redact("text"), "text");
  EXPECT_THROW(redactor.add_secret("ab"), Error);
}

}  // namespace
}  // namespace driftgate

// parse_json_strict: nlohmann's parse, plus a refusal of any object that holds a key
// twice, named with a JSON Pointer (RFC 6901) to where it is.
#include "core/strict_json.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace driftgate {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json_strict(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(StrictJson, ReadsWhatNlohmannReads) {
  const std::string text = R"({"a":[1,{"b":2,"c":[{"d":null}]},"x"],"e":{"a":1},"f":{}})";
  EXPECT_EQ(parse_json_strict(text), nlohmann::json::parse(text));
  // The same key in different objects is no repetition.
  EXPECT_NO_THROW(parse_json_strict(R"([{"k":1},{"k":2},{"k":{"k":3}}])"));
}

TEST(StrictJson, RefusesARepeatedKeyNamingWhereItIs) {
  // nlohmann alone keeps the last value: the pull request would be #3.
  EXPECT_EQ(nlohmann::json::parse(R"({"pull_request":{"number":2,"number":3}})")["pull_request"]["number"], 3);
  EXPECT_EQ(error_of(R"({"pull_request":{"number":2,"number":3}})"),
            "the key 'number' appears twice in one object (at /pull_request/number); a repeated key is read "
            "differently by different tools, so it is refused");
  EXPECT_EQ(error_of(R"({"a":1,"a":1})").rfind("the key 'a' appears twice in one object (at /a);", 0), 0U);
  EXPECT_EQ(error_of(R"({"x":[0,{"y":[{},{"s":1,"s":2}]}]})")
                .rfind("the key 's' appears twice in one object (at /x/1/y/1/s);", 0),
            0U)
      << error_of(R"({"x":[0,{"y":[{},{"s":1,"s":2}]}]})");
  // JSON Pointer escapes '~' and '/' in keys.
  EXPECT_EQ(error_of(R"({"a/b":{"~":1,"~":2}})").rfind("the key '~' appears twice in one object (at /a~1b/~0);", 0),
            0U);
}

TEST(StrictJson, NestingIsBoundedBeforeAnyValueIsBuilt) {
  auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  EXPECT_NO_THROW(parse_json_strict(nested(k_json_max_depth)));
  const std::string refusal =
      "arrays and objects nest deeper than 128 levels; driftgate's files and the payloads it "
      "reads nest a few levels, so the input is malformed";
  EXPECT_EQ(error_of(nested(k_json_max_depth + 1)), refusal);
  // 100,000 levels, unclosed: refused at level 129, long before the end of the text.
  EXPECT_EQ(error_of("{\"message\":" + std::string(100000, '[')), refusal);
  // Objects count like arrays: {"a":{"a":...1...}} 200 deep.
  std::string objects;
  for (int i = 0; i < 200; ++i) {
    objects += "{\"a\":";
  }
  EXPECT_EQ(error_of(objects + "1" + std::string(200, '}')), refusal);
}

TEST(StrictJson, SyntaxErrorsStayNlohmannsParseErrors) {
  EXPECT_THROW(parse_json_strict("{\"a\":"), nlohmann::json::parse_error);
  EXPECT_THROW(parse_json_strict(""), nlohmann::json::parse_error);
}

}  // namespace
}  // namespace driftgate

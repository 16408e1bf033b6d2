#include "ci/url.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace driftgate {
namespace {

TEST(Url, ParsesSchemeHostPortAndTarget) {
  Url url = parse_url("https://ghe.example.com:8443/api/v3?x=1", "--api-url");
  EXPECT_EQ(url.scheme, "https");
  EXPECT_EQ(url.host, "ghe.example.com");
  EXPECT_EQ(url.port, 8443);
  EXPECT_EQ(url.target, "/api/v3?x=1");
  EXPECT_EQ(parse_url("http://[::1]:9/", "x").host, "::1");
  EXPECT_EQ(parse_url("https://api.github.com", "x").port, 443);
  EXPECT_EQ(parse_url("https://api.github.com", "x").target, "/");
}

TEST(Url, PlainHttpOnlyToLoopback) {
  EXPECT_NO_THROW(parse_api_url("http://127.0.0.1:8080/api/v4", "CI_API_V4_URL"));
  EXPECT_NO_THROW(parse_api_url("http://localhost/", "x"));
  try {
    parse_api_url("http://gitlab.example.com/api/v4", "CI_API_V4_URL");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "CI_API_V4_URL 'http://gitlab.example.com/api/v4': plain http would send the token in clear text; use "
              "https (plain http is allowed only to 127.0.0.1, ::1 or localhost)");
  }
}

TEST(Url, RejectsMalformed) {
  EXPECT_THROW(parse_url("api.github.com", "x"), Error);
  EXPECT_THROW(parse_url("ftp://x/", "x"), Error);
  EXPECT_THROW(parse_url("https://user:pw@x/", "x"), Error);
  EXPECT_THROW(parse_url("https://x:99999/", "x"), Error);
  EXPECT_THROW(parse_url("https://x:abc/", "x"), Error);
}

TEST(Url, EncodesPathSegments) {
  EXPECT_EQ(url_encode("group/sub project"), "group%2Fsub%20project");
  EXPECT_EQ(url_encode("a-b_c.d~9"), "a-b_c.d~9");
}

}  // namespace
}  // namespace driftgate

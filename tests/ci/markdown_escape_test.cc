#include "ci/markdown_escape.h"

#include <gtest/gtest.h>

namespace driftgate {
namespace {

TEST(MarkdownEscape, CodeSpanFenceOutgrowsBackticksAndKeepsOneLine) {
  EXPECT_EQ(code_span("plain"), "`plain`");
  EXPECT_EQ(code_span("a``b"), "```a``b```");
  EXPECT_EQ(code_span("`x`"), "`` `x` ``");
  EXPECT_EQ(code_span("a\nb|c"), "`a b\\|c`");
  // U+202E would reorder what a reviewer reads; a NUL would cut a pasted command.
  EXPECT_EQ(code_span(std::string("e0/\xE2\x80\xAEx\0y", 9)), "`e0/\\u202ex\\x00y`");
  EXPECT_EQ(escape_text("a\xE2\x80\xAE"
                        "b"),
            "a\\\\u202eb");
}

TEST(MarkdownEscape, TextCannotMentionLinkOrInjectHtml) {
  std::string escaped = escape_text("@octo-org/team <img src=x onerror=alert(1)> [click](https://evil.example)");
  EXPECT_EQ(escaped.find("@o"), std::string::npos) << escaped;
  EXPECT_EQ(escaped.find('<'), std::string::npos) << escaped;
  EXPECT_EQ(escaped.find("]("), std::string::npos) << escaped;
  EXPECT_EQ(escaped.find("https://"), std::string::npos) << escaped;
  EXPECT_EQ(escape_text("@bob"), std::string("@") + k_zero_width_joiner + "bob");
  EXPECT_EQ(escape_text("a&b \"q\""), "a&amp;b &quot;q&quot;");
}

// GitHub's extended www autolink turns "www.example.com" into a link without any scheme.
TEST(MarkdownEscape, WwwTextIsNotAutolinked) {
  std::string j = k_zero_width_joiner;
  EXPECT_EQ(escape_text("see www.evil.example now"), "see www" + j + ".evil.example now");
  EXPECT_EQ(escape_text("WWW.Evil.example"), "WWW" + j + ".Evil.example");
  EXPECT_EQ(escape_text("wwwwww.x"), "wwwwww" + j + ".x") << "the last www before the dot";
  EXPECT_EQ(escape_text("www"), "www");
  EXPECT_EQ(escape_text("www-x.y"), "www\\-x.y");
  for (const char* text : {"www.a.b", "(www.a.b)", "*www.a.b*", "x www.a.b"}) {
    EXPECT_EQ(escape_text(text).find("www."), std::string::npos) << text;
  }
}

TEST(MarkdownEscape, TruncatesOnUtf8Boundaries) {
  std::string text = "ab\xE2\x86\x92\xE2\x86\x92";  // ab→→ (8 bytes)
  EXPECT_EQ(truncate_utf8(text, 8), text);
  EXPECT_EQ(truncate_utf8(text, 7), "ab...");
  EXPECT_EQ(utf8_length(text), 4U);
  EXPECT_EQ(utf16_length(text), 4U);
  EXPECT_EQ(utf16_length("\xF0\x9F\x98\x80!"), 3U);  // U+1F600 is a surrogate pair
}

}  // namespace
}  // namespace driftgate

// Control and bidi characters: named, escaped for display, and quoted for a shell so
// that bash reads back exactly the original bytes (checked by running bash).
#include "core/safe_text.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

TEST(SafeText, NamesTheFirstInvisibleCharacter) {
  EXPECT_EQ(first_invisible("exp/in/cpu~gpu/out"), "");
  EXPECT_EQ(first_invisible("caf\xC3\xA9 \xE2\x9C\x93"), "");  // printable UTF-8 is fine
  EXPECT_EQ(first_invisible(std::string("a\0b", 3)), "U+0000 (a control character)");
  EXPECT_EQ(first_invisible("a\xE2\x80\xAE"
                            "b"),
            "U+202E (a bidirectional formatting character)");
  EXPECT_EQ(first_invisible("a\xE2\x81\xA6"
                            "b"),
            "U+2066 (a bidirectional formatting character)");
  EXPECT_EQ(first_invisible("a\xC2\x85"), "U+0085 (a control character)");
  EXPECT_EQ(first_invisible("a\x7f"), "U+007F (a control character)");
  EXPECT_EQ(first_invisible("a\xE2\x80\x8B"), "U+200B (an invisible character)");
  EXPECT_EQ(first_invisible("caf\xE9"), "the byte 0xE9 (not UTF-8)");       // Latin-1
  EXPECT_EQ(first_invisible("\xC0\xAF"), "the byte 0xC0 (not UTF-8)");      // overlong '/'
  EXPECT_EQ(first_invisible("\xED\xA0\x80"), "the byte 0xED (not UTF-8)");  // a surrogate
}

TEST(SafeText, EscapesInvisibleCharactersOnly) {
  EXPECT_EQ(escape_invisible(std::string("a\0b\\c", 5)), "a\\x00b\\c");
  EXPECT_EQ(escape_invisible("x\xE2\x80\xAEy\xC3\xA9"), "x\\u202ey\xC3\xA9");
  EXPECT_EQ(escape_invisible("caf\xE9"), "caf\\xe9");
  EXPECT_EQ(escape_invisible("a\tb\nc"), "a\\x09b\\x0ac");
  EXPECT_EQ(escape_invisible("a\tb\nc", /*keep_whitespace=*/true), "a\tb\nc");
}

TEST(SafeText, RequirePrintableQuotesTheTextEscaped) {
  try {
    require_printable(std::string("e0/in\0x/cpu~t0/out", 18), "check id");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "check id 'e0/in\\x00x/cpu~t0/out' holds U+0000 (a control character); ids and names must be printable "
              "text, since shells, terminals and PR comments would show or cut them otherwise");
  }
  EXPECT_NO_THROW(require_printable("ok", "name"));
}

// What bash reads back from `word`, byte for byte.
std::string bash_reads(const std::string& word) {
  test::TempDir temp;
  std::string script = temp / "s.sh";
  std::FILE* file = std::fopen(script.c_str(), "wb");
  std::string text = "printf %s " + word + "\n";
  std::fwrite(text.data(), 1, text.size(), file);
  std::fclose(file);
  std::FILE* pipe = ::popen(("bash " + script).c_str(), "r");
  std::string out;
  std::array<char, 256> buffer{};
  size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    out.append(buffer.data(), got);
  }
  ::pclose(pipe);
  return out;
}

TEST(SafeText, AnsiCQuoteRoundTripsThroughBash) {
  EXPECT_EQ(ansi_c_quote("a\xE2\x80\xAE"
                         "b"),
            "$'a\\xe2\\x80\\xaeb'");
  // NUL cannot travel in a shell word at all: bash cuts at it; everything else must come back.
  for (const std::string& text : {std::string("e0/it's\\x/\xE2\x80\xAE/out"), std::string("tab\there\nnl"),
                                  std::string("caf\xE9 \x7f \xC2\x85 $HOME `id`")}) {
    std::string quoted = ansi_c_quote(text);
    EXPECT_EQ(first_invisible(quoted), "") << quoted;
    EXPECT_EQ(bash_reads(quoted), text) << quoted;
  }
}

}  // namespace
}  // namespace driftgate

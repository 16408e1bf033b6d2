#include "runner/backend_messages.h"

#include <gtest/gtest.h>

namespace driftgate {
namespace {

TEST(BackendMessages, LinesAreNormalizedDeterministicAndPrintable) {
  const std::string bytes =
      "WARNING: Logging before InitGoogleLogging() is written to STDERR\n"
      "W20261206 03:00:09.590341 30918 Resize.cpp:17] Warning: resized\n"  // LibTorch 1.13's glog
      "E1206 03:00:09.590341   77 oops.cc:3] bad\r\n"                      // glog's own, padded thread id
      "W12 not a glog prefix\n"
      "\n   \n"
      "tab\tand \x1b[31mescape\x1b[0m and \xff byte  \n"
      "no newline at the end";
  EXPECT_EQ(message_lines(bytes),
            (std::vector<std::string>{"WARNING: Logging before InitGoogleLogging() is written to STDERR",
                                      "W Resize.cpp:17] Warning: resized", "E oops.cc:3] bad", "W12 not a glog prefix",
                                      "tab\\x09and \\x1b[31mescape\\x1b[0m and \\xff byte", "no newline at the end"}));
}

TEST(BackendMessages, LongLinesAreCutWithoutSplittingACharacter) {
  std::string line(k_backend_message_max - 1, 'a');
  line += "\xc3\xa9\xc3\xa9";  // é straddles the limit
  const std::vector<std::string> lines = message_lines(line);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], std::string(k_backend_message_max - 1, 'a') + "...");
}

TEST(BackendMessages, DuplicatesAreCountedPerBackendAndDistinctLinesBounded) {
  std::vector<BackendMessage> messages;
  add_backend_messages(messages, "cpu_fp32", {"x", "y", "x"});
  add_backend_messages(messages, "frozen", {"x"});
  add_backend_messages(messages, "cpu_fp32", {"x"});
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].backend, "cpu_fp32");
  EXPECT_EQ(messages[0].text, "x");
  EXPECT_EQ(messages[0].count, 3);
  EXPECT_EQ(messages[1].text, "y");
  EXPECT_EQ(messages[1].count, 1);
  EXPECT_EQ(messages[2].backend, "frozen");
  EXPECT_EQ(messages[2].count, 1);

  std::vector<std::string> many;
  for (size_t i = 0; i < k_backend_messages_per_backend + 5; ++i) {
    many.push_back("line " + std::to_string(i));
  }
  many.push_back("line 0");  // an old one is still counted
  std::vector<BackendMessage> bounded;
  add_backend_messages(bounded, "b", many);
  add_backend_messages(bounded, "b", {"line 99"});
  ASSERT_EQ(bounded.size(), k_backend_messages_per_backend + 1);
  EXPECT_EQ(bounded[0].count, 2);
  EXPECT_EQ(bounded.back().text, k_more_backend_messages);
  EXPECT_EQ(bounded.back().count, 6);
}

}  // namespace
}  // namespace driftgate

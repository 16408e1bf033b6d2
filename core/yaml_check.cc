#include "core/yaml_check.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/safe_text.h"

namespace driftgate {

namespace {

std::string location(const std::string& path, const YAML::Mark& mark) {
  if (mark.is_null()) {
    return path;
  }
  return path + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// The position of byte `offset` of `text` (lines and columns counted from 0, as yaml-cpp does).
YAML::Mark mark_at(const std::string& text, size_t offset) {
  YAML::Mark mark;
  mark.pos = static_cast<int>(offset);
  size_t line_start = 0;
  for (size_t at = text.find('\n'); at != std::string::npos && at < offset; at = text.find('\n', at + 1)) {
    ++mark.line;
    line_start = at + 1;
  }
  mark.column = static_cast<int>(offset - line_start);
  return mark;
}

// A NUL byte is never part of a YAML text file; yaml-cpp reads it as an escape or as a
// UTF-16/UTF-32 byte order, and keeps it inside quoted strings.
void refuse_nul(const std::string& text, const std::string& path) {
  size_t at = text.find('\0');
  if (at != std::string::npos) {
    throw Error(location(path, mark_at(text, at)) +
                ": the file holds a NUL byte here, so it is not a text file; save it as UTF-8 text "
                "(UTF-16 and UTF-32 are not read)");
  }
}

// Where a tab sits in the indentation of line `line` (0-based), if one does.
std::optional<YAML::Mark> tab_in_indentation(const std::string& text, int line) {
  size_t start = 0;
  for (int at = 0; at < line; ++at) {
    start = text.find('\n', start);
    if (start == std::string::npos) {
      return std::nullopt;
    }
    ++start;
  }
  for (size_t at = start; at < text.size() && (text[at] == ' ' || text[at] == '\t'); ++at) {
    if (text[at] == '\t') {
      return mark_at(text, at);
    }
  }
  return std::nullopt;
}

// The tags YAML's core schema defines: a value so tagged means what it says untagged.
bool is_core_tag(const std::string& tag) {
  static const char* const k_core[] = {"str", "int", "float", "bool", "null", "seq", "map"};
  // yaml-cpp reports "?" for a plain node without a tag and "!" for a quoted one or a lone "!".
  if (tag.empty() || tag == "?" || tag == "!") {
    return true;
  }
  const std::string prefix = "tag:yaml.org,2002:";
  for (const char* name : k_core) {
    if (tag == prefix + name) {
      return true;
    }
  }
  return false;
}

// As the file spells it: "!!binary" for "tag:yaml.org,2002:binary".
std::string shown_tag(const std::string& tag) {
  const std::string prefix = "tag:yaml.org,2002:";
  return escape_invisible(tag.compare(0, prefix.size(), prefix) == 0 ? "!!" + tag.substr(prefix.size()) : tag);
}

// Walks the events of each document: every node's tag, the nesting depth, and where
// each document's root starts. Throws Error at the first problem, before yaml-cpp's
// own recursion goes deeper than k_yaml_max_depth levels.
class Checker : public YAML::EventHandler {
 public:
  explicit Checker(const std::string& path) : m_path(path) {}

  void OnDocumentStart(const YAML::Mark&) override {
    m_in_root = true;
    m_depth = 0;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, "?"); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, "?"); }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t, const std::string&) override {
    node(mark, tag);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(mark, tag);
    enter(mark);
  }
  void OnSequenceEnd() override { --m_depth; }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(mark, tag);
    enter(mark);
  }
  void OnMapEnd() override { --m_depth; }

  const std::vector<YAML::Mark>& roots() const { return m_roots; }

 private:
  void node(const YAML::Mark& mark, const std::string& tag) {
    if (m_in_root) {
      m_roots.push_back(mark);
      m_in_root = false;
    }
    if (!is_core_tag(tag)) {
      throw Error(location(m_path, mark) + ": unknown YAML tag '" + shown_tag(tag) +
                  "'; driftgate reads plain YAML and resolves no tags (there is no include): remove the tag "
                  "and write the value itself");
    }
  }

  void enter(const YAML::Mark& mark) {
    if (++m_depth > k_yaml_max_depth) {
      throw Error(location(m_path, mark) + ": nesting deeper than " + std::to_string(k_yaml_max_depth) +
                  " levels of lists and mappings starts here; driftgate's files need a few levels: look for "
                  "an unclosed '[' or '{' or runaway indentation");
    }
  }

  const std::string& m_path;
  bool m_in_root = false;
  int m_depth = 0;
  std::vector<YAML::Mark> m_roots;
};

}  // namespace

std::vector<YAML::Mark> check_yaml(const std::string& text, const std::string& path, int documents) {
  refuse_nul(text, path);
  std::istringstream in(text);
  YAML::Parser parser(in);
  Checker checker(path);
  try {
    // At most `documents`: yaml-cpp 0.7's LoadAll never returns on some malformed input
    // (e.g. ",\x9b"), whose parser keeps reporting another document at the same place
    // (found by fuzz/fuzz_experiment).
    for (int document = 0; document < documents && parser.HandleNextDocument(checker); ++document) {
    }
  } catch (const YAML::Exception& e) {
    if (!e.mark.is_null()) {
      if (std::optional<YAML::Mark> tab = tab_in_indentation(text, e.mark.line)) {
        throw Error(location(path, *tab) +
                    ": a tab in the indentation; YAML forbids tabs for indentation: replace it with spaces");
      }
    }
    throw Error(location(path, e.mark) + ": not valid YAML: " + e.msg);
  }
  const std::vector<YAML::Mark>& roots = checker.roots();
  for (size_t at = 1; at < roots.size(); ++at) {
    if (roots[at].pos <= roots[at - 1].pos) {
      throw Error(location(path, roots[at]) + ": not valid YAML: the parser made no progress here (malformed input)");
    }
  }
  return roots;
}

namespace {

std::string double_range_reason(const std::string& text, bool decoded, double value) {
  size_t at = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  size_t digits = 0;
  bool nonzero = false;
  for (; at < text.size() && (std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == '.'); ++at) {
    digits += text[at] != '.';
    nonzero = nonzero || (text[at] >= '1' && text[at] <= '9');
  }
  if (digits == 0 || (at < text.size() && text[at] != 'e' && text[at] != 'E')) {
    return "";  // not a decimal number: .inf, .nan, words
  }
  if (!decoded) {
    // strtod says which end (in the C locale: driftgate sets none).
    errno = 0;
    char* end = nullptr;
    value = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || errno != ERANGE) {
      return "";
    }
    if (std::isinf(value)) {
      return "it overflows";
    }
  }
  if (nonzero && value == 0.0) {
    return "it underflows to 0";
  }
  if (nonzero && std::fpclassify(value) == FP_SUBNORMAL) {
    return "it underflows to a denormal, losing digits";
  }
  return "";
}

}  // namespace

std::string out_of_double_range(const std::string& text, bool decoded, double value) {
  const std::string reason = double_range_reason(text, decoded, value);
  if (reason.empty()) {
    return "";
  }
  return "is out of range (" + reason +
         "): a double holds 0 and magnitudes from 2.2250738585072014e-308 to 1.7976931348623157e+308; write a "
         "number in that range";
}

bool is_integer_literal(const std::string& text) {
  size_t at = text.empty() || (text[0] != '+' && text[0] != '-') ? 0 : 1;
  const bool hex = text.compare(at, 2, "0x") == 0 || text.compare(at, 2, "0X") == 0;
  at += hex ? 2 : 0;
  if (at == text.size()) {
    return false;
  }
  for (; at < text.size(); ++at) {
    const auto byte = static_cast<unsigned char>(text[at]);
    if (!(hex ? std::isxdigit(byte) : std::isdigit(byte))) {
      return false;
    }
  }
  return true;
}

}  // namespace driftgate

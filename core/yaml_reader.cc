#include "core/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"
#include "core/safe_text.h"
#include "core/suggest.h"
#include "core/yaml_check.h"

namespace driftgate {

namespace {

// What a node is, for "got ..." in messages.
std::string kind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return "an undefined value";
  }
}

}  // namespace

void YamlReader::fail(const YAML::Mark& mark, const std::string& message) const {
  if (mark.is_null()) {
    throw Error(m_path + ": " + message);
  }
  throw Error(m_path + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": " + message);
}

std::string YamlReader::location(const YAML::Node& node) const {
  const YAML::Mark mark = node.Mark();
  return m_path + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

YAML::Node YamlReader::load(const std::string& text, const char* second_document) const {
  // NUL bytes, tabs, deep nesting, unknown tags; the documents' roots.
  const std::vector<YAML::Mark> roots = check_yaml(text, m_path, second_document != nullptr ? 2 : 1);
  if (roots.size() > 1) {
    fail(roots[1], second_document);
  }
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(e.mark, "not valid YAML: " + e.msg);
  }
}

void YamlReader::expect_map(const YAML::Node& node, const std::string& what,
                            const std::vector<std::string>& allowed) const {
  if (!node.IsMap()) {
    fail(node.Mark(), what + " must be a mapping of keys to values, got " + kind(node));
  }
  std::set<std::string> seen;
  for (const auto& pair : node) {
    if (!pair.first.IsScalar()) {
      fail(pair.first.Mark(), "keys of " + what + " must be plain words");
    }
    const std::string key = pair.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      fail(pair.first.Mark(),
           "unknown key '" + key + "' in " + what + did_you_mean(key, allowed) + " (allowed: " + join(allowed) + ")");
    }
    if (!seen.insert(key).second) {
      fail(pair.first.Mark(), "duplicate key '" + key + "' in " + what);
    }
  }
}

YAML::Node YamlReader::required(const YAML::Node& map, const std::string& key, const std::string& what) const {
  YAML::Node value = map[key];
  if (!value) {
    fail(map.Mark(), what + " needs the key '" + key + "'");
  }
  return value;
}

std::string YamlReader::scalar(const YAML::Node& node, const std::string& what) const {
  if (!node.IsScalar()) {
    fail(node.Mark(), what + " must be a single value, got " + kind(node));
  }
  return node.Scalar();
}

std::string YamlReader::name(const YAML::Node& node, const std::string& what) const {
  std::string value = scalar(node, what);
  bool valid = !value.empty() && value.size() <= 64 && value != "." && value != "..";
  for (char c : value) {
    valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  }
  if (!valid) {
    fail(node.Mark(), what + " '" + value + "' must be 1-64 characters of letters, digits, '_', '-' or '.'");
  }
  return value;
}

double YamlReader::number(const YAML::Node& node, const std::string& what) const {
  std::string text = scalar(node, what);
  double value = 0.0;
  const bool decoded = YAML::convert<double>::decode(node, value);
  // yaml-cpp reads 1e-400 as 0 and 1e400 as a failure: say which end of the range it left.
  if (std::string problem = out_of_double_range(text, decoded, value); !problem.empty()) {
    fail(node.Mark(), what + " '" + text + "' " + problem);
  }
  if (!decoded || !std::isfinite(value)) {
    fail(node.Mark(), what + " must be a finite number, got '" + text + "'");
  }
  return value;
}

double YamlReader::number(const YAML::Node& node, const std::string& what, double low, double high) const {
  double value = 0.0;
  const bool decoded = node.IsScalar() && YAML::convert<double>::decode(node, value);
  if (node.IsScalar()) {
    if (std::string problem = out_of_double_range(node.Scalar(), decoded, value); !problem.empty()) {
      fail(node.Mark(), what + " '" + node.Scalar() + "' " + problem);
    }
  }
  if (!decoded || std::isnan(value)) {
    fail(node.Mark(), what + " must be a number, got '" + (node.IsScalar() ? node.Scalar() : "a collection") + "'");
  }
  if (value < low || value > high) {
    std::ostringstream range;
    range << what << " must be between " << low << " and " << high << ", got " << node.Scalar();
    fail(node.Mark(), range.str());
  }
  return value;
}

int64_t YamlReader::integer(const YAML::Node& node, const std::string& what, int64_t low, int64_t high) const {
  std::string text = scalar(node, what);
  int64_t value = 0;
  if (!YAML::convert<int64_t>::decode(node, value)) {
    if (is_integer_literal(text)) {  // digits that do not fit in 64 bits
      fail(node.Mark(), what + " must be between " + std::to_string(low) + " and " + std::to_string(high) + ", got " +
                            text + " (out of range)");
    }
    fail(node.Mark(), what + " must be a whole number, got '" + text + "'");
  }
  if (value < low || value > high) {
    fail(node.Mark(),
         what + " must be between " + std::to_string(low) + " and " + std::to_string(high) + ", got " + text);
  }
  return value;
}

bool YamlReader::boolean(const YAML::Node& node, const std::string& what) const {
  std::string text = scalar(node, what);
  bool value = false;
  if (!YAML::convert<bool>::decode(node, value)) {
    fail(node.Mark(), what + " must be true or false, got '" + text + "'");
  }
  return value;
}

size_t YamlReader::choice(const YAML::Node& node, const std::string& what,
                          const std::vector<std::string>& names) const {
  const std::string text = scalar(node, what);
  auto found = std::find(names.begin(), names.end(), text);
  if (found == names.end()) {
    fail(node.Mark(),
         "unknown " + what + " '" + text + "'" + did_you_mean(text, names) + " (one of: " + join(names) + ")");
  }
  return static_cast<size_t>(found - names.begin());
}

const YAML::Node& YamlReader::sequence(const YAML::Node& node, const std::string& what, size_t min_size) const {
  if (!node.IsSequence()) {
    fail(node.Mark(), what + " must be a list, got " + kind(node));
  }
  if (node.size() < min_size) {
    fail(node.Mark(),
         what + " must have at least " + std::to_string(min_size) + " entr" + (min_size == 1 ? "y" : "ies"));
  }
  return node;
}

std::vector<std::string> YamlReader::strings(const YAML::Node& node, const std::string& what) const {
  if (node.IsScalar()) {
    return {node.Scalar()};
  }
  if (!node.IsSequence() || node.size() == 0) {
    fail(node.Mark(), what + " must be a non-empty list");
  }
  std::vector<std::string> values;
  for (const auto& item : node) {
    values.push_back(scalar(item, what));
  }
  return values;
}

void YamlReader::require_file(const YAML::Node& node, const std::string& what, const std::string& resolved,
                              const std::string& hint) const {
  // The path is written into the run file (JSON: UTF-8 only) and shown in reports.
  if (std::string found = first_invisible(resolved); !found.empty()) {
    fail(node.Mark(), what + " '" + escape_invisible(node.Scalar()) + "': the path holds " + found +
                          "; run files and reports hold paths as UTF-8 text, so rename the file");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(resolved, ec)) {
    fail(node.Mark(), what + " '" + node.Scalar() + "' is a directory (" + resolved + "), not a file" + hint);
  }
  // A FIFO (reading it waits for a writer), a device (/dev/zero never ends) or a socket is
  // there, so "not found" would mislead: name what it is, in the words InputFile's refusals use.
  if (std::string type = non_regular_file_type(resolved); !type.empty()) {
    const bool vowel = std::string("aeiou").find(what[0]) != std::string::npos;
    const std::string also = resolved == node.Scalar() ? "" : " (" + resolved + ")";
    fail(node.Mark(), what + " '" + node.Scalar() + "'" + also + " is " + type +
                          ", not a regular file; driftgate reads " + (vowel ? "an " : "a ") + what +
                          " only from a regular file: give the path of one (relative to the config "
                          "file)");
  }
  if (!std::filesystem::is_regular_file(resolved, ec)) {
    fail(node.Mark(), what + " '" + node.Scalar() + "' not found (looked for " + resolved + ")" + hint);
  }
}

std::string YamlReader::join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) {
    text += (text.empty() ? "" : ", ") + item;
  }
  return text;
}

}  // namespace driftgate

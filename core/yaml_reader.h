// The one reader of driftgate's YAML files (experiment configs, their `task:` section,
// gate policies): typed values with positions, so that every error says
// "file:line:col: what; what to try", in the same words whichever file it is about.
//
// It exists because each file kind grew its own reader with its own messages ("(allowed:
// ...)" in one, "(known: ...)" in another). A mapping's keys are checked in one place
// (expect_map: a mapping, plain keys, each known and once, with a did-you-mean and the
// keys allowed), and so is every scalar kind. The checks every YAML text gets before
// yaml-cpp builds nodes (NUL bytes, tabs, depth, tags) are core/yaml_check.h's, run by
// load(). Where a new key goes: its reader's list of keys (k_*_keys beside the reader)
// and a line reading it there. Torch-free.
#pragma once

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"

namespace driftgate {

class YamlReader {
 public:
  // `path`: the file as messages name it.
  explicit YamlReader(std::string path) : m_path(std::move(path)) {}

  const std::string& path() const { return m_path; }

  // Throws driftgate::Error "path:line:col: message" ("path: message" for a null mark).
  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const;
  // "path:line:col" of `node`.
  std::string location(const YAML::Node& node) const;

  // The first document of `text`, after core/yaml_check.h's checks; "not valid YAML: ..."
  // at yaml-cpp's mark. `second_document`: when given, a second document is refused with
  // this message (what to do instead); otherwise only the first is checked and read.
  YAML::Node load(const std::string& text, const char* second_document = nullptr) const;

  // `node` is a mapping (else "<what> must be a mapping of keys to values, got ...") whose
  // keys are plain scalars, each in `allowed` ("unknown key 'k' in <what>; did you mean
  // 'x'? (allowed: a, b)") and each once ("duplicate key 'k' in <what>").
  void expect_map(const YAML::Node& node, const std::string& what, const std::vector<std::string>& allowed) const;
  // The node for `key` of a map checked by expect_map; "<what> needs the key 'key'" at the
  // map's position when absent.
  YAML::Node required(const YAML::Node& map, const std::string& key, const std::string& what) const;

  // A single value: "<what> must be a single value, got a list".
  std::string scalar(const YAML::Node& node, const std::string& what) const;
  // 1-64 letters, digits, '_', '-' or '.' (not "." or ".."): an experiment, input or backend name.
  std::string name(const YAML::Node& node, const std::string& what) const;
  // A finite number a double holds.
  double number(const YAML::Node& node, const std::string& what) const;
  // A number from `low` to `high` (an infinite `high` admits .inf): "<what> must be a
  // number, got 'x'" (a list or mapping: 'a collection'), "<what> must be between ...".
  double number(const YAML::Node& node, const std::string& what, double low, double high) const;
  // A whole number from `low` to `high`.
  int64_t integer(const YAML::Node& node, const std::string& what, int64_t low, int64_t high) const;
  bool boolean(const YAML::Node& node, const std::string& what) const;
  // One of `names`, as its index: "unknown <what> 'x'; did you mean 'y'? (one of: ...)".
  size_t choice(const YAML::Node& node, const std::string& what, const std::vector<std::string>& names) const;
  // The same over an enum's names (core/enum_names.h).
  template <typename Enum, size_t N>
  Enum choice(const YAML::Node& node, const std::string& what, const EnumName<Enum> (&table)[N]) const {
    return table[choice(node, what, enum_names(table))].value;
  }
  // A list of at least `min_size` entries.
  const YAML::Node& sequence(const YAML::Node& node, const std::string& what, size_t min_size) const;
  // One value or a non-empty list of values.
  std::vector<std::string> strings(const YAML::Node& node, const std::string& what) const;
  // `resolved`, the path the value at `node` names, is a regular file whose path run files
  // can hold (UTF-8, no invisible character); else "<what> '<value>' not found (looked for
  // ...)<hint>", "... is a directory", "... is a FIFO (named pipe), not a regular file; ...".
  void require_file(const YAML::Node& node, const std::string& what, const std::string& resolved,
                    const std::string& hint) const;

  // "a, b, c": the lists messages show.
  static std::string join(const std::vector<std::string>& items);

 private:
  std::string m_path;
};

}  // namespace driftgate

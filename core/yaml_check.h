// Checks every YAML reader in driftgate applies before yaml-cpp builds nodes
// (experiment configs, gate policies). yaml-cpp accepts some hostile input silently
// or reports it in words that mislead (issue 24):
//   - a NUL byte: "unknown escape character", or a quoted NUL kept in a value;
//   - a tab used for indentation: "illegal map value" or "illegal block entry";
//   - deep nesting: its recursion guard says "bad file" at depth 500;
//   - an unknown tag (`model: !include other.yaml`): ignored, the text used as is.
// Torch-free.
#pragma once

#include <yaml-cpp/mark.h>

#include <string>
#include <vector>

namespace driftgate {

// The deepest nesting of lists and mappings (the root counts as one level) a
// driftgate YAML file may have. Far below yaml-cpp's own guard (500) and any
// stack limit, also under AddressSanitizer.
constexpr int k_yaml_max_depth = 64;

// Parses the first `documents` documents of `text` as events (no nodes are built)
// and refuses, with "path:line:col: what; what to try" in a driftgate::Error:
// a NUL byte, a tab in the indentation of a line yaml-cpp fails on, nesting deeper
// than k_yaml_max_depth, a tag other than the core ones (!!str, !!int, !!float,
// !!bool, !!null, !!seq, !!map) or none, and invalid YAML ("not valid YAML: ...").
// Returns where each document's root node starts, at most `documents` of them.
std::vector<YAML::Mark> check_yaml(const std::string& text, const std::string& path, int documents = 1);

}  // namespace driftgate

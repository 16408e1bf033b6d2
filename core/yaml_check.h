// Checks every YAML reader in driftgate applies before yaml-cpp builds nodes
// (experiment configs, gate policies). yaml-cpp accepts some hostile input silently
// or reports it in words that mislead (issue 24):
//   - a NUL byte: "unknown escape character", or a quoted NUL kept in a value;
//   - a tab used for indentation: "illegal map value" or "illegal block entry";
//   - deep nesting: its recursion guard says "bad file" at depth 500;
//   - an unknown tag (`model: !include other.yaml`): ignored, the text used as is;
//   - a number outside a double: 1e-400 read as 0; an integer outside int64 (2^64)
//     failing as if it were no integer: the readers' number() and integer() (experiment,
//     task) ask the helpers below.
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

// Why `text`, a YAML scalar written as a decimal number, is one a double cannot hold, as the
// end of a message: "is out of range (it overflows | it underflows to 0 | it underflows to a
// denormal, losing digits): a double holds ...; write a number in that range"; or "" when it
// is in range or not a decimal number (.inf, .nan, words). Nonzero digits
// that read as 0 or as a denormal (which has lost precision) underflow. `decoded` and
// `value` are yaml-cpp's reading (YAML::convert<double>::decode): it reads 1e-400 as 0
// and fails on 1e400. Every YAML reader's number() calls it (experiment, task).
std::string out_of_double_range(const std::string& text, bool decoded, double value);

// An optional sign and decimal digits, or 0x and hex digits: yaml-cpp's integer syntax.
// A scalar so written that YAML::convert<int64_t> cannot decode is outside int64.
bool is_integer_literal(const std::string& text);

}  // namespace driftgate

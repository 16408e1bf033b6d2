// JSON read strictly where a repeated key could change what driftgate does.
//
// RFC 8259 leaves the meaning of an object with a repeated name open ("many
// implementations report the last name/value pair only"); nlohmann keeps the last,
// other readers the first. A payload or a run file whose `number` or `status` says
// one thing to a reviewer's tool and another to driftgate must be refused, not
// read one way: parse_json_strict parses as nlohmann::json::parse does and throws
// driftgate::Error naming the key and where it is (a JSON Pointer, RFC 6901) when an
// object holds a key twice.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace driftgate {

// Arrays and objects nested deeper than this are refused while parsing: nlohmann parses
// any depth, but copying or converting a value (nlohmann::json to ordered_json) recurses
// once per level, and 100,000 levels overflow the stack (under AddressSanitizer first).
// driftgate's files and the payloads it reads nest fewer than ten levels.
inline constexpr int k_json_max_depth = 128;

// Syntax errors throw nlohmann::json::parse_error as nlohmann::json::parse does; a
// repeated key throws driftgate::Error: "the key 'number' appears twice in one object
// (at /pull_request/number)"; nesting deeper than k_json_max_depth throws
// driftgate::Error too.
nlohmann::json parse_json_strict(std::string_view text);

}  // namespace driftgate

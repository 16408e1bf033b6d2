// The GitHub Actions event payload (GITHUB_EVENT_PATH), read one way by every command.
//
// `diff` and `baseline` take the pull request's base from it (ci_context.h) and
// `post github` takes where to post (github_target.h). A payload that one of them
// refuses must not be one the other reads silently: a top-level array that `post`
// refused once made `diff` gate as if there were no event. So both read it here:
// a regular file under the payload cap (core/input_file.h), JSON with no repeated key
// (core/strict_json.h) and an object at the top; a pull_request or
// pull_request_target event must carry its `pull_request` object. Every message names
// the file and ends with the caller's remedy (`--base REV` for diff, `--pr N --sha
// SHA` for post).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace driftgate {

// Reads the payload at `path`. Throws driftgate::Error "PATH (GITHUB_EVENT_PATH):
// WHAT; REMEDY" when it is not a readable JSON object.
nlohmann::json read_event_payload(const std::string& path, const std::string& remedy);

// The payload's `pull_request` object: nullptr for another event (`event_name`,
// GITHUB_EVENT_NAME, names one; or it is empty and the payload has no `pull_request`).
// Throws when a pull_request or pull_request_target event has no `pull_request`
// object, naming the object and the file, or when `pull_request` is not an object.
const nlohmann::json* pull_request_of(const nlohmann::json& payload, const std::string& path,
                                      const std::string& event_name, const std::string& remedy);

}  // namespace driftgate

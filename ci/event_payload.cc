#include "ci/event_payload.h"

#include "core/error.h"
#include "core/input_file.h"
#include "core/strict_json.h"

namespace driftgate {

namespace {

std::string where(const std::string& path) { return path + " (GITHUB_EVENT_PATH): "; }

const char* json_kind(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

}  // namespace

nlohmann::json read_event_payload(const std::string& path, const std::string& remedy) {
  nlohmann::json payload;
  try {
    payload = parse_json_strict(read_input_file(path, k_event_payload));
  } catch (const nlohmann::json::exception& e) {
    throw Error(where(path) + "not a valid event payload (" + e.what() + "); " + remedy);
  } catch (const Error& e) {
    std::string what = e.what();
    // The file reader's messages start with the path; a repeated key's does not.
    throw Error(what.rfind(path, 0) == 0 ? what : where(path) + what + "; " + remedy);
  }
  if (!payload.is_object()) {
    throw Error(where(path) + "not a valid event payload (the top level is " + json_kind(payload) +
                "; GitHub writes an object); " + remedy);
  }
  return payload;
}

const nlohmann::json* pull_request_of(const nlohmann::json& payload, const std::string& path,
                                      const std::string& event_name, const std::string& remedy) {
  bool pull_request_event = event_name == "pull_request" || event_name == "pull_request_target";
  if (!event_name.empty() && !pull_request_event) {
    return nullptr;  // another event: its own fields decide
  }
  auto it = payload.find("pull_request");
  if (it == payload.end()) {
    if (pull_request_event) {
      throw Error(where(path) + "a " + event_name +
                  " event without a pull_request object; the payload is not one GitHub wrote for that event "
                  "(GITHUB_EVENT_NAME); " +
                  remedy);
    }
    return nullptr;
  }
  if (!it->is_object()) {
    throw Error(where(path) + "pull_request is " + json_kind(*it) + ", not an object; the payload is not one GitHub " +
                "wrote; " + remedy);
  }
  return &*it;
}

}  // namespace driftgate

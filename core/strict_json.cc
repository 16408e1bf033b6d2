#include "core/strict_json.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "core/error.h"

namespace driftgate {

namespace {

using Json = nlohmann::json;

// One open object or array, while parsing.
struct Frame {
  bool array = false;
  std::size_t index = 0;                 // arrays: elements begun so far
  std::unordered_set<std::string> keys;  // objects: the keys so far
  std::string key;                       // objects: the current key
};

// "~" and "/" escaped as a JSON Pointer's reference tokens are (RFC 6901 section 3).
std::string pointer_token(const std::string& key) {
  std::string token;
  for (char c : key) {
    if (c == '~') {
      token += "~0";
    } else if (c == '/') {
      token += "~1";
    } else {
      token += c;
    }
  }
  return token;
}

std::string pointer(const std::vector<Frame>& frames) {
  std::string path;
  for (const Frame& frame : frames) {
    if (frame.array) {
      path += "/" + std::to_string(frame.index - 1);
    } else if (!frame.keys.empty()) {
      path += "/" + pointer_token(frame.key);
    }
  }
  return path;
}

}  // namespace

Json parse_json_strict(std::string_view text) {
  std::vector<Frame> frames;
  // A value starts inside an array: the array's next element.
  auto begin_value = [&frames] {
    if (!frames.empty() && frames.back().array) {
      ++frames.back().index;
    }
  };
  Json::parser_callback_t callback = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        begin_value();
        if (frames.size() >= static_cast<size_t>(k_json_max_depth)) {
          throw Error("arrays and objects nest deeper than " + std::to_string(k_json_max_depth) +
                      " levels; driftgate's files and the payloads it reads nest a few levels, so the input "
                      "is malformed");
        }
        frames.push_back(Frame{event == Json::parse_event_t::array_start, 0, {}, {}});
        break;
      case Json::parse_event_t::key: {
        Frame& frame = frames.back();
        frame.key = parsed.get_ref<const std::string&>();
        if (!frame.keys.insert(frame.key).second) {
          const std::string& key = frame.key;
          throw Error("the key '" + key + "' appears twice in one object (at " + pointer(frames) +
                      "); a repeated key is read differently by different tools, so it is refused");
        }
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        frames.pop_back();
        break;
      case Json::parse_event_t::value:
        // Scalars only: objects and arrays end with *_end.
        begin_value();
        break;
    }
    return true;
  };
  return Json::parse(text.begin(), text.end(), callback);
}

}  // namespace driftgate

// Scripted faults of the fake GitHub and GitLab servers: each fault answers the first
// request whose "METHOD path" contains its match, once, either with a status or by
// acting on the request and then dropping the connection mid-reply.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <deque>
#include <optional>
#include <string>

namespace driftgate::test {

// Removes and returns the first fault whose `match` occurs in `line`.
template <typename Fault>
std::optional<Fault> take_fault(std::deque<Fault>& faults, const std::string& line) {
  for (auto it = faults.begin(); it != faults.end(); ++it) {
    if (line.find(it->match) != std::string::npos) {
      Fault fault = *it;
      faults.erase(it);
      return fault;
    }
  }
  return std::nullopt;
}

// Replaces a reply that was already produced (the request took effect) with one whose
// content provider gives up, so the client sees the connection close mid-reply.
inline void drop_reply(httplib::Response& response) {
  std::size_t length = response.body.size() + 100;
  response.body.clear();
  response.set_content_provider(length, "application/json",
                                [](std::size_t, std::size_t, httplib::DataSink&) { return false; });
}

}  // namespace driftgate::test

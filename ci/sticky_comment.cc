#include "ci/sticky_comment.h"

#include <algorithm>
#include <optional>

#include "ci/api_client.h"
#include "core/error.h"

namespace driftgate {

namespace {

void check_marker_part(const std::string& value, const std::string& what) {
  bool ok = !value.empty() && value.size() <= 100 && std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           std::string("._/:=+-").find(c) != std::string::npos;
  });
  if (!ok) {
    throw Error(what + " '" + value +
                "': use 1-100 characters from A-Z a-z 0-9 . _ / : = + - (it names the sticky comment)");
  }
}

std::optional<ThreadComment> find_ours(CommentThread& thread, const std::string& user, const std::string& marker) {
  for (auto& comment : thread.list()) {
    // The marker must be the first line: a quote of our comment by someone else
    // is excluded by the author check, a mention of the marker text by the line check.
    if (comment.author == user && comment.body.compare(0, marker.size(), marker) == 0) {
      return comment;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string sticky_marker(const std::string& project, const std::string& key) {
  check_marker_part(project, "--project");
  check_marker_part(key, "--key");
  return "<!-- driftgate-sticky project=" + project + " key=" + key + " -->";
}

StickyResult upsert_sticky_comment(CommentThread& thread, const std::string& marker, const std::string& body,
                                   Clock& clock, const RetryPolicy& policy, int rounds) {
  std::string user = thread.own_author();
  if (user.empty()) {
    throw Error("cannot tell whose comments are ours: the token's own user is unknown");
  }
  for (int round = 0;; ++round) {
    if (std::optional<ThreadComment> ours = find_ours(thread, user, marker)) {
      thread.update(ours->id, body);
      return StickyResult{false, ours->id};
    }
    try {
      return StickyResult{true, thread.create(body)};
    } catch (const ApiError& e) {
      if (!e.maybe_applied() || round + 1 >= rounds) {
        throw;
      }
      clock.sleep_for(std::chrono::milliseconds(policy.initial_backoff) * (1 << round));
    }
  }
}

}  // namespace driftgate

// One comment per (project, matrix key) on a pull or merge request, updated in
// place on every run instead of piling up.
//
// A comment is ours when it carries the hidden marker line AND was written by the
// token's own user: anyone can paste the marker into a comment, and that comment
// must not be overwritten (nor can it be, with another user's token). Who the
// token's user is depends on the service: GitLab's GET /user answers for every
// token; GitHub's answers 403 for GitHub App installation tokens such as the
// Actions GITHUB_TOKEN, whose comments are by the app's bot (see github_api.h). Creating is the
// risky step: a create whose response was lost (dropped connection, 5xx) may have
// happened, so instead of retrying the POST the thread is listed again and the
// comment, if it now exists, is updated. Hence a retried create never leaves two.
#pragma once

#include <string>
#include <vector>

#include "ci/clock.h"
#include "ci/retry_policy.h"

namespace driftgate {

struct ThreadComment {
  std::string id;
  std::string author;  // as own_author() names the token's user: GitHub login, GitLab user id
  std::string body;
};

// A PR's or MR's comments as the API shows them (GitHub issue comments, GitLab notes).
class CommentThread {
 public:
  virtual ~CommentThread() = default;
  virtual std::string own_author() = 0;                     // the token's user, never empty
  virtual std::vector<ThreadComment> list() = 0;            // every page, oldest first
  virtual std::string create(const std::string& body) = 0;  // returns the new id; throws ApiError
  virtual void update(const std::string& id, const std::string& body) = 0;
};

// "<!-- driftgate-sticky project=PROJECT key=KEY -->". Throws driftgate::Error
// when project or key holds characters outside [A-Za-z0-9._/:=+-] or is over 100
// characters (they end up in an HTML comment and must not close it).
std::string sticky_marker(const std::string& project, const std::string& key);

struct StickyResult {
  bool created = false;  // false: an existing comment was updated
  std::string id;
};

// Updates our comment carrying `marker`, or creates it. At most `rounds` creates
// are attempted, each after a fresh listing; ApiErrors other than "may have been
// applied" propagate at once.
StickyResult upsert_sticky_comment(CommentThread& thread, const std::string& marker, const std::string& body,
                                   Clock& clock, const RetryPolicy& policy, int rounds = 3);

}  // namespace driftgate

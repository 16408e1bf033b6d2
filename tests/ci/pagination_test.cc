// Comment listings that never end, loop, or answer a create without an id: each is an
// error, and no comment is created after a listing that did not complete (a sticky
// comment on an unread page would otherwise get a twin).
//
// The fakes answer as the services document paging: GitHub's `Link: <url>; rel="next"`
// header ("Using pagination in the REST API", docs.github.com/en/rest/using-the-rest-api/
// using-pagination-in-the-rest-api) and GitLab's X-Next-Page header, empty on the last
// page (docs.gitlab.com/ee/api/rest/#pagination-link-header).
#include <gtest/gtest.h>

#include <string>

#include "ci/api_client.h"
#include "ci/github_api.h"
#include "ci/gitlab_api.h"
#include "ci/redactor.h"
#include "ci/sticky_comment.h"
#include "core/error.h"
#include "tests/ci/post_test_support.h"

namespace driftgate {
namespace {

const std::string k_github = "https://api.github.com";
const std::string k_gitlab = "https://gitlab.example.com/api/v4";

HttpResponse page(const std::string& body, HttpHeaders headers = {}) { return HttpResponse{200, headers, body, ""}; }

HttpResponse github_page(const std::string& next) {
  return page("[]", next.empty() ? HttpHeaders{} : HttpHeaders{{"Link", "<" + next + ">; rel=\"next\""}});
}

std::string github_comments(int page_number) {
  return k_github + "/repos/o/r/issues/7/comments?per_page=100&page=" + std::to_string(page_number);
}

struct Harness {
  test::RecordingTransport transport;
  test::FakeClock clock;
  Redactor redactor;
  ApiClient client{transport, clock, redactor, ApiConfig{}};
  int posts() const {
    int count = 0;
    for (const auto& request : transport.requests) {
      count += request.method == "POST" ? 1 : 0;
    }
    return count;
  }
};

std::string upsert_error(CommentThread& thread, test::FakeClock& clock) {
  try {
    upsert_sticky_comment(thread, sticky_marker("p", "k"), "body", clock, RetryPolicy{});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Pagination, GithubListingThatLoopsIsAnErrorAndCreatesNothing) {
  Harness h;
  h.transport.script = {github_page(github_comments(2)), github_page(github_comments(3)),
                        github_page(github_comments(2))};
  GithubApi api(h.client, k_github, "o/r");
  GithubThread thread(api, 7, "bot");
  EXPECT_EQ(upsert_error(thread, h.clock), "GitHub API: GET " + k_github +
                                               "/repos/o/r/issues/7/comments?per_page=100: page 3's Link header leads "
                                               "back to a page already read (" +
                                               github_comments(2) +
                                               "); the listing loops, so no comment was created or updated");
  EXPECT_EQ(h.transport.requests.size(), 3U);
  EXPECT_EQ(h.posts(), 0);
}

TEST(Pagination, GithubListingThatNeverEndsStopsAfter100PagesAndCreatesNothing) {
  Harness h;
  for (int i = 2; i <= 200; ++i) {
    h.transport.script.push_back(github_page(github_comments(i)));
  }
  GithubApi api(h.client, k_github, "o/r");
  GithubThread thread(api, 7, "bot");
  EXPECT_EQ(upsert_error(thread, h.clock),
            "GitHub API: GET " + k_github +
                "/repos/o/r/issues/7/comments?per_page=100 still has a next page after 100 pages of 100 comments; "
                "the listing does not end, so no comment was created or updated");
  EXPECT_EQ(h.transport.requests.size(), 100U);
  EXPECT_EQ(h.posts(), 0);
}

TEST(Pagination, GithubCreateWithoutAnIdIsAnError) {
  Harness h;
  h.transport.script = {github_page(""), HttpResponse{201, {}, R"({"id":"12"})", ""}};
  GithubApi api(h.client, k_github, "o/r");
  GithubThread thread(api, 7, "bot");
  EXPECT_EQ(upsert_error(thread, h.clock),
            "GitHub API: POST comment on #7 answered without a numeric \"id\"; the comment may exist, but cannot be "
            "updated by id");
}

TEST(Pagination, GithubCommentIdsAreNeverWrapped) {
  Harness h;
  // 2^64 - 1 read as a signed integer would be -1; the comment must not be taken as ours by that id.
  h.transport.script = {page(
      R"([{"id":18446744073709551615,"user":{"login":"bot"},"body":"x"},{"id":-5,"user":{"login":"bot"},"body":"y"}])")};
  GithubApi api(h.client, k_github, "o/r");
  std::vector<ThreadComment> comments = api.list_comments(7);
  ASSERT_EQ(comments.size(), 2U);
  EXPECT_EQ(comments[0].id, "18446744073709551615");
  EXPECT_EQ(comments[1].id, "");
}

HttpResponse gitlab_page(const std::string& next) { return page("[]", {{"X-Next-Page", next}}); }

TEST(Pagination, GitlabListingThatLoopsIsAnErrorAndCreatesNothing) {
  Harness h;
  h.transport.script = {page(R"({"id":42})"), gitlab_page("2"), gitlab_page("2")};
  GitlabApi api(h.client, k_gitlab, "g/p");
  GitlabThread thread(api, 7);
  EXPECT_EQ(upsert_error(thread, h.clock),
            "GitLab API: GET " + k_gitlab +
                "/projects/g%2Fp/merge_requests/7/notes?sort=asc&order_by=created_at&per_page=100: X-Next-Page 2 "
                "after page 2 does not move forward; the listing loops, so no note was created or updated");
  EXPECT_EQ(h.posts(), 0);
}

TEST(Pagination, GitlabListingThatNeverEndsStopsAfter100PagesAndCreatesNothing) {
  Harness h;
  h.transport.script.push_back(page(R"({"id":42})"));
  for (int i = 2; i <= 200; ++i) {
    h.transport.script.push_back(gitlab_page(std::to_string(i)));
  }
  GitlabApi api(h.client, k_gitlab, "g/p");
  GitlabThread thread(api, 7);
  std::string error = upsert_error(thread, h.clock);
  EXPECT_NE(error.find("still has a next page after 100 pages of 100 notes; the listing does not end, so no note "
                       "was created or updated"),
            std::string::npos)
      << error;
  EXPECT_EQ(h.transport.requests.size(), 101U);  // GET /user, then 100 pages
  EXPECT_EQ(h.posts(), 0);
}

TEST(Pagination, GitlabListingThatEndsLetsTheNoteBeCreated) {
  Harness h;
  h.transport.script = {page(R"({"id":42})"), gitlab_page("2"), gitlab_page(""),
                        HttpResponse{201, {}, R"({"id":9})", ""}};
  GitlabApi api(h.client, k_gitlab, "g/p");
  GitlabThread thread(api, 7);
  StickyResult result = upsert_sticky_comment(thread, sticky_marker("p", "k"), "body", h.clock, RetryPolicy{});
  EXPECT_TRUE(result.created);
  EXPECT_EQ(result.id, "9");
  EXPECT_EQ(h.posts(), 1);
}

}  // namespace
}  // namespace driftgate

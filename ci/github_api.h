// The GitHub REST calls `driftgate post github` makes, over ApiClient.
//
// Operations follow GitHub's OpenAPI description (shared/api/github): issue
// comments on the PR (list with per_page=100 and the Link header, create,
// update), a commit status, a check run, a pull request and the PRs of a commit.
// GET /user names the token's own user when it is a user's (personal) token; a
// GitHub App installation token, the Actions GITHUB_TOKEN included, gets a 403
// "Resource not accessible by integration" there, and its comments are by the
// app's bot user: github-actions[bot] for GITHUB_TOKEN. Comments are matched by
// login, which (unlike the bot's numeric id) is the same on github.com and GitHub
// Enterprise; logins compare case-insensitively, so they are kept in lower case.
// Headers: Accept
// application/vnd.github+json, X-GitHub-Api-Version 2022-11-28, a User-Agent,
// Authorization: Bearer.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ci/api_client.h"
#include "ci/sticky_comment.h"

namespace driftgate {

inline constexpr const char* k_github_api_version = "2022-11-28";
// The author of everything posted with the Actions GITHUB_TOKEN.
inline constexpr const char* k_github_actions_login = "github-actions[bot]";

// True for a GitHub login as --comment-author takes it: 1-39 letters, digits or
// hyphens, optionally followed by "[bot]" (a GitHub App's bot user).
bool is_github_login(const std::string& login);

// A login in lower case (GitHub logins compare case-insensitively).
std::string lower_login(std::string login);

// The headers of every GitHub call.
HttpHeaders github_headers(const std::string& token);

// Advice for a failed GitHub call: which `permissions:` entry a 403 "Resource not
// accessible by integration" needs, what a 401 or 404 usually means.
std::string github_advice(const HttpRequest& request, const HttpResponse& response);

// The URL of rel="next" in a Link header, or "".
std::string next_link(const std::string& link_header);

struct GithubPull {
  int number = 0;
  std::string state;  // "open", "closed"
  std::string head_sha;
  std::string base_repo;  // "owner/name" the PR targets
};

class GithubApi {
 public:
  // `api_url` without a trailing slash; `repo` is "owner/name".
  GithubApi(ApiClient& client, std::string api_url, std::string repo)
      : m_client(client), m_api_url(std::move(api_url)), m_repo(std::move(repo)) {}

  // GET /user's login in lower case, or nullopt when the token is a GitHub App
  // installation token (403 "Resource not accessible by integration"). Other
  // failures (401 bad token, ...) throw ApiError.
  std::optional<std::string> authenticated_login();
  // Every comment of the PR (per_page=100, following Link rel="next"); authors as
  // lower-case logins.
  std::vector<ThreadComment> list_comments(int pr);
  std::string create_comment(int pr, const std::string& body);
  void update_comment(const std::string& id, const std::string& body);
  // state: "success", "failure", "error", "pending"; description is cut to 140 characters.
  void create_status(const std::string& sha, const std::string& state, const std::string& context,
                     const std::string& description, const std::string& target_url);
  // A completed check run; conclusion "success", "failure", "neutral".
  void create_check_run(const std::string& sha, const std::string& name, const std::string& conclusion,
                        const std::string& title, const std::string& summary, const std::string& details_url);
  GithubPull get_pull(int number);
  // GET commits/{sha}/pulls: the PRs GitHub associates with a commit of this
  // repository; [] for a commit that exists only in a fork.
  std::vector<int> pulls_of_commit(const std::string& sha);
  // GET pulls?state=open&head=OWNER:BRANCH: the open PRs from that head (a fork's
  // owner and branch, as workflow_run.head_repository and head_branch name them).
  std::vector<int> open_pulls_from(const std::string& owner, const std::string& branch);

 private:
  std::string repo_url() const { return m_api_url + "/repos/" + m_repo; }

  ApiClient& m_client;
  std::string m_api_url;
  std::string m_repo;
};

// One PR's comments as a CommentThread; `author` is the token's login (lower case).
class GithubThread : public CommentThread {
 public:
  GithubThread(GithubApi& api, int pr, std::string author) : m_api(api), m_pr(pr), m_author(std::move(author)) {}
  std::string own_author() override { return m_author; }
  std::vector<ThreadComment> list() override { return m_api.list_comments(m_pr); }
  std::string create(const std::string& body) override { return m_api.create_comment(m_pr, body); }
  void update(const std::string& id, const std::string& body) override { m_api.update_comment(id, body); }

 private:
  GithubApi& m_api;
  int m_pr;
  std::string m_author;
};

}  // namespace driftgate

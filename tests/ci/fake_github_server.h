// A fake GitHub REST API for the posting tests: a cpp-httplib server on 127.0.0.1
// (ephemeral port), started by the constructor and stopped by the destructor.
//
// Every request is checked against GitHub's OpenAPI description (method, path,
// query, body) and for the headers GitHub requires (Accept, X-GitHub-Api-Version,
// User-Agent, Authorization: Bearer); every response it sends is checked against
// the documented shape. Both kinds of finding land in violations(), which each
// test expects to be empty. Bodies over GitHub's limits (comment 65,536
// characters, check-run summary 65,535 bytes) get its 422. Users and pull requests are built from the real
// webhook payloads in shared/api/github/events. Faults are scripted per request:
// a status with headers (429, 500, 403 ...) or a connection dropped after the
// server acted (the reply is lost).
//
// The token is, as in a workflow, the Actions GITHUB_TOKEN (a GitHub App
// installation token) unless a test says otherwise: GET /user answers it 403
// "Resource not accessible by integration", as GitHub does, and what it writes is
// authored by github-actions[bot]. A personal token's user is served by GET /user,
// and GitHub refuses it check runs.
//
// Pull requests from forks are served as GitHub serves them: GET
// /repos/{base}/commits/{sha}/pulls answers [] for a commit that exists only in the
// fork (the commit is not an object of the base repository), while GET
// /repos/{base}/pulls?head=OWNER:BRANCH lists the fork's PR. Seen on github.com and
// reported in public trackers: TooTallNate/nx.js#410 ("GET /repos/TooTallNate/nx.js/
// commits/f638034.../pulls -> []"), retransmission/retransmission#280, nerva-project/
// nerva#79, google/go-github#2241 ("only works with open PRs from different branches
// in the same repo, not from forks").
#pragma once

#include <httplib.h>

#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/ci/openapi_validator.h"

namespace driftgate::test {

class FakeGithubServer {
 public:
  struct Comment {
    long long id = 0;
    long long author_id = 0;
    std::string author_login;
    std::string body;
  };

  enum class TokenKind { installation, personal };
  // github.com's id of github-actions[bot].
  static constexpr long long k_actions_bot_id = 41898282;

  // `api_dir` is shared/api; `repo` the repository served ("octo/app").
  FakeGithubServer(const std::string& api_dir, std::string repo, std::string token);
  ~FakeGithubServer();
  FakeGithubServer(const FakeGithubServer&) = delete;
  FakeGithubServer& operator=(const FakeGithubServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }

  // Who the token belongs to (default: installation, k_actions_bot_id, "github-actions[bot]").
  void set_token_owner(TokenKind kind, long long id, const std::string& login);
  long long own_id() const;
  // A comment by the token's own user.
  void add_own_comment(int pr, const std::string& body);
  // A comment by someone else.
  void add_comment(int pr, long long author_id, const std::string& login, const std::string& body);
  // A pull request into `base_repo` from `head_repo`:`head_ref` ("" head_repo: base_repo, a
  // same-repository branch; another repository: a fork).
  void add_pull(int number, const std::string& state, const std::string& head_sha, const std::string& base_repo,
                const std::string& head_repo = "", const std::string& head_ref = "feature");

  // The next `times` requests whose "METHOD path" contains `match` get this answer
  // instead of being served.
  void fail_next(const std::string& match, int status, httplib::Headers headers, const std::string& body,
                 int times = 1);
  // The next matching request is served (its effect happens) but the connection
  // drops before the reply arrives.
  void drop_after_apply_next(const std::string& match);

  std::vector<Comment> comments(int pr) const;
  std::vector<nlohmann::json> statuses() const;
  std::vector<nlohmann::json> check_runs() const;
  std::vector<std::string> violations() const;
  // Returns the violations so far and forgets them (tests of the validation itself).
  std::vector<std::string> take_violations();
  // Requests received whose "METHOD path" contains `match`.
  int requests(const std::string& match) const;

 private:
  struct Fault {
    std::string match;
    int status = 0;  // 0: drop after apply
    httplib::Headers headers;
    std::string body;
  };

  void handle(const httplib::Request& request, httplib::Response& response);
  void serve(const httplib::Request& request, httplib::Response& response);
  nlohmann::json comment_json(const Comment& comment) const;
  nlohmann::json user_json(long long id, const std::string& login) const;
  nlohmann::json pull_json(const nlohmann::json& pull) const;
  void reply(httplib::Response& response, int status, const nlohmann::json& body);

  OpenApiValidator m_validator;
  nlohmann::json m_user_template;  // a real "sender" object
  nlohmann::json m_pull_template;  // a real "pull_request" object
  std::string m_repo;
  std::string m_token;
  httplib::Server m_server;
  std::thread m_thread;
  int m_port = 0;

  mutable std::mutex m_mutex;
  TokenKind m_token_kind = TokenKind::installation;
  long long m_own_id = k_actions_bot_id;
  std::string m_own_login = "github-actions[bot]";
  long long m_next_id = 5000;
  std::map<int, std::vector<Comment>> m_comments;
  std::vector<nlohmann::json> m_pulls;
  std::vector<nlohmann::json> m_statuses;
  std::vector<nlohmann::json> m_check_runs;
  std::deque<Fault> m_faults;
  std::vector<std::string> m_violations;
  std::vector<std::string> m_requests;
};

}  // namespace driftgate::test

#include "tests/ci/fake_github_server.h"

#include <fstream>
#include <optional>
#include <regex>

#include "tests/ci/fake_faults.h"

namespace driftgate::test {

namespace {

using Json = nlohmann::json;

Json read_json(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    throw std::runtime_error("cannot read " + path);
  }
  return Json::parse(file);
}

const char* const k_time = "2026-11-29T12:00:00Z";

// Characters as GitHub counts a comment body's limit (UTF-16 code units).
size_t utf16_units(const std::string& text) {
  size_t units = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) {
      units += c >= 0xF0 ? 2 : 1;
    }
  }
  return units;
}

Json too_long(const std::string& resource, const std::string& field, const std::string& message) {
  return Json{{"message", "Validation Failed"},
              {"errors",
               Json::array({Json{{"resource", resource}, {"code", "custom"}, {"field", field}, {"message", message}}})},
              {"documentation_url", "https://docs.github.com/rest"},
              {"status", "422"}};
}

}  // namespace

FakeGithubServer::FakeGithubServer(const std::string& api_dir, std::string repo, std::string token)
    : m_validator(api_dir + "/github/openapi-subset.json"), m_repo(std::move(repo)), m_token(std::move(token)) {
  Json event = read_json(api_dir + "/github/events/pull_request.opened.json");
  m_user_template = event["sender"];
  m_pull_template = event["pull_request"];
  auto handler = [this](const httplib::Request& request, httplib::Response& response) { handle(request, response); };
  m_server.Get(".*", handler);
  m_server.Post(".*", handler);
  m_server.Patch(".*", handler);
  m_server.Put(".*", handler);
  m_server.Delete(".*", handler);
  m_port = m_server.bind_to_any_port("127.0.0.1");
  if (m_port <= 0) {
    throw std::runtime_error("fake GitHub: cannot bind 127.0.0.1");
  }
  m_thread = std::thread([this] { m_server.listen_after_bind(); });
  // Bounded wait until the accept loop runs (at most ~5 s).
  for (int i = 0; i < 500 && !m_server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

FakeGithubServer::~FakeGithubServer() {
  m_server.stop();
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

void FakeGithubServer::set_token_owner(TokenKind kind, long long id, const std::string& login) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_token_kind = kind;
  m_own_id = id;
  m_own_login = login;
}

long long FakeGithubServer::own_id() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_own_id;
}

void FakeGithubServer::add_own_comment(int pr, const std::string& body) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_comments[pr].push_back(Comment{m_next_id++, m_own_id, m_own_login, body});
}

void FakeGithubServer::add_comment(int pr, long long author_id, const std::string& login, const std::string& body) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_comments[pr].push_back(Comment{m_next_id++, author_id, login, body});
}

void FakeGithubServer::add_pull(int number, const std::string& state, const std::string& head_sha,
                                const std::string& base_repo, const std::string& head_repo,
                                const std::string& head_ref) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_pulls.push_back(Json{{"number", number},
                         {"state", state},
                         {"head_sha", head_sha},
                         {"base_repo", base_repo},
                         {"head_repo", head_repo.empty() ? base_repo : head_repo},
                         {"head_ref", head_ref}});
}

void FakeGithubServer::fail_next(const std::string& match, int status, httplib::Headers headers,
                                 const std::string& body, int times) {
  std::lock_guard<std::mutex> lock(m_mutex);
  for (int i = 0; i < times; ++i) {
    m_faults.push_back(Fault{match, status, headers, body});
  }
}

void FakeGithubServer::drop_after_apply_next(const std::string& match) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_faults.push_back(Fault{match, 0, {}, ""});
}

std::vector<FakeGithubServer::Comment> FakeGithubServer::comments(int pr) const {
  std::lock_guard<std::mutex> lock(m_mutex);
  auto it = m_comments.find(pr);
  return it == m_comments.end() ? std::vector<Comment>{} : it->second;
}

std::vector<Json> FakeGithubServer::statuses() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_statuses;
}

std::vector<Json> FakeGithubServer::check_runs() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_check_runs;
}

std::vector<std::string> FakeGithubServer::violations() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_violations;
}

std::vector<std::string> FakeGithubServer::take_violations() {
  std::lock_guard<std::mutex> lock(m_mutex);
  std::vector<std::string> taken;
  taken.swap(m_violations);
  return taken;
}

int FakeGithubServer::requests(const std::string& match) const {
  std::lock_guard<std::mutex> lock(m_mutex);
  int count = 0;
  for (const auto& request : m_requests) {
    count += request.find(match) != std::string::npos ? 1 : 0;
  }
  return count;
}

Json FakeGithubServer::user_json(long long id, const std::string& login) const {
  Json user = m_user_template;
  user["id"] = id;
  user["login"] = login;
  user["type"] = login.find("[bot]") != std::string::npos ? "Bot" : "User";
  return user;
}

Json FakeGithubServer::comment_json(const Comment& comment) const {
  std::string base = url() + "/repos/" + m_repo + "/issues";
  return Json{{"id", comment.id},
              {"node_id", "IC_" + std::to_string(comment.id)},
              {"url", base + "/comments/" + std::to_string(comment.id)},
              {"html_url", "https://github.com/" + m_repo + "/pull/1#issuecomment-" + std::to_string(comment.id)},
              {"issue_url", base + "/1"},
              {"body", comment.body},
              {"user", user_json(comment.author_id, comment.author_login)},
              {"created_at", k_time},
              {"updated_at", k_time},
              {"author_association", "NONE"}};
}

Json FakeGithubServer::pull_json(const Json& pull) const {
  Json result = m_pull_template;
  result["number"] = pull["number"];
  result["state"] = pull["state"];
  result["head"]["sha"] = pull["head_sha"];
  std::string head_repo = pull["head_repo"];
  std::string head_owner = head_repo.substr(0, head_repo.find('/'));
  result["head"]["ref"] = pull["head_ref"];
  result["head"]["label"] = head_owner + ":" + pull["head_ref"].get<std::string>();
  result["head"]["repo"]["full_name"] = head_repo;
  result["head"]["repo"]["name"] = head_repo.substr(head_repo.find('/') + 1);
  result["head"]["repo"]["owner"]["login"] = head_owner;
  result["head"]["repo"]["fork"] = head_repo != pull["base_repo"];
  result["head"]["user"]["login"] = head_owner;
  result["base"]["repo"]["full_name"] = pull["base_repo"];
  // Webhook payloads omit this field of the REST shape; null is its documented "not enabled".
  result["auto_merge"] = nullptr;
  return result;
}

void FakeGithubServer::reply(httplib::Response& response, int status, const Json& body) {
  response.status = status;
  response.set_content(body.dump(), "application/json; charset=utf-8");
}

void FakeGithubServer::handle(const httplib::Request& request, httplib::Response& response) {
  std::lock_guard<std::mutex> lock(m_mutex);
  std::string line = request.method + " " + request.path;
  m_requests.push_back(line);
  std::vector<std::pair<std::string, std::string>> required = {{"Accept", "application/vnd.github+json"},
                                                               {"X-GitHub-Api-Version", "2022-11-28"}};
  for (const auto& [name, value] : required) {
    if (request.get_header_value(name) != value) {
      m_violations.push_back(line + ": header " + name + " is '" + request.get_header_value(name) + "'");
    }
  }
  if (request.get_header_value("User-Agent").empty()) {
    m_violations.push_back(line + ": no User-Agent");
    reply(response, 403,
          Json{{"message",
                "Request forbidden by administrative rules. Please make sure your request "
                "has a User-Agent header"}});
    return;
  }
  if (request.get_header_value("Authorization") != "Bearer " + m_token) {
    reply(response, 401, Json{{"message", "Bad credentials"}, {"documentation_url", "https://docs.github.com/rest"}});
    return;
  }
  if (request.path != "/user") {  // GET /user is not in the subset; its shape is a Simple User
    std::map<std::string, std::string> query(request.params.begin(), request.params.end());
    for (auto& violation : m_validator.check_request(request.method, request.path, query, request.body)) {
      m_violations.push_back(violation);
    }
  }
  if (std::optional<Fault> fault = take_fault(m_faults, line)) {
    if (fault->status != 0) {
      for (const auto& [name, value] : fault->headers) {
        response.set_header(name, value);
      }
      response.status = fault->status;
      response.set_content(fault->body, "application/json; charset=utf-8");
      return;
    }
    serve(request, response);
    drop_reply(response);
    return;
  }
  serve(request, response);
  if (request.path != "/user" && response.status < 400) {
    for (auto& violation : m_validator.check_response(request.method, request.path, response.status, response.body)) {
      m_violations.push_back("fake's own response: " + violation);
    }
  }
}

void FakeGithubServer::serve(const httplib::Request& request, httplib::Response& response) {
  static const std::regex k_comments(R"(/repos/([^/]+/[^/]+)/issues/(\d+)/comments)");
  static const std::regex k_comment(R"(/repos/([^/]+/[^/]+)/issues/comments/(\d+))");
  static const std::regex k_status(R"(/repos/([^/]+/[^/]+)/statuses/([0-9a-f]{40}))");
  static const std::regex k_check_runs(R"(/repos/([^/]+/[^/]+)/check-runs)");
  static const std::regex k_pulls(R"(/repos/([^/]+/[^/]+)/pulls)");
  static const std::regex k_pull(R"(/repos/([^/]+/[^/]+)/pulls/(\d+))");
  static const std::regex k_commit_pulls(R"(/repos/([^/]+/[^/]+)/commits/([0-9a-f]{40})/pulls)");
  std::smatch match;
  const std::string& path = request.path;
  Json body = Json::parse(request.body.empty() ? "null" : request.body, nullptr, false);
  auto not_found = [&] { reply(response, 404, Json{{"message", "Not Found"}}); };
  // GitHub's size limits: a comment body of 65,536 characters, a check-run summary of 65,535 bytes.
  if (body.is_object() && body.contains("body") && body["body"].is_string() &&
      utf16_units(body["body"].get<std::string>()) > 65536) {
    reply(response, 422, too_long("IssueComment", "body", "Body is too long (maximum is 65536 characters)"));
    return;
  }
  if (body.is_object() && body.contains("output") && body["output"].is_object() &&
      body["output"].value("summary", Json()).is_string() &&
      body["output"]["summary"].get<std::string>().size() > 65535) {
    reply(response, 422, too_long("CheckRun", "summary", "Summary is too long (maximum is 65535 bytes)"));
    return;
  }
  if (request.method == "GET" && path == "/user") {
    if (m_token_kind == TokenKind::installation) {
      // What github.com answers the Actions GITHUB_TOKEN (and any installation token).
      reply(response, 403,
            Json{{"message", "Resource not accessible by integration"},
                 {"documentation_url", "https://docs.github.com/rest/users/users#get-the-authenticated-user"},
                 {"status", "403"}});
      return;
    }
    reply(response, 200, user_json(m_own_id, m_own_login));
  } else if (std::regex_match(path, match, k_comments) && match[1] == m_repo) {
    int pr = std::stoi(match[2]);
    auto& comments = m_comments[pr];
    if (request.method == "POST") {
      comments.push_back(Comment{m_next_id++, m_own_id, m_own_login, body.value("body", "")});
      reply(response, 201, comment_json(comments.back()));
      return;
    }
    int per_page = request.has_param("per_page") ? std::stoi(request.get_param_value("per_page")) : 30;
    int page = request.has_param("page") ? std::stoi(request.get_param_value("page")) : 1;
    Json items = Json::array();
    for (size_t i = (page - 1) * per_page; i < comments.size() && i < static_cast<size_t>(page * per_page); ++i) {
      items.push_back(comment_json(comments[i]));
    }
    if (static_cast<size_t>(page * per_page) < comments.size()) {
      std::string next = url() + path + "?per_page=" + std::to_string(per_page) + "&page=" + std::to_string(page + 1);
      response.set_header("Link", "<" + next + ">; rel=\"next\", <" + next + ">; rel=\"last\"");
    }
    reply(response, 200, items);
  } else if (request.method == "PATCH" && std::regex_match(path, match, k_comment) && match[1] == m_repo) {
    long long id = std::stoll(match[2]);
    for (auto& [pr, comments] : m_comments) {
      for (auto& comment : comments) {
        if (comment.id == id) {
          if (comment.author_id != m_own_id) {
            reply(response, 403, Json{{"message", "Must have admin rights to Repository."}});
            return;
          }
          comment.body = body.value("body", "");
          reply(response, 200, comment_json(comment));
          return;
        }
      }
    }
    not_found();
  } else if (std::regex_match(path, match, k_status) && match[1] == m_repo) {
    Json status = body;
    status["sha"] = match[2];
    m_statuses.push_back(status);
    reply(response, 201,
          Json{{"url", url() + path},
               {"avatar_url", nullptr},
               {"id", m_next_id++},
               {"node_id", "SC_1"},
               {"state", body["state"]},
               {"description", body.value("description", Json())},
               {"target_url", body.value("target_url", Json())},
               {"context", body.value("context", "default")},
               {"created_at", k_time},
               {"updated_at", k_time},
               {"creator", user_json(m_own_id, m_own_login)}});
  } else if (std::regex_match(path, match, k_check_runs) && match[1] == m_repo) {
    if (m_token_kind == TokenKind::personal) {
      reply(response, 403, Json{{"message", "Resource not accessible by personal access token"}});
      return;
    }
    m_check_runs.push_back(body);
    Json output = body.value("output", Json::object());
    reply(response, 201,
          Json{{"id", m_next_id++},
               {"node_id", "CR_1"},
               {"head_sha", body["head_sha"]},
               {"name", body["name"]},
               {"url", url() + path},
               {"html_url", nullptr},
               {"details_url", body.value("details_url", Json())},
               {"status", "completed"},
               {"conclusion", body.value("conclusion", Json())},
               {"started_at", k_time},
               {"completed_at", k_time},
               {"external_id", nullptr},
               {"check_suite", Json{{"id", 1}}},
               {"output", Json{{"title", output.value("title", Json())},
                               {"summary", output.value("summary", Json())},
                               {"text", nullptr},
                               {"annotations_count", 0},
                               {"annotations_url", url() + path + "/annotations"}}},
               {"app", nullptr},
               {"pull_requests", Json::array()}});
  } else if (request.method == "GET" && std::regex_match(path, match, k_pull) && match[1] == m_repo) {
    for (const auto& pull : m_pulls) {
      if (pull["number"] == std::stoi(match[2])) {
        reply(response, 200, pull_json(pull));
        return;
      }
    }
    not_found();
  } else if (request.method == "GET" && std::regex_match(path, match, k_pulls) && match[1] == m_repo) {
    // List pull requests: state (open, closed, all; default open), head (USER:BRANCH or
    // ORG:BRANCH), base (a branch: every pull here targets "main"), per_page (default 30), page.
    std::string state = request.has_param("state") ? request.get_param_value("state") : "open";
    std::string head = request.get_param_value("head");
    int per_page = request.has_param("per_page") ? std::stoi(request.get_param_value("per_page")) : 30;
    int page = request.has_param("page") ? std::stoi(request.get_param_value("page")) : 1;
    std::vector<Json> matching;
    for (const auto& pull : m_pulls) {
      Json shown = pull_json(pull);
      if ((state == "all" || pull["state"] == state) && (head.empty() || shown["head"]["label"] == head)) {
        matching.push_back(shown);
      }
    }
    Json items = Json::array();
    for (size_t i = (page - 1) * per_page; i < matching.size() && i < static_cast<size_t>(page * per_page); ++i) {
      items.push_back(matching[i]);
    }
    reply(response, 200, items);
  } else if (request.method == "GET" && std::regex_match(path, match, k_commit_pulls) && match[1] == m_repo) {
    // A commit that exists only in a fork has no association in the base repository:
    // GitHub answers [] (see the header), so only same-repository pulls are listed.
    Json items = Json::array();
    for (const auto& pull : m_pulls) {
      if (pull["head_sha"] == match[2].str() && pull["head_repo"] == m_repo) {
        items.push_back(pull_json(pull));
      }
    }
    reply(response, 200, items);
  } else {
    not_found();
  }
}

}  // namespace driftgate::test

#include "tests/ci/fake_gitlab_server.h"

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>

#include "tests/ci/fake_faults.h"

namespace driftgate::test {

namespace {

using Json = nlohmann::json;

void reply(httplib::Response& response, int status, const Json& body) {
  response.status = status;
  response.set_content(body.dump(), "application/json");
}

}  // namespace

FakeGitlabServer::FakeGitlabServer(std::string project_id, std::string token, std::string role)
    : m_project_id(std::move(project_id)), m_token(std::move(token)) {
  static const std::map<std::string, int> k_levels = {{"reporter", 20}, {"developer", 30}, {"maintainer", 40}};
  if (!k_levels.count(role)) {
    throw std::invalid_argument("fake GitLab: unknown role '" + role + "'");
  }
  m_role_level = k_levels.at(role);
  auto handler = [this](const httplib::Request& request, httplib::Response& response) { handle(request, response); };
  m_server.Get(".*", handler);
  m_server.Post(".*", handler);
  m_server.Put(".*", handler);
  m_server.Patch(".*", handler);
  m_server.Delete(".*", handler);
  m_port = m_server.bind_to_any_port("127.0.0.1");
  if (m_port <= 0) {
    throw std::runtime_error("fake GitLab: cannot bind 127.0.0.1");
  }
  m_thread = std::thread([this] { m_server.listen_after_bind(); });
  for (int i = 0; i < 500 && !m_server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

FakeGitlabServer::~FakeGitlabServer() {
  m_server.stop();
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

void FakeGitlabServer::add_note(int mr, long long author_id, const std::string& body) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_notes[mr].push_back(Note{m_next_id++, author_id, body});
}

void FakeGitlabServer::fail_next(const std::string& match, int status, httplib::Headers headers, int times,
                                 const std::string& message) {
  std::lock_guard<std::mutex> lock(m_mutex);
  for (int i = 0; i < times; ++i) {
    m_faults.push_back(Fault{match, status, headers, message});
  }
}

void FakeGitlabServer::drop_after_apply_next(const std::string& match) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_faults.push_back(Fault{match, 0, {}, ""});
}

void FakeGitlabServer::add_pipeline(long long id, const std::string& sha) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_pipelines[id] = sha;
}

std::vector<std::string> FakeGitlabServer::take_violations() {
  std::lock_guard<std::mutex> lock(m_mutex);
  std::vector<std::string> taken;
  taken.swap(m_violations);
  return taken;
}

std::vector<FakeGitlabServer::Note> FakeGitlabServer::notes(int mr) const {
  std::lock_guard<std::mutex> lock(m_mutex);
  auto it = m_notes.find(mr);
  return it == m_notes.end() ? std::vector<Note>{} : it->second;
}

std::vector<Json> FakeGitlabServer::statuses() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_statuses;
}

std::vector<std::string> FakeGitlabServer::violations() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_violations;
}

int FakeGitlabServer::requests(const std::string& match) const {
  std::lock_guard<std::mutex> lock(m_mutex);
  int count = 0;
  for (const auto& request : m_requests) {
    count += request.find(match) != std::string::npos ? 1 : 0;
  }
  return count;
}

void FakeGitlabServer::handle(const httplib::Request& request, httplib::Response& response) {
  std::lock_guard<std::mutex> lock(m_mutex);
  std::string line = request.method + " " + request.path;
  m_requests.push_back(line);
  if (request.get_header_value("PRIVATE-TOKEN") != m_token) {
    reply(response, 401, Json{{"message", "401 Unauthorized"}});
    return;
  }
  if (std::optional<Fault> fault = take_fault(m_faults, line)) {
    if (fault->status != 0) {
      for (const auto& [name, value] : fault->headers) {
        response.set_header(name, value);
      }
      reply(response, fault->status, Json{{"message", fault->message}});
      return;
    }
    serve(request, response, line);
    drop_reply(response);
    return;
  }
  serve(request, response, line);
}

void FakeGitlabServer::serve(const httplib::Request& request, httplib::Response& response, const std::string& line) {
  Json body = Json::parse(request.body.empty() ? "{}" : request.body, nullptr, false);
  if (request.method == "POST" || request.method == "PUT") {
    // The documented fields of the calls driftgate makes; anything else is a mistake.
    static const std::set<std::string> k_fields = {"body", "state", "name", "target_url", "description", "pipeline_id"};
    if (!body.is_object()) {
      m_violations.push_back(line + ": the body is not a JSON object");
      body = Json::object();
    }
    for (const auto& [name, value] : body.items()) {
      if (!k_fields.count(name)) {
        m_violations.push_back(line + ": unknown field '" + name + "'");
      }
    }
    if (request.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
      m_violations.push_back(line + ": Content-Type is '" + request.get_header_value("Content-Type") + "'");
    }
  }
  auto author = [&](long long id) { return Json{{"id", id}, {"username", id == own_id() ? "project_bot" : "other"}}; };
  auto note_json = [&](const Note& note) {
    return Json{{"id", note.id},
                {"body", note.body},
                {"author", author(note.author_id)},
                {"system", false},
                {"noteable_type", "MergeRequest"}};
  };
  static const std::regex k_notes(R"(/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes)");
  static const std::regex k_note(R"(/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+))");
  static const std::regex k_status(R"(/api/v4/projects/([^/]+)/statuses/([0-9a-f]{40}))");
  std::smatch match;
  if (request.method == "GET" && request.path == "/api/v4/user") {
    reply(response, 200, Json{{"id", own_id()}, {"username", "project_bot"}});
  } else if (std::regex_match(request.path, match, k_notes) && match[1] == m_project_id) {
    auto& notes = m_notes[std::stoi(match[2])];
    if (request.method != "POST" && request.method != "GET") {
      m_violations.push_back(line + ": not an endpoint driftgate should call");
      reply(response, 405, Json{{"message", "405 Method Not Allowed"}});
      return;
    }
    if (request.method == "POST") {
      if (!body.is_object() || !body.contains("body") || !body["body"].is_string()) {
        m_violations.push_back(line + ": no string 'body'");
      }
      notes.push_back(Note{m_next_id++, own_id(), body.value("body", "")});
      reply(response, 201, note_json(notes.back()));
      return;
    }
    int per_page = request.has_param("per_page") ? std::stoi(request.get_param_value("per_page")) : 20;
    int page = request.has_param("page") ? std::stoi(request.get_param_value("page")) : 1;
    if (per_page > 100) {
      m_violations.push_back(line + ": per_page is at most 100");
    }
    Json items = Json::array();
    for (size_t i = (page - 1) * per_page; i < notes.size() && i < static_cast<size_t>(page * per_page); ++i) {
      items.push_back(note_json(notes[i]));
    }
    response.set_header("X-Next-Page",
                        static_cast<size_t>(page * per_page) < notes.size() ? std::to_string(page + 1) : "");
    reply(response, 200, items);
  } else if (request.method == "PUT" && std::regex_match(request.path, match, k_note) && match[1] == m_project_id) {
    for (auto& note : m_notes[std::stoi(match[2])]) {
      if (note.id == std::stoll(match[3])) {
        if (note.author_id != own_id()) {
          reply(response, 403, Json{{"message", "403 Forbidden"}});
          return;
        }
        if (!body.contains("body") || !body["body"].is_string()) {
          m_violations.push_back(line + ": no string 'body'");
        }
        note.body = body.value("body", "");
        reply(response, 200, note_json(note));
        return;
      }
    }
    reply(response, 404, Json{{"message", "404 Not found"}});
  } else if (request.method == "POST" && std::regex_match(request.path, match, k_status) && match[1] == m_project_id) {
    if (m_role_level < 30) {  // authorize! :create_commit_status: Developer
      reply(response, 403, Json{{"message", "403 Forbidden"}});
      return;
    }
    static const std::set<std::string> k_states = {"pending", "running", "success", "failed", "canceled"};
    if (!k_states.count(body.value("state", ""))) {
      m_violations.push_back(line + ": state '" + body.value("state", "") + "' is not a GitLab status state");
    }
    if (body.contains("pipeline_id") && !body["pipeline_id"].is_number_integer()) {
      m_violations.push_back(line + ": pipeline_id is not an integer");
    }
    // all_matching_pipelines: the newest pipeline of this SHA (with that id, when given).
    long long landed = 0;
    for (const auto& [id, sha] : m_pipelines) {
      bool id_matches = !body.contains("pipeline_id") || body["pipeline_id"] == id;
      if (sha == match[2] && id_matches) {
        landed = id;
      }
    }
    bool made = landed == 0;
    if (made) {  // a new pipeline with source: external
      landed = m_next_pipeline++;
      m_pipelines[landed] = match[2];
    }
    Json status = body;
    status["sha"] = match[2];
    status["landed_in"] = landed;
    status["new_pipeline"] = made;
    m_statuses.push_back(status);
    reply(response, 201,
          Json{{"id", m_next_id++},
               {"sha", match[2]},
               {"status", body.value("state", "")},
               {"name", body.value("name", "default")},
               {"pipeline_id", landed}});
  } else {
    m_violations.push_back(line + ": not an endpoint driftgate should call");
    reply(response, 404, Json{{"message", "404 Not found"}});
  }
}

}  // namespace driftgate::test

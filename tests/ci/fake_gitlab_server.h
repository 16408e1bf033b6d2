// A fake GitLab v4 API for the posting tests: merge request notes (pages with
// X-Next-Page), commit statuses and GET /user, on 127.0.0.1 (ephemeral port),
// started by the constructor and stopped by the destructor.
//
// GitLab publishes no OpenAPI description for these endpoints, so the checks are
// the documented ones (shared/api/README.md): PRIVATE-TOKEN auth, the paths, a
// `body` for notes, `state` from the documented set and a `name` for statuses,
// an integer `pipeline_id`, per_page at most 100, JSON bodies with only the
// documented fields. Findings land in violations(). Faults are scripted per request:
// a status with headers and a message (429, 500, 403 ...) or a connection dropped
// after the server acted.
//
// What GitLab itself refuses or decides, it refuses and decides here too:
// - the token has a role; POST /projects/:id/statuses/:sha needs Developer and answers
//   403 to a Reporter (lib/api/commit_statuses.rb `authorize! :create_commit_status`;
//   spec/requests/api/commit_statuses_spec.rb, "reporter user ... 403");
// - a status joins the newest pipeline of its SHA, filtered by pipeline_id when given,
//   and a new external pipeline when none matches (lib/api/commit_statuses.rb,
//   all_matching_pipelines and `source: :external`): each status records the pipeline
//   it landed in ("landed_in") and whether that pipeline was made for it.
#pragma once

#include <httplib.h>

#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace driftgate::test {

class FakeGitlabServer {
 public:
  struct Note {
    long long id = 0;
    long long author_id = 0;
    std::string body;
  };

  // role: the token user's role in the project: "reporter", "developer" or "maintainer".
  FakeGitlabServer(std::string project_id, std::string token, std::string role = "developer");
  ~FakeGitlabServer();
  FakeGitlabServer(const FakeGitlabServer&) = delete;
  FakeGitlabServer& operator=(const FakeGitlabServer&) = delete;

  // The v4 root, like CI_API_V4_URL.
  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port) + "/api/v4"; }

  void add_note(int mr, long long author_id, const std::string& body);
  // A pipeline that ran on `sha` (ids grow with time: the largest is the newest).
  void add_pipeline(long long id, const std::string& sha);
  // The next `times` requests whose "METHOD path" contains `match` get this status,
  // headers and {"message": message}.
  void fail_next(const std::string& match, int status, httplib::Headers headers, int times = 1,
                 const std::string& message = "fault");
  // The next matching request is served (its effect happens) but the connection
  // drops before the reply arrives.
  void drop_after_apply_next(const std::string& match);

  std::vector<Note> notes(int mr) const;
  std::vector<nlohmann::json> statuses() const;
  std::vector<std::string> violations() const;
  // Returns the violations so far and forgets them (tests of the validation itself).
  std::vector<std::string> take_violations();
  int requests(const std::string& match) const;
  long long own_id() const { return 77; }

 private:
  struct Fault {
    std::string match;
    int status = 0;  // 0: drop after apply
    httplib::Headers headers;
    std::string message;
  };

  void handle(const httplib::Request& request, httplib::Response& response);
  void serve(const httplib::Request& request, httplib::Response& response, const std::string& line);

  std::string m_project_id;
  std::string m_token;
  int m_role_level = 30;
  httplib::Server m_server;
  std::thread m_thread;
  int m_port = 0;

  mutable std::mutex m_mutex;
  long long m_next_id = 900;
  std::map<int, std::vector<Note>> m_notes;
  std::map<long long, std::string> m_pipelines;  // id -> sha
  long long m_next_pipeline = 5000;
  std::vector<nlohmann::json> m_statuses;
  std::deque<Fault> m_faults;
  std::vector<std::string> m_violations;
  std::vector<std::string> m_requests;
};

}  // namespace driftgate::test

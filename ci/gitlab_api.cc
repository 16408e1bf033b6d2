#include "ci/gitlab_api.h"

#include <nlohmann/json.hpp>

#include "ci/json_fields.h"
#include "ci/markdown_escape.h"
#include "ci/url.h"
#include "core/safe_text.h"

namespace driftgate {

namespace {

using Json = nlohmann::json;

Json parse_body(const HttpResponse& response, const std::string& what) {
  Json body = Json::parse(response.body, nullptr, false);
  if (body.is_discarded()) {
    throw Error("GitLab API: " + what + ": the response is not JSON; is --api-url the v4 API root (CI_API_V4_URL)?");
  }
  return body;
}

}  // namespace

HttpHeaders gitlab_headers(const std::string& token) {
  return {{"Accept", "application/json"}, {"User-Agent", "driftgate/" DRIFTGATE_VERSION}, {"PRIVATE-TOKEN", token}};
}

std::string gitlab_advice(const HttpRequest& /*request*/, const HttpResponse& response) {
  switch (response.status) {
    case 401:
      return "the token was rejected; put a project access token (GitLab.com Free: a bot user's personal access "
             "token) with `api` scope in a masked CI/CD variable and "
             "name it with --token-env (CI_JOB_TOKEN cannot write notes or statuses)";
    case 403:
      return "the token may not do this; it needs `api` scope, at least the Reporter role for notes and the "
             "Developer role for commit statuses";
    case 404:
      return "not found; check --project-id, --mr and --api-url, and that the token's user can see the project";
    default:
      return "";
  }
}

GitlabApi::GitlabApi(ApiClient& client, std::string api_url, const std::string& project)
    : m_client(client), m_api_url(std::move(api_url)), m_project_url(m_api_url + "/projects/" + url_encode(project)) {}

std::string GitlabApi::own_user_id() {
  std::string id = json_id_text(json_field(parse_body(m_client.send("GET", m_api_url + "/user"), "GET /user"), "id"));
  if (id.empty()) {
    throw Error("GitLab API: GET /user has no numeric \"id\"; cannot tell our own notes from others'");
  }
  return id;
}

std::vector<ThreadComment> GitlabApi::list_notes(int mr) {
  std::vector<ThreadComment> notes;
  std::string base =
      m_project_url + "/merge_requests/" + std::to_string(mr) + "/notes?sort=asc&order_by=created_at&per_page=100";
  std::string page = "1";
  long long previous = 0;
  // Bounded: 100 pages of 100 notes. A listing that does not end within them, or
  // whose X-Next-Page does not move forward (a loop), is an error: the sticky note may
  // be on a page not read, and creating another would leave two.
  for (int round = 0; !page.empty(); ++round) {
    if (page.size() > 9 || page.find_first_not_of("0123456789") != std::string::npos) {
      throw Error("GitLab API: X-Next-Page '" + escape_invisible(page) + "' is not a page number");
    }
    long long number = std::stoll(page);
    if (number <= previous) {
      throw Error("GitLab API: GET " + base + ": X-Next-Page " + page + " after page " + std::to_string(previous) +
                  " does not move forward; the listing loops, so no note was created or updated");
    }
    if (round == 100) {
      throw Error("GitLab API: GET " + base +
                  " still has a next page after 100 pages of 100 notes; the listing does not end, so no note was "
                  "created or updated");
    }
    previous = number;
    HttpResponse response = m_client.send("GET", base + "&page=" + page);
    Json items = parse_body(response, "GET notes");
    if (!items.is_array()) {
      throw Error("GitLab API: GET " + base + " did not return an array of notes");
    }
    for (const auto& item : items) {
      ThreadComment note;
      note.id = json_id_text(json_field(item, "id"));
      if (item.contains("author") && item["author"].is_object()) {
        note.author = json_id_text(json_field(item["author"], "id"));
      }
      note.body = json_string_field(item, "body");
      notes.push_back(std::move(note));
    }
    page = response.header("x-next-page").value_or("");
  }
  return notes;
}

std::string GitlabApi::create_note(int mr, const std::string& body) {
  HttpResponse response = m_client.send("POST", m_project_url + "/merge_requests/" + std::to_string(mr) + "/notes",
                                        Json{{"body", body}}.dump());
  std::string id = json_id_text(json_field(parse_body(response, "POST note"), "id"));
  if (id.empty()) {
    throw Error("GitLab API: POST note on !" + std::to_string(mr) +
                " answered without a numeric \"id\"; the note may exist, but cannot be updated by id");
  }
  return id;
}

void GitlabApi::update_note(int mr, const std::string& id, const std::string& body) {
  m_client.send("PUT", m_project_url + "/merge_requests/" + std::to_string(mr) + "/notes/" + id,
                Json{{"body", body}}.dump());
}

void GitlabApi::create_status(const std::string& sha, const std::string& state, const std::string& name,
                              const std::string& description, const std::string& target_url,
                              const std::string& pipeline_id) {
  Json request{{"state", state}, {"name", name}, {"description", truncate_utf8(description, 255)}};
  if (!target_url.empty()) {
    request["target_url"] = target_url;
  }
  if (!pipeline_id.empty()) {
    request["pipeline_id"] = std::stoll(pipeline_id);  // an Integer parameter (lib/api/commit_statuses.rb)
  }
  m_client.send("POST", m_project_url + "/statuses/" + url_encode(sha), request.dump());
}

}  // namespace driftgate

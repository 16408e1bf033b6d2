// The GitLab REST (v4) calls `driftgate post gitlab` makes, over ApiClient.
//
// Merge request notes (list with per_page=100 following X-Next-Page, create,
// update), a commit status, and GET /user for the token's own user. Auth is
// PRIVATE-TOKEN: a project access token (or a bot user's personal access token) with `api`
// scope (CI_JOB_TOKEN cannot write notes or statuses).
#pragma once

#include <string>
#include <vector>

#include "ci/api_client.h"
#include "ci/sticky_comment.h"

namespace driftgate {

// The headers of every GitLab call.
HttpHeaders gitlab_headers(const std::string& token);

// Advice for a failed GitLab call (401/403: token scope and role; 404: project and MR).
std::string gitlab_advice(const HttpRequest& request, const HttpResponse& response);

class GitlabApi {
 public:
  // `api_url` is CI_API_V4_URL without a trailing slash; `project` an id or a path.
  GitlabApi(ApiClient& client, std::string api_url, const std::string& project);

  std::string own_user_id();
  std::vector<ThreadComment> list_notes(int mr);
  std::string create_note(int mr, const std::string& body);
  void update_note(int mr, const std::string& id, const std::string& body);
  // state: "pending", "running", "success", "failed", "canceled"; pipeline_id: the
  // pipeline the status joins ("" : GitLab picks the newest pipeline of `sha`).
  void create_status(const std::string& sha, const std::string& state, const std::string& name,
                     const std::string& description, const std::string& target_url,
                     const std::string& pipeline_id = "");

 private:
  ApiClient& m_client;
  std::string m_api_url;
  std::string m_project_url;  // api_url + "/projects/" + encoded project
};

// One MR's notes as a CommentThread.
class GitlabThread : public CommentThread {
 public:
  GitlabThread(GitlabApi& api, int mr) : m_api(api), m_mr(mr) {}
  std::string own_author() override { return m_api.own_user_id(); }
  std::vector<ThreadComment> list() override { return m_api.list_notes(m_mr); }
  std::string create(const std::string& body) override { return m_api.create_note(m_mr, body); }
  void update(const std::string& id, const std::string& body) override { m_api.update_note(m_mr, id, body); }

 private:
  GitlabApi& m_api;
  int m_mr;
};

}  // namespace driftgate

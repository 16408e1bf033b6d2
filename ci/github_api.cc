#include "ci/github_api.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "ci/json_fields.h"
#include "ci/markdown_escape.h"
#include "ci/url.h"

namespace driftgate {

namespace {

using Json = nlohmann::json;

constexpr int k_max_pages = 100;

Json parse_body(const HttpResponse& response, const std::string& what) {
  Json body = Json::parse(response.body, nullptr, false);
  if (body.is_discarded()) {
    throw Error("GitHub API: " + what +
                ": the response is not JSON; is --api-url the REST API root "
                "(https://api.github.com or https://HOST/api/v3)?");
  }
  return body;
}

// The `permissions:` entry a call needs.
std::string permission_for(const std::string& method, const std::string& url) {
  if (url.find("/statuses/") != std::string::npos) {
    return "statuses: write";
  }
  if (url.find("/check-runs") != std::string::npos) {
    return "checks: write";
  }
  if (url.find("/comments") != std::string::npos) {
    return method == "GET" ? "pull-requests: read" : "pull-requests: write";
  }
  return "pull-requests: read";
}

std::vector<int> pull_numbers(const Json& pulls) {
  std::vector<int> numbers;
  if (pulls.is_array()) {
    for (const auto& pull : pulls) {
      // An out-of-range number names no pull request (never a truncated other one).
      if (int number = pull.is_object() ? json_positive_int(json_field(pull, "number")) : 0; number != 0) {
        numbers.push_back(number);
      }
    }
  }
  return numbers;
}

}  // namespace

std::string lower_login(std::string login) {
  for (char& c : login) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return login;
}

HttpHeaders github_headers(const std::string& token) {
  return {{"Accept", "application/vnd.github+json"},
          {"X-GitHub-Api-Version", k_github_api_version},
          {"User-Agent", "driftgate/" DRIFTGATE_VERSION},
          {"Authorization", "Bearer " + token}};
}

std::string github_advice(const HttpRequest& request, const HttpResponse& response) {
  switch (response.status) {
    case 401:
      return "the token was rejected; check that the token variable (--token-env, default GITHUB_TOKEN) holds a "
             "valid, unexpired token";
    case 403:
      if (is_missing_permission(response)) {
        return "the workflow token lacks a permission; add `permissions: " +
               permission_for(request.method, request.url) +
               "` to the posting job (a fork PR's pull_request token is read-only: post from a workflow_run workflow)";
      }
      return "the token may not do this; it needs write access to the repository (repo scope for a personal token)";
    case 404:
      return "not found; check --repo OWNER/NAME, --pr N and --api-url, and that the token can see the repository "
             "(GitHub answers 404, not 403, to a token without access)";
    case 422:
      return "GitHub refused the request body; this is a driftgate bug if it persists, please report it";
    default:
      return "";
  }
}

std::string next_link(const std::string& link_header) {
  // <https://api.github.com/...&page=2>; rel="next", <...>; rel="last"
  size_t at = 0;
  while (at < link_header.size()) {
    size_t open = link_header.find('<', at);
    size_t close = link_header.find('>', open);
    if (open == std::string::npos || close == std::string::npos) {
      return "";
    }
    size_t end = link_header.find(',', close);
    std::string params = link_header.substr(close + 1, end == std::string::npos ? std::string::npos : end - close - 1);
    if (params.find("rel=\"next\"") != std::string::npos) {
      return link_header.substr(open + 1, close - open - 1);
    }
    if (end == std::string::npos) {
      return "";
    }
    at = end + 1;
  }
  return "";
}

bool is_github_login(const std::string& login) {
  std::string name = login;
  const std::string bot = "[bot]";
  if (name.size() > bot.size() && name.compare(name.size() - bot.size(), bot.size(), bot) == 0) {
    name.resize(name.size() - bot.size());
  }
  return !name.empty() && name.size() <= 39 && name.front() != '-' && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::optional<std::string> GithubApi::authenticated_login() {
  HttpResponse response;
  try {
    response = m_client.send("GET", m_api_url + "/user");
  } catch (const ApiError& e) {
    // "... by integration": a GitHub App installation token; GET /user is for users' tokens only.
    if (e.status() == 403 && e.missing_permission() &&
        std::string(e.what()).find("not accessible by integration") != std::string::npos) {
      return std::nullopt;
    }
    throw;
  }
  std::string login = lower_login(json_string_field(parse_body(response, "GET /user"), "login"));
  if (login.empty()) {
    throw Error(
        "GitHub API: GET /user has no \"login\"; cannot tell our own comments from others' "
        "(pass --comment-author LOGIN)");
  }
  return login;
}

std::vector<ThreadComment> GithubApi::list_comments(int pr) {
  std::vector<ThreadComment> comments;
  std::string url = repo_url() + "/issues/" + std::to_string(pr) + "/comments?per_page=100";
  std::string first = url;
  // Bounded: 100 pages of 100 comments is far beyond any real PR. A listing that does
  // not end within them, or whose next link comes back to a page already read, is an
  // error: the sticky comment may be on a page not read, and creating another would
  // leave two (github_post.cc creates only after a complete listing).
  std::set<std::string> seen;
  for (int page = 0; !url.empty(); ++page) {
    if (page == k_max_pages) {
      throw Error("GitHub API: GET " + first + " still has a next page after " + std::to_string(k_max_pages) +
                  " pages of 100 comments; the listing does not end, so no comment was created or updated");
    }
    if (!seen.insert(url).second) {
      throw Error("GitHub API: GET " + first + ": page " + std::to_string(page) +
                  "'s Link header leads back to a page already read (" + url +
                  "); the listing loops, so no comment was created or updated");
    }
    HttpResponse response = m_client.send("GET", url);
    Json items = parse_body(response, "GET " + first);
    if (!items.is_array()) {
      throw Error("GitHub API: GET " + first + " did not return an array of comments");
    }
    for (const auto& item : items) {
      ThreadComment comment;
      comment.id = json_id_text(json_field(item, "id"));
      if (item.contains("user") && item["user"].is_object()) {
        comment.author = lower_login(json_string_field(item["user"], "login"));
      }
      comment.body = json_string_field(item, "body");
      comments.push_back(std::move(comment));
    }
    std::string next = next_link(response.header("link").value_or(""));
    // Follow only links to the same API, so a forged header cannot send the token elsewhere.
    url = next.rfind(m_api_url + "/", 0) == 0 ? next : "";
  }
  return comments;
}

std::string GithubApi::create_comment(int pr, const std::string& body) {
  HttpResponse response =
      m_client.send("POST", repo_url() + "/issues/" + std::to_string(pr) + "/comments", Json{{"body", body}}.dump());
  std::string id = json_id_text(json_field(parse_body(response, "POST comment"), "id"));
  if (id.empty()) {
    throw Error("GitHub API: POST comment on #" + std::to_string(pr) +
                " answered without a numeric \"id\"; the comment may exist, but cannot be updated by id");
  }
  return id;
}

void GithubApi::update_comment(const std::string& id, const std::string& body) {
  m_client.send("PATCH", repo_url() + "/issues/comments/" + id, Json{{"body", body}}.dump());
}

void GithubApi::create_status(const std::string& sha, const std::string& state, const std::string& context,
                              const std::string& description, const std::string& target_url) {
  Json request{{"state", state}, {"context", context}, {"description", truncate_utf8(description, 140)}};
  if (!target_url.empty()) {
    request["target_url"] = target_url;
  }
  m_client.send("POST", repo_url() + "/statuses/" + url_encode(sha), request.dump());
}

void GithubApi::create_check_run(const std::string& sha, const std::string& name, const std::string& conclusion,
                                 const std::string& title, const std::string& summary, const std::string& details_url) {
  Json request{{"name", name},
               {"head_sha", sha},
               {"status", "completed"},
               {"conclusion", conclusion},
               {"output", Json{{"title", title}, {"summary", summary}}}};
  if (!details_url.empty()) {
    request["details_url"] = details_url;
  }
  m_client.send("POST", repo_url() + "/check-runs", request.dump());
}

GithubPull GithubApi::get_pull(int number) {
  std::string what = "GET pull " + std::to_string(number);
  Json pull = parse_body(m_client.send("GET", repo_url() + "/pulls/" + std::to_string(number)), what);
  GithubPull result;
  Json number_field = json_field(pull, "number");
  result.number = json_positive_int(number_field);
  result.state = json_string_field(pull, "state");
  if (pull.contains("head") && pull["head"].is_object()) {
    result.head_sha = json_string_field(pull["head"], "sha");
  }
  if (pull.contains("base") && pull["base"].is_object() && pull["base"].contains("repo") &&
      pull["base"]["repo"].is_object()) {
    result.base_repo = json_string_field(pull["base"]["repo"], "full_name");
  }
  return result;
}

std::vector<int> GithubApi::pulls_of_commit(const std::string& sha) {
  std::string url = repo_url() + "/commits/" + url_encode(sha) + "/pulls?per_page=100";
  return pull_numbers(parse_body(m_client.send("GET", url), "GET pulls of commit"));
}

std::vector<int> GithubApi::open_pulls_from(const std::string& owner, const std::string& branch) {
  std::string url = repo_url() + "/pulls?state=open&head=" + url_encode(owner + ":" + branch) + "&per_page=100";
  return pull_numbers(parse_body(m_client.send("GET", url), "GET open pulls from " + owner + ":" + branch));
}

}  // namespace driftgate

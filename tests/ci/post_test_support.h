// Fakes and builders shared by the posting tests: a clock that never sleeps, a
// transport that records requests and answers from a script, report.json builders.
#pragma once

#include <chrono>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ci/clock.h"
#include "ci/http_transport.h"

namespace driftgate::test {

// Starts at a fixed epoch; sleep_for advances it and records the wait.
class FakeClock : public Clock {
 public:
  std::chrono::system_clock::time_point now() override { return m_now; }
  void sleep_for(std::chrono::milliseconds duration) override {
    sleeps.push_back(duration);
    m_now += duration;
  }
  long long epoch_seconds() const {
    return std::chrono::duration_cast<std::chrono::seconds>(m_now.time_since_epoch()).count();
  }
  std::vector<std::chrono::milliseconds> sleeps;

 private:
  std::chrono::system_clock::time_point m_now{std::chrono::seconds(1'800'000'000)};
};

// Records every request; answers with the scripted responses in order, then 200 "{}".
class RecordingTransport : public HttpTransport {
 public:
  HttpResponse send(const HttpRequest& request) override {
    requests.push_back(request);
    if (script.empty()) {
      return HttpResponse{200, {}, "{}", ""};
    }
    HttpResponse response = script.front();
    script.pop_front();
    return response;
  }
  std::deque<HttpResponse> script;
  std::vector<HttpRequest> requests;
};

// shared/api beside the checkout, or "" when absent (tests then skip, saying so).
inline std::string shared_api_dir() {
  std::string dir = DRIFTGATE_SHARED_API;
  return std::filesystem::exists(dir + "/github/openapi-subset.json") ? dir : "";
}

// A check entry of report.json.
inline nlohmann::json report_check(const std::string& id, const std::string& diff_class, bool gated,
                                   const std::string& message = "") {
  return nlohmann::json{{"id", id},
                        {"experiment", id.substr(0, id.find('/'))},
                        {"class", diff_class},
                        {"gated", gated},
                        {"status_before", "pass"},
                        {"status_after", gated ? "fail_numeric" : "pass"},
                        {"max_abs_before", 1e-7},
                        {"max_abs_after", gated ? 0.25 : 1e-6},
                        {"message", message},
                        {"notes", nlohmann::json::array()}};
}

// A report.json document as driftgate diff --report writes it (schema 1).
inline nlohmann::json make_report(const std::string& verdict, const std::vector<nlohmann::json>& checks) {
  nlohmann::json counts = nlohmann::json::object();
  for (const char* name : {"regressed", "crashed", "missing", "failure_grew", "new_failure", "drift_grew",
                           "task_changed", "new", "fixed", "unchanged"}) {
    counts[name] = 0;
  }
  for (const auto& check : checks) {
    counts[check["class"].get<std::string>()] = counts[check["class"].get<std::string>()].get<int>() + 1;
  }
  return nlohmann::json{
      {"schema", 1},
      {"verdict", verdict},
      {"reason", ""},
      {"exit_code", verdict == "fail" ? 1 : 0},
      {"run", {{"sha", std::string(40, 'b')}, {"env_key", "e1"}}},
      {"baseline",
       {{"sha", std::string(40, 'a')}, {"env_key", "e1"}, {"steps", 1}, {"start_sha", std::string(40, 'a')}}},
      {"env_mismatch", false},
      {"env_changes", ""},
      {"notes", nlohmann::json::array()},
      {"gated_classes", {"regressed", "crashed", "missing"}},
      {"gated_present", verdict == "fail" ? nlohmann::json{"regressed"} : nlohmann::json::array()},
      {"counts", counts},
      {"experiment_changes", nlohmann::json::array()},
      {"checks", checks}};
}

}  // namespace driftgate::test

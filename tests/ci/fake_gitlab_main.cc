// The fake GitLab as a process, for tests that drive driftgate through another
// tool (gitlab_ci_local_test.sh). Usage:
//   fake_gitlab URL_FILE STOP_FILE SUMMARY_FILE [ROLE [PIPELINE_ID=SHA...]]
// Serves on 127.0.0.1 (ephemeral port), writes its v4 URL to URL_FILE, serves until
// STOP_FILE exists (at most 10 minutes), then writes the notes, statuses and
// violations it saw to SUMMARY_FILE as JSON. ROLE is the token's role (default
// developer; a reporter's commit status is refused, as GitLab refuses it); each
// PIPELINE_ID=SHA is a pipeline that ran on SHA.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "tests/ci/fake_gitlab_server.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: fake_gitlab URL_FILE STOP_FILE SUMMARY_FILE [ROLE [PIPELINE_ID=SHA...]]\n";
    return 2;
  }
  driftgate::test::FakeGitlabServer server("314", "glpat-ciLocalTestToken42", argc > 4 ? argv[4] : "developer");
  for (int i = 5; i < argc; ++i) {
    std::string pipeline = argv[i];
    size_t equals = pipeline.find('=');
    if (equals == std::string::npos) {
      std::cerr << "fake_gitlab: " << pipeline << ": expected PIPELINE_ID=SHA\n";
      return 2;
    }
    server.add_pipeline(std::stoll(pipeline.substr(0, equals)), pipeline.substr(equals + 1));
  }
  std::ofstream(std::string(argv[1]) + ".tmp") << server.url() << "\n";
  std::filesystem::rename(std::string(argv[1]) + ".tmp", argv[1]);
  for (int i = 0; i < 12000 && !std::filesystem::exists(argv[2]); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  nlohmann::json summary{
      {"notes", nlohmann::json::array()}, {"statuses", server.statuses()}, {"violations", server.violations()}};
  for (const auto& note : server.notes(9)) {
    summary["notes"].push_back({{"id", note.id}, {"author_id", note.author_id}, {"body", note.body}});
  }
  std::ofstream(argv[3]) << summary.dump(2) << "\n";
  return 0;
}

// libFuzzer target: the CI event payload parsers (ci/ci_context.h and
// ci/github_target.h, which both read it through ci/event_payload.h), fed the payload
// GITHUB_EVENT_PATH names.
//
// The first byte picks the event name; the rest is the payload. Both readers must
// either resolve or throw driftgate::Error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "ci/ci_context.h"
#include "ci/github_target.h"
#include "core/error.h"

namespace {

// The payload file of this fuzzing process, removed at exit.
struct PayloadFile {
  std::string path =
      (std::filesystem::temp_directory_path() / ("driftgate-fuzz-event-" + std::to_string(::getpid()) + ".json"))
          .string();
  ~PayloadFile() { std::filesystem::remove(path); }
};

const std::string& payload_path() {
  static const PayloadFile file;
  return file.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const k_events[] = {"pull_request", "workflow_run", "push", "pull_request_target"};
  if (size == 0) {
    return 0;
  }
  std::string event = k_events[data[0] % 4];
  {
    std::ofstream out(payload_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  std::map<std::string, std::string> env = {
      {"GITHUB_ACTIONS", "true"},
      {"GITHUB_EVENT_NAME", event},
      {"GITHUB_EVENT_PATH", payload_path()},
      {"GITHUB_REPOSITORY", "owner/repo"},
      {"GITHUB_API_URL", "https://api.github.com"},
      {"GITHUB_SERVER_URL", "https://github.com"},
      {"GITHUB_RUN_ID", "42"},
      {"GITHUB_SHA", "0123456789abcdef0123456789abcdef01234567"},
      {"GITHUB_TOKEN", "fuzz-token-value"},
  };
  try {
    (void)driftgate::read_ci_context(env);
  } catch (const driftgate::Error&) {
  }
  try {
    (void)driftgate::resolve_github_target(env, driftgate::GithubFlags{});
  } catch (const driftgate::Error&) {
  }
  return 0;
}

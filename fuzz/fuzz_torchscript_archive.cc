// libFuzzer target: the model-file pre-flight (runner/torchscript_archive.h), which
// reads a zip's end record and central directory, data.pkl's first opcodes and the
// root class's (deflated) code from a file nobody vouched for.
//
// Every input is written to one scratch file (the pre-flight reads files, as the
// runner hands it a model path) and must come back as "" or one of the known problem
// phrases, without throwing; a forward-less module's listed methods never include
// forward.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "runner/torchscript_archive.h"

namespace {

// One scratch file per fuzzing process, removed at exit.
const std::string& scratch_path() {
  static const std::string path = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "driftgate-fuzz-XXXXXX").string();
    int fd = ::mkstemp(pattern.data());
    if (fd < 0) {
      std::abort();
    }
    ::close(fd);
    std::atexit([] { std::remove(scratch_path().c_str()); });
    return pattern;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = scratch_path();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) {
    std::abort();
  }
  const std::string problem = driftgate::torchscript_archive_problem(path);
  if (problem.empty()) {
    return 0;
  }
  // Every problem is one of the phrases that follow "model file 'x' ".
  const char* const phrases[] = {
      "cannot be read",       "is not a TorchScript archive",  "is truncated or damaged", "is damaged",
      "is a zip archive but", "holds a pickled Python object", "has no forward method"};
  bool known = false;
  for (const char* phrase : phrases) {
    known = known || problem.rfind(phrase, 0) == 0;
  }
  if (!known) {
    std::abort();
  }
  // A forward-less module's listed methods never include forward.
  const std::string only = "has only ";
  size_t listed = problem.find(only);
  if (problem.rfind("has no forward method", 0) == 0 && listed != std::string::npos) {
    std::string methods =
        ", " + problem.substr(listed + only.size(), problem.find(')', listed) - listed - only.size()) + ",";
    if (methods.find(", forward,") != std::string::npos) {
      std::abort();
    }
  }
  return 0;
}

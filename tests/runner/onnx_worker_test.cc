// The runner's side of driftgate-ort (runner/onnx_worker.h) driven by stand-in workers:
// the worker is the one the caller names (RunnerOptions::onnx_worker), started through
// runner/subprocess.h, and each way it can fail to start says so. A real worker is
// exercised end to end where ONNX Runtime is built (tests/e2e/onnxruntime_test.py).
#include "runner/onnx_worker.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "core/error.h"
#include "core/file_util.h"
#include "tests/support/temp_dir.h"

namespace driftgate {
namespace {

// An executable shell script at `path`.
std::string script(const std::string& path, const std::string& body) {
  write_file_atomic(path, "#!/bin/sh\n" + body);
  ::chmod(path.c_str(), 0755);
  return path;
}

std::string start_error(const std::string& worker) {
  OnnxSettings settings;
  settings.provider = "dnnl";
  settings.optimization = "basic";
  settings.threads = 3;
  try {
    OnnxWorker started(worker, "m.onnx", settings);
  } catch (const Error& e) {
    return e.what();
  }
  return "(started)";
}

TEST(OnnxWorker, TheWorkerIsTheOneTheOptionsName) {
  test::TempDir dir;
  // It gets the model and the settings as arguments, and its refusal is the error.
  const std::string echo = script(dir / "echo-worker", "echo \"{\\\"ok\\\":false,\\\"error\\\":\\\"$*\\\"}\"\n");
  EXPECT_EQ(start_error(echo), "ONNX model 'm.onnx': ONNX Runtime refused it: m.onnx dnnl basic 3");
  EXPECT_EQ(start_error(dir / "none"), "ONNX model 'm.onnx': the ONNX Runtime worker '" + (dir / "none") +
                                           "' is missing (No such file or directory); it is built beside driftgate "
                                           "where libonnxruntime-dev is installed (Debian 13)");
  EXPECT_EQ(onnx_worker_path(echo), echo);
  EXPECT_EQ(onnx_worker_path("").substr(onnx_worker_path("").rfind('/') + 1), "driftgate-ort");
}

TEST(OnnxWorker, AWorkerThatEndsIsNamedWithHowItEnded) {
  test::TempDir dir;
  EXPECT_EQ(start_error(script(dir / "dies", "exit 3\n")),
            "ONNX model 'm.onnx': the ONNX Runtime worker ended (exited with code 3)");
  EXPECT_EQ(start_error(script(dir / "half", "printf '{\"ok\":'\nkill -9 $$\n")),
            "ONNX model 'm.onnx': the ONNX Runtime worker ended in the middle of a line (killed by signal 9 "
            "(Killed))");
  EXPECT_EQ(start_error(script(dir / "talks", "echo hello\n")),
            "ONNX model 'm.onnx': the ONNX Runtime worker answered something else than its protocol: hello");
}

TEST(OnnxWorker, TheVersionIsAskedOfTheNamedWorker) {
  test::TempDir dir;
  EXPECT_EQ(onnx_runtime_version(script(dir / "v", "echo 1.21.0\n")), "1.21.0");
  EXPECT_EQ(onnx_runtime_version(script(dir / "fails", "echo 1.21.0; exit 1\n")), "unknown");
  EXPECT_EQ(onnx_runtime_version(script(dir / "chatty", "echo 'ONNX Runtime 1.21.0'\n")), "unknown");
  EXPECT_EQ(onnx_runtime_version(dir / "none"), "unknown");
}

}  // namespace
}  // namespace driftgate

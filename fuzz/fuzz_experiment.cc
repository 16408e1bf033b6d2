// libFuzzer target: the experiment YAML loader (core/experiment.h).
//
// Any text must either parse into an Experiment or throw driftgate::Error; every
// other exception, crash, hang or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/experiment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    driftgate::Experiment experiment = driftgate::parse_experiment(text, "fuzz/experiment.yaml");
    (void)experiment;
  } catch (const driftgate::Error&) {
    // A clear error is the expected answer to bad input.
  }
  return 0;
}

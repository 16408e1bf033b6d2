// libFuzzer target: the JSONL record reader (core/record.h, parse_run).
//
// A run file either parses or throws driftgate::Error; a parsed file is written
// back and must parse again to the same lines (the reader accepts what the writer
// writes).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  driftgate::RunFile run;
  try {
    run = driftgate::parse_run(in, "fuzz.jsonl");
  } catch (const driftgate::Error&) {
    return 0;
  }
  std::ostringstream written;
  driftgate::write_run(written, run);
  std::istringstream again(written.str());
  try {
    driftgate::RunFile reread = driftgate::parse_run(again, "fuzz-rewritten.jsonl");
    std::ostringstream rewritten;
    driftgate::write_run(rewritten, reread);
    if (rewritten.str() != written.str()) {
      std::abort();  // writing is not stable: the reader and writer disagree
    }
  } catch (const driftgate::Error&) {
    std::abort();  // the reader refuses what the writer wrote
  }
  return 0;
}

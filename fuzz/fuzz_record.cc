// libFuzzer target: the JSONL record reader (core/record.h, parse_run) and the
// diff's digest reader (core/run_digest.h) beside it.
//
// A run file either parses or throws driftgate::Error; a parsed file is written
// back and must parse again to the same lines (the reader accepts what the writer
// writes). The digest reader must agree: the same error message, or the same checks;
// and read again with its own digest as `like` (every line vouched for), the same again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/record.h"
#include "core/run_digest.h"

namespace {

// What a digest says of its checks, in id order.
std::string digest_text(const driftgate::RunDigest& digest) {
  std::string text = std::to_string(digest.checks.size()) + "\n";
  for (size_t i : digest.id_order) {
    const driftgate::CheckDigest& check = digest.checks[i];
    text += std::string(check.id) + "|" + std::string(check.experiment) + "|" + std::string(check.output) + "|" +
            std::string(check.message) + "|" + driftgate::to_string(check.status) + "|" +
            (check.has_stats ? std::to_string(check.max_abs) : "-") + "\n";
  }
  return text;
}

// The digest reader against the strict reader's verdict on the same bytes.
void check_digest(const std::string& bytes, const driftgate::RunFile* run, const std::string& error) {
  std::string digested;
  try {
    driftgate::RunDigest digest = driftgate::digest_run_text(bytes, "fuzz.jsonl");
    if (run == nullptr) {
      std::abort();  // the digest reader accepted what the strict reader refused
    }
    digested = digest_text(digest);
    if (digested != digest_text(driftgate::digest_view(*run))) {
      std::abort();  // other values than the strict reader's
    }
    if (digest_text(driftgate::digest_run_text(bytes, "fuzz.jsonl", &digest)) != digested) {
      std::abort();  // lines vouched for by their own digest read otherwise
    }
  } catch (const driftgate::Error& e) {
    if (run != nullptr || e.what() != error) {
      std::abort();  // refused what the strict reader accepted, or with another message
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  std::istringstream in(bytes);
  driftgate::RunFile run;
  try {
    run = driftgate::parse_run(in, "fuzz.jsonl");
  } catch (const driftgate::Error& e) {
    check_digest(bytes, nullptr, e.what());
    return 0;
  }
  check_digest(bytes, &run, "");
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

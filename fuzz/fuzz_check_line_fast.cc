// libFuzzer target: the fast path of reading a check line (core/check_line_fast.h):
// read_canonical_check (the digest read_run_digest keeps) and read_canonical_record
// (the whole record read_run_file keeps), one pass in two modes.
//
// The input is one check line. Whenever the digest reader accepts it, the strict reader
// alone (parse_check_line_strict) and the DOM reader of whole runs (parse_run_dom_only,
// on a run built around the line) must accept it too, with the same id, experiment,
// output, status, message and max_abs; and the digest must view the line itself. The
// record reader accepts only lines the digest reader accepts, and every value it reads
// is the strict reader's (the two records write the same bytes). An input of two lines is also read
// as read_run_digest reads neighbours, with one CanonicalMemo: the second line must read
// as it reads alone (the memo may only skip what the first line repeats). Anything else
// aborts.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "core/check_line_fast.h"
#include "core/error.h"
#include "core/record.h"

namespace {

using driftgate::CheckDigest;
using driftgate::CheckRecord;

bool same_number(double a, double b) {
  return std::isnan(a) ? std::isnan(b) : (a == b && std::signbit(a) == std::signbit(b));
}

bool same_values(const CheckDigest& digest, const CheckRecord& check) {
  return digest.id == check.id && digest.experiment == check.experiment && digest.output == check.output &&
         digest.status == check.status && digest.message == check.message &&
         digest.has_stats == check.stats.has_value() &&
         (!check.stats || same_number(digest.max_abs, check.stats->max_abs));
}

std::optional<CheckRecord> strict_check(std::string_view line) {
  try {
    return driftgate::parse_check_line_strict(line);
  } catch (const driftgate::Error&) {
    return std::nullopt;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

// The line read by parse_run_dom_only inside the smallest run that holds the
// experiment, output and status the digest claims (other values: the summary differs).
std::optional<CheckRecord> dom_check(const std::string& line, const CheckDigest& digest) {
  driftgate::RunHeader header;
  header.tool_version = "fuzz";
  header.commit.sha = "0123456789abcdef0123456789abcdef01234567";
  driftgate::ExperimentHeader experiment;
  experiment.name = std::string(digest.experiment);
  experiment.inputs = {"i"};
  experiment.reference = "r";
  experiment.targets = {"t"};
  header.experiments.push_back(experiment);
  driftgate::RunSummary summary = driftgate::summarize_keys(header, 1, [&](size_t) {
    return driftgate::CheckKey{digest.experiment, digest.output, digest.status};
  });
  std::istringstream in(driftgate::header_to_json_line(header) + "\n" + line + "\n" +
                        driftgate::summary_to_json_line(summary) + "\n");
  try {
    driftgate::RunFile run = driftgate::parse_run_dom_only(in, "fuzz.jsonl");
    if (run.checks.size() != 1) {
      return std::nullopt;
    }
    return run.checks[0];
  } catch (const driftgate::Error&) {
    return std::nullopt;
  }
}

// read_canonical_check_at over `line` and what follows it must say what
// read_canonical_check says of the line, and view the same bytes.
void check_at_agrees(const std::string& line, bool accepted, const CheckDigest& digest) {
  for (const char* after : {"", "x\n", "{\"type\":\"summary\"}\n", "\n\n"}) {
    std::string text = line + "\n" + after;
    CheckDigest at;
    size_t length = driftgate::read_canonical_check_at(text, at);
    if (length != (accepted ? line.size() : 0)) {
      std::abort();  // the *_at reader disagrees with the one-line reader
    }
    if (accepted && (at.id != digest.id || at.message != digest.message || at.status != digest.status ||
                     at.timings_at != digest.timings_at || at.line.data() != text.data())) {
      std::abort();
    }
  }
}

bool same_reading(const CheckDigest& a, const CheckDigest& b) {
  return a.id == b.id && a.experiment == b.experiment && a.output == b.output && a.status == b.status &&
         a.message == b.message && a.has_stats == b.has_stats && same_number(a.max_abs, b.max_abs) &&
         a.timings_at == b.timings_at;
}

// Two lines (the input split at its one '\n'), read in turn with one memo.
void memo_agrees(const std::string& input) {
  size_t cut = input.find('\n');
  if (cut == std::string::npos || input.find('\n', cut + 1) != std::string::npos) {
    return;
  }
  const std::string text = input + "\n";
  const std::string first = input.substr(0, cut);
  const std::string second = input.substr(cut + 1);
  driftgate::CanonicalMemo memo;
  for (const auto& [at, line] : {std::pair<size_t, const std::string&>{0, first}, {cut + 1, second}}) {
    CheckDigest alone;
    bool accepted = driftgate::read_canonical_check(line, alone);
    CheckDigest with_memo;
    size_t length = driftgate::read_canonical_check_at(std::string_view(text).substr(at), with_memo, &memo);
    if (length != (accepted ? line.size() : 0)) {
      std::abort();  // the memo changed whether the line is accepted
    }
    if (accepted && (!same_reading(with_memo, alone) || with_memo.line.data() != text.data() + at)) {
      std::abort();  // or what it reads
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string line(reinterpret_cast<const char*>(data), size);
  CheckDigest digest;
  bool accepted = driftgate::read_canonical_check(line, digest);
  CheckRecord full;
  if (driftgate::read_canonical_record(line, full)) {
    if (!accepted) {
      std::abort();  // the record reader took a line the digest reader refuses
    }
    std::optional<CheckRecord> strict = strict_check(line);
    if (!strict || driftgate::check_to_json_line(full) != driftgate::check_to_json_line(*strict)) {
      std::abort();  // read a value otherwise than the strict reader (or took what it refuses)
    }
  }
  if (line.find('\n') == std::string::npos) {
    check_at_agrees(line, accepted, digest);
  } else {
    memo_agrees(line);
  }
  if (!accepted) {
    return 0;
  }
  if (digest.line.data() != line.data() || digest.line.size() != line.size() || digest.record != nullptr) {
    std::abort();  // the digest of a canonical line views the line itself
  }
  std::optional<CheckRecord> strict = strict_check(line);
  if (!strict || !same_values(digest, *strict)) {
    std::abort();  // accepted what read_run_file's check reader refuses or reads otherwise
  }
  std::optional<CheckRecord> dom = dom_check(line, digest);
  if (!dom || !same_values(digest, *dom)) {
    std::abort();  // accepted what the DOM reader refuses or reads otherwise
  }
  return 0;
}

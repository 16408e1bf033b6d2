// The record format: the contract between the runner and the differ.
//
// A run file is JSONL with three kinds of line, each with a "type" field:
//   1) one "header": schema version, tool version, the commit (SHA, branch, dirty),
//      the environment and its key, and one entry per experiment with the content
//      hashes of its config and model file;
//   2) one "check" per comparison (experiment, input, reference, target, output);
//   3) one "summary": per experiment, the expected number of checks derived from the
//      config (inputs x targets x outputs) beside the number written, and counts by
//      status.
// Key order and row order are stable, so two runs of the same code on the same
// machine produce the same lines except for timings. The JSON Schema lives in
// schema/record.schema.json. A check line, its record, its writer and its strict reader
// are core/check_line.h's; this is the run file around them: header, summary, the whole
// file written and read. This header is torch-free by design.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/check_line.h"
#include "core/environment.h"
#include "core/input_file.h"

namespace driftgate {

inline constexpr int k_record_schema_version = 1;

struct CommitInfo {
  std::string sha;     // 40 hex digits; "unknown" outside a git repository
  std::string branch;  // "" when detached or unknown
  bool dirty = false;  // tracked files differ from HEAD
};

// One experiment as the run saw it: enough to re-derive the expected check count
// and to tell "the model changed" apart from drift.
// One argument of one input as the run header lists it (`input_args`); a List[Tensor]'s
// items are listed one by one as "name[0]", "name[1]", ...
struct InputArgumentRecord {
  std::string name;            // forward's argument; "" for the one tensor of an input without `args:`
  std::string dtype;           // "int64"; a scalar's: "int64", "float64" or "bool"
  std::vector<int64_t> shape;  // [] for a scalar
  std::string source;          // "tensor", "image", "random(normal, seed 0)", "random_int(0, 512, seed 3)",
                               // "fill(1)", "value(16)"
  std::string path;            // files (tensor, image): as the config resolves it; else ""
  std::string hash;            // files: git blob id (SHA-1) of the file's bytes; else ""
};

struct InputArgumentsRecord {
  std::string input;
  std::vector<InputArgumentRecord> args;
};

struct ExperimentHeader {
  std::string name;
  std::string config_path;
  std::string config_hash;  // git blob id (SHA-1) of the config file's bytes
  std::string model_path;
  std::string model_hash;  // git blob id (SHA-1) of the model file's bytes
  std::vector<std::string> inputs;
  std::string reference;
  std::vector<std::string> targets;
  Tolerance tolerance;
  std::string tolerance_origin;                          // "configs/x.yaml:12:3" or "default"
  std::vector<ToleranceOverride> tolerance_overrides{};  // `tolerances:`, written only when there are some
  // Each input's arguments (`input_args`), written only when some input is other than one
  // float32 tensor (`args:`, or a tensor of another dtype); older files have none.
  std::vector<InputArgumentsRecord> input_args{};
};

// Which slice of the suite a run file holds: `run --shard i/N` writes shard i of N
// (0-based); `merge` joins all N into one run with count 1.
struct ShardInfo {
  int index = 0;
  int count = 1;
};

struct RunHeader {
  int schema = k_record_schema_version;
  ShardInfo shard;  // written only when count > 1
  std::string tool_version;
  CommitInfo commit;
  Environment environment;
  std::vector<ExperimentHeader> experiments;
};

struct ExperimentSummary {
  std::string name;
  int64_t inputs = 0;
  int64_t targets = 0;
  int64_t outputs = 0;          // output leaves of the reference (1 when the reference failed)
  int64_t expected_checks = 0;  // inputs * targets * outputs
  int64_t checks = 0;           // records written
};

struct RunSummary {
  std::vector<ExperimentSummary> experiments;
  int64_t expected_checks = 0;
  int64_t checks = 0;
  std::map<std::string, int64_t> by_status;  // status name -> count, every status present
};

// A whole run file in memory.
struct RunFile {
  RunHeader header;
  std::vector<CheckRecord> checks;
  RunSummary summary;
};

// Recomputes the summary from the header's experiments and the checks.
// outputs per experiment = distinct output paths seen for it (at least 1).
RunSummary summarize(const RunHeader& header, const std::vector<CheckRecord>& checks);
// The same over records held elsewhere (no copies: a run may hold millions).
RunSummary summarize(const RunHeader& header, const std::vector<const CheckRecord*>& checks);

// summarize() over checks held in any form: `key_of(i)` gives check i's experiment,
// output and status (views valid until it returns).
struct CheckKey {
  std::string_view experiment;
  std::string_view output;
  CheckStatus status;
};
RunSummary summarize_keys(const RunHeader& header, size_t count, const std::function<CheckKey(size_t)>& key_of);
// Whether two summaries agree in every count (parse_run's check of a file's summary).
bool same_summary(const RunSummary& a, const RunSummary& b);

// Writes header, checks (in the given order, check_to_json_line) and summary as JSONL.
void write_run(std::ostream& out, const RunFile& run);
std::string header_to_json_line(const RunHeader& header);
std::string summary_to_json_line(const RunSummary& summary);

// Parses a run file. Throws driftgate::Error with "<name>:<line>: <what>" on a
// malformed line, a wrong schema version, a missing header or summary, a
// duplicated check id, or a summary that disagrees with the checks.
// Check lines go through a fast reader (core/check_line_fast.h) that hands every line it
// cannot vouch for to the DOM reader, so results and errors are those of the DOM reader.
RunFile parse_run(std::istream& in, const std::string& name_for_messages);
// parse_run with every line through the DOM reader: the oracle that tests (and
// fuzzers) hold the fast path to.
RunFile parse_run_dom_only(std::istream& in, const std::string& name_for_messages);
// Reads a run file through core/input_file.h: a regular file within the cap of
// `kind` (k_run_file; k_baseline_file for a stored baseline), else driftgate::Error.
RunFile read_run_file(const std::string& path);
RunFile read_run_file(const std::string& path, const InputKind& kind);
// The header and summary lines as parse_run reads them (for readers built on this format,
// differ/run_digest.h; a check line's readers are core/check_line.h's). They throw
// driftgate::Error or nlohmann's exception on a line parse_run would refuse.
RunHeader parse_header_line(std::string_view line);
RunSummary parse_summary_line(std::string_view line);
// Only the header line of a run file, with read_run_file's checks and messages for
// it: what a caller needs to start choosing a baseline while the checks are read.
RunHeader read_run_header(const std::string& path);

}  // namespace driftgate

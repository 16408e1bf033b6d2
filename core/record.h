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
// schema/record.schema.json. This header is torch-free by design.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/environment.h"
#include "core/input_file.h"
#include "core/tier2_profile.h"
#include "core/tolerance.h"

namespace driftgate {

inline constexpr int k_record_schema_version = 1;

// The fixed status taxonomy of a check.
enum class CheckStatus {
  k_pass,                  // every element within |a-b| <= atol + rtol*|b|
  k_fail_numeric,          // some elements outside the tolerance
  k_fail_shape,            // shapes differ
  k_fail_dtype,            // dtypes differ where the backend promised the same dtype
  k_fail_nonfinite,        // NaN masks or infinity signs differ
  k_fail_structure,        // output structure differs (missing key, other container, non-tensor leaf differs)
  k_fail_device,           // an output did not come from the device the backend claims (never label cpu as cuda)
  k_unsupported,           // an output of a kind tier 1 cannot compare: never a silent pass
  k_crash_ref,             // the reference threw, aborted or could not load; message says where
  k_crash_target,          // the target threw, aborted or could not load; message says where
  k_timeout,               // a forward exceeded the per-check time limit
  k_ref_nondeterministic,  // the reference differs from itself between repeats by more than the tolerance
  k_skipped,               // the backend is not available in this build or on this machine; message says why
  k_fail_task,             // tier 3: the task answer changed beyond the task tolerances (class, boxes, mask)
  k_nonfinite_output,      // every element is NaN or infinite in both outputs alike: nothing was compared
};

const char* to_string(CheckStatus status);
// Throws driftgate::Error on an unknown name.
CheckStatus parse_check_status(const std::string& name);
// Everything but pass and skipped counts as a failure.
bool is_failure(CheckStatus status);
// crash_ref, crash_target and timeout: nothing was compared.
bool is_crash(CheckStatus status);
// Every status, in taxonomy order.
const std::vector<CheckStatus>& all_check_statuses();

// One distinct line a backend printed on stderr, and how often (runner/backend_messages.h).
struct BackendMessage {
  std::string backend;  // "cpu_fp32", "oracle_fp64", a target's name
  std::string text;     // printable: invisible characters escaped, at most k_backend_message_max bytes
  int64_t count = 1;
};

// Errors of both sides against the float64 oracle (a separately loaded float64 CPU
// instance of the same model), so "drift" can be told apart from "the reference is
// the less accurate one".
struct OracleErrors {
  double reference_max_abs = 0.0;  // max |reference - oracle|
  double target_max_abs = 0.0;     // max |target - oracle|
  double reference_rmse = 0.0;     // sqrt(mean((reference - oracle)^2))
  double target_rmse = 0.0;
};

// What one backend's output tensor actually was (not what was asked for).
struct ObservedTensor {
  std::string device;         // "cpu", "cuda:0"
  std::string dtype;          // "float32", "bfloat16", ...
  std::string memory_format;  // "contiguous", "channels_last", "strided"
  std::vector<int64_t> shape;
};

// Tier-1 statistics of one output tensor, computed in float64 on the CPU.
// Indices are multi-dimensional positions into the reference's shape.
struct Tier1Stats {
  int64_t numel = 0;
  int64_t mismatches = 0;  // elements failing |a-b| <= atol + rtol*|b| (b: reference)
  double mismatch_fraction = 0.0;
  double max_abs = 0.0;
  std::vector<int64_t> max_abs_index;
  double max_abs_reference = 0.0;  // reference value at max_abs_index
  double max_abs_target = 0.0;     // target value at max_abs_index
  double max_rel = 0.0;            // |a-b| / max(|b|, rel_floor)
  std::vector<int64_t> max_rel_index;
  double rel_floor = 0.0;                // denominator floor used for max_rel
  double max_abs_reference_value = 0.0;  // max |b| over finite elements (scale of the output)
  int64_t nan_reference = 0;
  int64_t nan_target = 0;
  int64_t inf_reference = 0;
  int64_t inf_target = 0;
  // Smallest atol that would have passed at the configured rtol:
  // max over finite elements of max(0, |a-b| - rtol*|b|). Makes any atol sweep an offline query.
  double min_atol = 0.0;
  // Distribution of |a-b| over finite elements.
  double mean_abs = 0.0;
  double p99_abs = 0.0;  // nearest rank: the ceil(0.99 n)-th smallest
  double rmse = 0.0;
  double cosine_similarity = 1.0;  // of the finite elements as vectors; 1 when both are all zero
  // Largest distance in units in the last place of the reference's dtype (the target
  // rounded to that dtype first): 0 is bit-identical, 1 is the next representable value.
  double max_ulp = 0.0;
  // Smallest rtol that would have passed at the configured atol (inf when an element
  // with reference 0 differs by more than atol).
  double min_rtol = 0.0;
  // Present when the float64 oracle ran for this output.
  std::optional<OracleErrors> oracle;
  // Largest |a-b| between two repeated forwards of the same backend on the same input
  // (run-to-run variance; 0 means bitwise reproducible). Absent when repeats == 1.
  std::optional<double> reference_repeat_max_abs;
  std::optional<double> target_repeat_max_abs;
};

// Tier 3: what a task adapter measured for one task check (output "task:...").
struct TaskResult {
  std::string kind;                       // "classification", "detection", "segmentation"
  std::string adapter;                    // how the outputs were read: "top1+top5", "anchors+nms=stable", "argmax"
  std::map<std::string, double> metrics;  // e.g. top1_agreement, matched_fraction, map50, miou
  std::vector<std::string> findings;      // each flip with the reference's margin, what restored agreement
};

// `run --mitigate`: one way found to make a failing target agree again.
struct MitigationChoice {
  std::string restores;                      // "tier1" (every check passes) or "tier3" (the task checks pass)
  std::vector<std::string> fallbacks;        // e.g. {"onednn_off", "contiguous"}; empty for a selective choice
  std::vector<std::string> float32_modules;  // selective: the submodules run in float32 (else empty)
  std::string backend;                       // the variant as run: "cpu_bf16+onednn_off", "cpu_bf16+fp32_modules_7"
  double latency_ms = 0.0;                   // its steady-state median forward, averaged over the failing inputs
  double latency_iqr_ms = std::numeric_limits<double>::quiet_NaN();  // its interquartile range, likewise
  // The variant computes as the reference does (it is the reference again): ranked after
  // every other choice whatever its latency.
  bool reference_equivalent = false;
};

// `run --mitigate`: per failing target, the cheapest fallback set that restores tier-1
// agreement, the cheapest that restores task agreement where a task check failed and it
// is another set (else the tier-1 choice is also the task's), and the selective per-layer
// choice (float32_modules) of a target cast to a reduced dtype. Empty `choices`: none found.
struct Mitigation {
  std::vector<MitigationChoice> choices;
  double target_ms = 0.0;                                          // the failing target's median forward
  double reference_ms = std::numeric_limits<double>::quiet_NaN();  // the reference's (nan in older records)
  int64_t tried = 0;                                               // variants tried (fallback sets and layer sets)
  // Why the selective search found no module set ("all 171 submodules in float32 do not
  // restore agreement"); empty when it found one or did not apply (not a reduced dtype).
  std::string selective_note;
  std::string message;  // one line for the terminal
};

struct CheckRecord {
  std::string id;  // "<experiment>/<input>/<reference>~<target>/<output>", stable across commits
  std::string experiment;
  std::string input;
  std::string reference;  // backend names
  std::string target;
  std::string output;  // output path: "out", "out[0]", "out['boxes']"
  CheckStatus status = CheckStatus::k_pass;
  std::string message;  // why it failed, errored or was skipped; empty on pass
  Tolerance tolerance;
  std::optional<ObservedTensor> observed_reference;
  std::optional<ObservedTensor> observed_target;
  std::optional<Tier1Stats> stats;  // absent for error/skipped/structure failures
  // Tier 2: where, layer by layer, the target leaves the reference (failing checks with
  // activations: on_failure, every compared check with activations: always).
  std::optional<Localization> localization;
  std::optional<TaskResult> task;        // tier-3 checks only
  std::optional<Mitigation> mitigation;  // failing checks of a `run --mitigate` run
  // What the check's backends printed on stderr (LibTorch's warnings and logs) while they
  // loaded and ran its input, deduplicated in order of appearance; empty when nothing.
  std::vector<BackendMessage> messages;
  // Steady-state latency of one forward on this check's input (Experiment::latency_*):
  // the median and the interquartile range (q3 - q1) of the timed runs. Outside the
  // deterministic part of the record; nan where a record from before the timed runs
  // has no range.
  double reference_ms = 0.0;
  double target_ms = 0.0;
  double reference_iqr_ms = std::numeric_limits<double>::quiet_NaN();
  double target_iqr_ms = std::numeric_limits<double>::quiet_NaN();
};

// Builds the stable check id from its parts.
std::string make_check_id(const std::string& experiment, const std::string& input, const std::string& reference,
                          const std::string& target, const std::string& output);

struct CommitInfo {
  std::string sha;     // 40 hex digits; "unknown" outside a git repository
  std::string branch;  // "" when detached or unknown
  bool dirty = false;  // tracked files differ from HEAD
};

// One experiment as the run saw it: enough to re-derive the expected check count
// and to tell "the model changed" apart from drift.
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

// Writes header, checks (in the given order) and summary as JSONL.
void write_run(std::ostream& out, const RunFile& run);
std::string header_to_json_line(const RunHeader& header);
std::string check_to_json_line(const CheckRecord& check);
std::string summary_to_json_line(const RunSummary& summary);

// Parses a run file. Throws driftgate::Error with "<name>:<line>: <what>" on a
// malformed line, a wrong schema version, a missing header or summary, a
// duplicated check id, or a summary that disagrees with the checks.
// Check lines go through a fast reader (core/check_json.h) that hands every line it
// cannot vouch for to the DOM reader, so results and errors are those of the DOM reader.
RunFile parse_run(std::istream& in, const std::string& name_for_messages);
// parse_run with every line through the DOM reader: the oracle that tests (and
// fuzzers) hold the fast path to.
RunFile parse_run_dom_only(std::istream& in, const std::string& name_for_messages);
// Reads a run file through core/input_file.h: a regular file within the cap of
// `kind` (k_run_file; k_baseline_file for a stored baseline), else driftgate::Error.
RunFile read_run_file(const std::string& path);
RunFile read_run_file(const std::string& path, const InputKind& kind);
// One line of each kind as parse_run reads it (for readers built on this format,
// differ/run_digest.h). They throw driftgate::Error or nlohmann's exception on a line
// parse_run would refuse; a check line goes through the fast path (core/check_json.h)
// first, and parse_check_line_strict is the strict reader alone (the oracle of tests).
RunHeader parse_header_line(std::string_view line);
RunSummary parse_summary_line(std::string_view line);
CheckRecord parse_check_line(std::string_view line);
CheckRecord parse_check_line_strict(std::string_view line);
// Only the header line of a run file, with read_run_file's checks and messages for
// it: what a caller needs to start choosing a baseline while the checks are read.
RunHeader read_run_header(const std::string& path);

}  // namespace driftgate

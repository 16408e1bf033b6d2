// The check line: the record of one comparison (experiment, input, reference, target,
// output) and its one JSON line in a run file, with its one writer and its strict reader.
//
// A run or baseline holds one such line per check, up to millions of them:
//   - check_to_json_line is the only writer. Its bytes are what nlohmann's dump of the
//     same ordered object writes (key order, number format, escaping), written member by
//     member without a DOM;
//   - the strict reader (parse_check_line_strict, check_from_json: nlohmann over
//     core/strict_json.h) reads any line and owns every error;
//   - the fast reader (core/check_line_fast.h) reads the writer's layout in one pass for
//     read_run_file and the diff, and hands every other line to the strict reader.
// The members of "stats" are one table, k_stats_members, that the writer, the strict
// reader and the fast reader all walk. Where a new member goes:
//   - a tier-1 statistic: a Tier1Stats field and one row of k_stats_members;
//   - any other member: its field here, its lines in check_line.cc's writer and strict
//     reader (check_to_json_line, check_from_json). The fast reader needs nothing: a line
//     with a member it does not know is the strict reader's (teach it only for speed);
//   - a member of the task result (TaskResult): its field, task_result_json and
//     task_result_from_json in check_line.cc.
// Torch-free: the differ reads these.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/record_json.h"
#include "core/tier2_profile.h"
#include "core/tolerance.h"

namespace driftgate {

// How every check line starts: the writer writes it, the readers look for it.
inline constexpr std::string_view k_check_line_prefix = "{\"type\":\"check\",\"id\":";

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
// Written and read in k_stats_members' order (below), not in this one.
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

// One member of the "stats" object: its name, what its value is, and the Tier1Stats
// field that holds it (the one pointer its kind uses). Optional members are written
// only when the field holds a value and read only when the line has them.
struct StatsMember {
  enum class Kind { k_integer, k_number, k_integers, k_optional_number, k_oracle };
  const char* name;
  Kind kind;
  int64_t Tier1Stats::*integer = nullptr;
  double Tier1Stats::*number = nullptr;
  std::vector<int64_t> Tier1Stats::*integers = nullptr;
  std::optional<double> Tier1Stats::*optional_number = nullptr;
  std::optional<OracleErrors> Tier1Stats::*oracle = nullptr;

  constexpr bool optional() const { return kind == Kind::k_optional_number || kind == Kind::k_oracle; }
};

constexpr StatsMember stats_integer(const char* name, int64_t Tier1Stats::*field) {
  return {name, StatsMember::Kind::k_integer, field};
}
constexpr StatsMember stats_number(const char* name, double Tier1Stats::*field) {
  return {name, StatsMember::Kind::k_number, nullptr, field};
}
constexpr StatsMember stats_integers(const char* name, std::vector<int64_t> Tier1Stats::*field) {
  return {name, StatsMember::Kind::k_integers, nullptr, nullptr, field};
}
constexpr StatsMember stats_optional(const char* name, std::optional<double> Tier1Stats::*field) {
  return {name, StatsMember::Kind::k_optional_number, nullptr, nullptr, nullptr, field};
}

// The members of "stats", in the order they are written (and the strict reader reads
// them, so that of two bad members it names the same one as before). A new statistic
// is one row here and its Tier1Stats field.
inline constexpr StatsMember k_stats_members[] = {
    stats_integer("numel", &Tier1Stats::numel),
    stats_integer("mismatches", &Tier1Stats::mismatches),
    stats_number("mismatch_fraction", &Tier1Stats::mismatch_fraction),
    stats_number("max_abs", &Tier1Stats::max_abs),
    stats_integers("max_abs_index", &Tier1Stats::max_abs_index),
    stats_number("max_abs_reference", &Tier1Stats::max_abs_reference),
    stats_number("max_abs_target", &Tier1Stats::max_abs_target),
    stats_number("max_rel", &Tier1Stats::max_rel),
    stats_integers("max_rel_index", &Tier1Stats::max_rel_index),
    stats_number("rel_floor", &Tier1Stats::rel_floor),
    stats_number("max_abs_reference_value", &Tier1Stats::max_abs_reference_value),
    stats_integer("nan_reference", &Tier1Stats::nan_reference),
    stats_integer("nan_target", &Tier1Stats::nan_target),
    stats_integer("inf_reference", &Tier1Stats::inf_reference),
    stats_integer("inf_target", &Tier1Stats::inf_target),
    stats_number("min_atol", &Tier1Stats::min_atol),
    stats_number("min_rtol", &Tier1Stats::min_rtol),
    stats_number("mean_abs", &Tier1Stats::mean_abs),
    stats_number("p99_abs", &Tier1Stats::p99_abs),
    stats_number("rmse", &Tier1Stats::rmse),
    stats_number("cosine_similarity", &Tier1Stats::cosine_similarity),
    stats_number("max_ulp", &Tier1Stats::max_ulp),
    {"oracle", StatsMember::Kind::k_oracle, nullptr, nullptr, nullptr, nullptr, &Tier1Stats::oracle},
    stats_optional("reference_repeat_max_abs", &Tier1Stats::reference_repeat_max_abs),
    stats_optional("target_repeat_max_abs", &Tier1Stats::target_repeat_max_abs),
};
inline constexpr size_t k_stats_member_count = std::size(k_stats_members);

// The members of "oracle" (a k_oracle stats member), in the order they are written.
struct OracleMember {
  const char* name;
  double OracleErrors::*field;
};
inline constexpr OracleMember k_oracle_members[] = {
    {"reference_max_abs", &OracleErrors::reference_max_abs},
    {"target_max_abs", &OracleErrors::target_max_abs},
    {"reference_rmse", &OracleErrors::reference_rmse},
    {"target_rmse", &OracleErrors::target_rmse},
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

// The check's JSON line (no newline): the one writer. Throws nlohmann's exception on a
// string that is not UTF-8, as a DOM dump would.
std::string check_to_json_line(const CheckRecord& check);

// The strict reader of one check line. Throws driftgate::Error (or nlohmann's exception on
// text that is not JSON) on any line read_run_file refuses: a missing or mistyped member,
// an unknown status or rule, a non-printable name, an id that does not match its parts.
CheckRecord parse_check_line_strict(std::string_view line);
// The same over a parsed line (an object whose "type" is "check").
CheckRecord check_from_json(const OrderedJson& json);
// The fast reader first (core/check_line_fast.h), the strict reader for any line it
// hands over: the values and errors of the strict reader.
CheckRecord parse_check_line(std::string_view line);

// A tolerance's JSON object, as check lines and the run header write it:
// {"rule":..,"atol":..,"rtol":..} then "k" when above 0 and "origin" when known.
void append_tolerance_json(std::string& out, const Tolerance& tolerance);
// Its strict reader; k and origin are optional (records written before them have neither).
Tolerance tolerance_from_json(const OrderedJson& json);

}  // namespace driftgate

// `driftgate run --mitigate`: the automatic mitigation search, ranked by cost.
//
// For a target whose checks fail, it tries the fallbacks the paper recommends and
// LibTorch offers (force float32, native kernels instead of oneDNN, contiguous
// instead of channels-last, plain eager instead of graph rewriting, and for
// detection the stable NMS adapter), every set of up to 3 of them, as targets of one
// variant run, and judges each on the failing inputs. Among the sets that restore
// agreement the cheapest in steady-state latency wins; a set that turns the target
// back into the reference (reference_equivalent) ranks after every other one whatever
// its latency. It reports the cheapest set that restores tier-1 agreement and, when a
// task check failed and another set is cheaper for it, the cheapest that restores
// task (tier-3) agreement.
//
// For a target cast to bfloat16 or float16 (not autocast) it also searches a
// selective fallback: the smallest set of submodules (BackendSpec::float32_modules)
// run in float32 that restores agreement (task agreement when a task check failed,
// else tier 1). It starts from the modules of the first divergent layers that tier 2
// named; failing that, after checking that all eligible modules in float32 restore at
// all, it bisects over the module list as Polygraphy's `debug precision` does (a
// prefix from the input side and a suffix from the output side in parallel, two
// targets of one run per step), then shrinks the set found (dropping chunks, then
// single members, while it still restores). Variant runs per target are bounded.
//
// The choices are recorded on every failing check of the target, with the
// target's and the reference's latency, and printed.
// Torch-free: the forwards run through a callback (the runner's own experiment run),
// and so does the listing of the eligible submodules.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.h"
#include "core/record.h"

namespace driftgate {

enum class Fallback { k_fp32, k_onednn_off, k_contiguous, k_eager, k_stable_nms, k_ort_basic };

// "fp32", "onednn_off", "contiguous", "eager", "stable_nms", "ort_basic".
const char* to_string(Fallback fallback);

// The fallbacks that change something for `target`: fp32 for another dtype or
// autocast, onednn_off where LibTorch's oneDNN is on, contiguous for channels-last, eager
// for a rewritten graph (for an ONNX Runtime target: the TorchScript model itself),
// ort_basic for ONNX Runtime above its basic optimization level (no fusions), stable_nms
// where `native_nms_failed` (a detection task's native NMS check failed).
std::vector<Fallback> applicable_fallbacks(const BackendSpec& target, bool native_nms_failed);

// Every subset of `fallbacks` with 1..max_size members: by size, then in the order given;
// none with both eager and ort_basic (eager leaves no ONNX Runtime for ort_basic to change).
std::vector<std::vector<Fallback>> fallback_sets(const std::vector<Fallback>& fallbacks, size_t max_size);

// `target` with the backend fallbacks of `set` applied, named "<target>+fp32+onednn_off".
BackendSpec apply_fallbacks(const BackendSpec& target, const std::vector<Fallback>& set);

// Whether `variant` computes what `reference` computes: the same device, dtype, autocast,
// memory format, oneDNN, effective threads (0: `run_threads`), graph mode,
// optimize_numerics, TF32 and float32_modules. (The NMS mode only changes judging.)
bool reference_equivalent(const BackendSpec& variant, const BackendSpec& reference, int run_threads);

// Runs an experiment (the same inputs, other targets) and returns its records.
using VariantRunner = std::function<std::vector<CheckRecord>(const Experiment&)>;

// The submodules of the experiment's model that `target` can run in float32
// (BackendSpec::float32_modules), in execution order; empty: none, or not listable.
using LayerLister = std::function<std::vector<std::string>(const Experiment&, const BackendSpec&)>;

struct MitigationOptions {
  LayerLister list_layers;  // empty: no selective search
  int run_threads = 1;      // the run's --threads: what a backend's threads 0 means
  int max_runs = 24;        // variant runs per failing target, the fallback sets' run included
  // One more run that measures the failing target and every choice side by side (and the
  // reference with them), so their latencies compare like with like; false keeps the search
  // runs' own figures (the search logic's tests, with latencies a fake runner makes up).
  bool measure_together = true;
};

// For each target of `experiment` with failing checks in `records` (failures that
// compared something: not crashes, skips, unsupported outputs or a nondeterministic
// reference), searches as described above and sets `mitigation` on each of its
// failing records. Writes one line per target to `log`.
void mitigate_failures(const Experiment& experiment, std::vector<CheckRecord>& records, const VariantRunner& run,
                       const MitigationOptions& options, std::ostream& log);
// The same without the selective search.
void mitigate_failures(const Experiment& experiment, std::vector<CheckRecord>& records, const VariantRunner& run,
                       std::ostream& log);

// The smallest module set the selective search finds for a predicate over module sets
// (what mitigate_failures does with variant runs, for a predicate that answers at
// once): seed first, else the bisection and shrinking over `layers`; nullopt when
// even all layers fail or `max_steps` predicate batches run out before one passes.
// For tests and for a reader who wants the search without the runner.
std::optional<std::vector<std::string>> search_layers(
    const std::vector<std::string>& layers, const std::vector<std::string>& seed,
    const std::function<bool(const std::vector<std::string>&)>& restores, int max_steps);

// The terminal's lines for one target's mitigation: a head line (target and reference
// latency, variants tried), then one line per choice with its latency against both,
// "(= reference)" where the choice is the reference again, then why the selective search
// found no set where it did not. The head line alone, saying so, when nothing restored
// agreement. `task_failed`: a task check of the target failed, so
// a tier-1 choice with no task choice listed apart is also the task's cheapest.
std::vector<std::string> mitigation_lines(const Mitigation& mitigation, const std::string& target,
                                          bool task_failed = false);

}  // namespace driftgate

// Tier 2's result for one check: where, layer by layer, a target's activations
// leave the reference's, and how sure driftgate is about it.
//
// It exists so that a failing check says where the drift starts instead of only
// that the output differs: the runner captures every activation of reference,
// float64 oracle and target (runner/tier2_*.h) and writes this compact per-layer
// profile into the check's record; `driftgate explain` prints it; the text and
// markdown reports draw it as a sparkline. Torch-free: the differ reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/record_json.h"

namespace driftgate {

enum class LayerStatus {
  k_ok,              // within this layer's threshold
  k_divergent,       // over this layer's threshold
  k_not_observable,  // the target's graph fused or removed this value: never counted as divergence
};

const char* to_string(LayerStatus status);
// Throws driftgate::Error on an unknown name.
LayerStatus parse_layer_status(const std::string& name);

// One captured value of the reference's graph, in graph order.
struct Tier2Layer {
  // "<module path>/<op kind>#<n> (<source file>:<line>)", e.g.
  // "layer1.0.relu/aten::relu_#1 (conv.py:459)"; the module path is "" at the top level.
  std::string name;
  LayerStatus status = LayerStatus::k_ok;
  // max |target - reference| / (max - min of the reference): the range-normalized error.
  double delta = 0.0;
  // The same metric for the fp32 reference against the float64 oracle: what float32
  // rounding alone produces at this layer (0 when the experiment has no oracle).
  double noise_floor = 0.0;
  // delta above this is divergence: max(k_noise_factor * noise_floor scaled to the
  // target's precision, the check's tolerance at this layer's scale)
  // (runner/tier2_localize.h says how).
  double threshold = 0.0;
  // CRADLE's rank R_L = (delta_L - max delta_pred) / (max delta_pred + eps) over the
  // observed layers feeding this one: large where error starts, near 0 where it is
  // only carried or amplified.
  double rank = 0.0;
  // Why a not-observable layer was not compared: k_reason_fused (the target's graph fused,
  // folded or removed it: the rewrite's own doing), or what else kept it from being
  // compared ("not run on the target: it took the other branch", "runs 3 times on the
  // reference, 2 on the target", "inside an AOTInductor package"). Empty for an observed
  // layer, and in records written before reasons were (read as k_reason_fused).
  std::string reason{};
};

// The reason of a layer that a graph rewrite fused, folded or removed.
inline constexpr const char* k_reason_fused = "fused";

// What a localization found, in one word.
enum class LocalizationStatus {
  k_localized,          // a first divergent layer
  k_partial,            // none among the compared layers, but some layers were not compared for
                        // a reason other than fusion: the rest of the model may hold it
  k_within_thresholds,  // every layer compared (or fused) is within its threshold: when tier 1
                        // fails, the drift is diffuse, spread over layers
};
const char* to_string(LocalizationStatus status);

struct Localization {
  // "position" (the target keeps the reference's graph: runtime settings only) or
  // "boundary" (the target rewrote the graph: values paired only where both graphs
  // compute the same function of the input, at the boundaries of what it fused), or
  // "onnx_scope" (an ONNX Runtime target: values paired at module exits that both graphs show
  // to be the same function of the input, runner/tier2_onnx.h), or
  // "package_outputs" (an AOTInductor package: outputs only, every layer not observable).
  std::string alignment;
  LocalizationStatus status = LocalizationStatus::k_within_thresholds;
  // For a partial profile: what was not compared and why ("12 of 157 layers not compared:
  // from features.1/aten::add_#1 (...) on, not run on the target: it took the other branch");
  // empty otherwise.
  std::string not_captured;
  int64_t layers = 0;          // values of the reference's forward: one row per run of a captured node
  int64_t observed = 0;        // of those, found in the target
  int64_t not_observable = 0;  // layers - observed: fused or removed by the target's graph
  // The module calls the reference made on this input (each run of a call inside a loop
  // counts; calls that compute no value of their own, such as a pass-through, do not), and of
  // those the ones whose output (the last value computed inside the call) was compared. 0 and 0
  // in records written before module calls were counted.
  int64_t calls = 0;
  int64_t calls_compared = 0;
  double coverage = 0.0;  // calls_compared / calls (observed / layers in records without calls)
  // The first layer in graph order over its threshold; empty when none is.
  std::string first_divergent;
  // The not-observable layers feeding the first divergent one back to the last observed
  // layers, in graph order: where a graph rewrite fused the layer the divergence starts
  // in (a perturbed conv folded with its batch norm), it is among these.
  std::vector<std::string> fused_before;
  // The divergent layer with the highest CRADLE rank; empty when none is divergent.
  std::string highest_rank;
  // Re-injection: the target's ops that compute the first divergent value (one op, or
  // the fused group of a rewritten graph) alone, fed the reference's values before them.
  // "confirmed" (they alone reproduce the divergence), "not_confirmed", or "not_run" (no
  // divergent layer, or they cannot be re-run on their own: the note says why).
  std::string reinjection = "not_run";
  double reinjection_delta = 0.0;  // their range-normalized error (confirmed/not_confirmed)
  // The target's layers that were re-run, in graph order: the divergent one and the ops fused
  // with it (a convolution whose output layout its kernel chose, with the activation after it).
  std::vector<std::string> reinjection_group;
  std::string note;                 // why not run, or what went wrong; may be empty
  int64_t peak_rss_kib = 0;         // peak resident memory of the process that localized
  std::vector<Tier2Layer> profile;  // one per reference layer, graph order
};

// Compact JSON object (one line): per layer [name, status, delta, noise_floor,
// threshold, rank] and, for a not-observable layer, its reason as a seventh element.
// Non-finite numbers are written as "inf"/"nan" strings. The members added later (status,
// not_captured, calls, calls_compared, reinjection_group) are optional to the reader, so
// records written before them read as before.
std::string localization_to_json(const Localization& localization);
// Strict: unknown or missing fields and wrong types throw driftgate::Error.
Localization parse_localization_json(const std::string& text);
// The same over a parsed object (a check line's "localization" member).
Localization localization_from_json(const OrderedJson& json);

// One character per observed layer, log-scaled delta / threshold: ' ' not
// observable, '▁'..'▇' below the threshold, '█' over it. At most `width`
// characters (layers are grouped by their worst ratio when there are more).
std::string layer_sparkline(const Localization& localization, size_t width = 60);

// "first divergent: NAME (rank R; re-injection confirmed); coverage 87% (...)"; a partial
// profile says so and what was not compared, never only "no divergent layer".
std::string describe_localization(const Localization& localization);

}  // namespace driftgate

#include "runner/tier2_localize.h"

#include <ATen/ATen.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "core/error.h"
#include "core/file_util.h"
#include "runner/rules.h"
#include "runner/subprocess.h"
#include "runner/tier2_align.h"
#include "runner/tier2_capture.h"
#include "runner/tier2_onnx.h"

namespace driftgate {
namespace {

// The range-normalized difference of `value` from `base` (the denominator's owner).
struct Difference {
  bool comparable = true;  // same shape
  double delta = 0.0;      // max |value - base| / scale
  double scale = 1.0;      // max - min of base (its max |.| when constant, else 1)
  double max_abs = 0.0;    // max |base|
};

Difference normalized_difference(const at::Tensor& value, const at::Tensor& base) {
  Difference result;
  if (value.sizes() != base.sizes()) {
    result.comparable = false;
    return result;
  }
  if (base.numel() == 0) {
    return result;
  }
  if (!base.is_floating_point()) {
    result.delta = value.to(base.scalar_type()).equal(base) ? 0.0 : 1.0;
    return result;
  }
  at::Tensor b = base.to(at::kDouble);
  at::Tensor v = value.to(at::kDouble);
  at::Tensor finite = at::isfinite(b);
  if (finite.any().item<bool>()) {
    at::Tensor values = b.masked_select(finite);
    const double low = values.min().item<double>();
    const double high = values.max().item<double>();
    result.max_abs = std::max(std::abs(low), std::abs(high));
    result.scale = high > low ? high - low : (result.max_abs > 0.0 ? result.max_abs : 1.0);
  }
  // The same NaN or the same infinity at a position counts as equal; any other
  // non-finite difference is infinitely far.
  at::Tensor same_special = (at::isnan(v) & at::isnan(b)) | (at::isinf(v) & at::isinf(b) & (v == b));
  at::Tensor difference = (v - b).abs().masked_fill(same_special, 0.0).nan_to_num(INFINITY, INFINITY, INFINITY);
  result.delta = difference.max().item<double>() / result.scale;
  return result;
}

// The unit roundoff of the precision a backend computes in.
double unit_roundoff(const BackendSpec& spec) {
  if (spec.tf32) {
    return std::ldexp(1.0, -11);  // TF32: float32's range with a 10-bit mantissa
  }
  switch (spec.dtype) {
    case DType::k_float64:
      return std::ldexp(1.0, -53);
    case DType::k_bfloat16:
      return std::ldexp(1.0, -8);
    case DType::k_float16:
      return std::ldexp(1.0, -11);
    default:
      return std::ldexp(1.0, -24);
  }
}

double threshold_for(double noise_floor, double precision_ratio, const Difference& scale, const Tolerance& tolerance) {
  return std::max(k_noise_factor * noise_floor * precision_ratio,
                  (tolerance.atol + tolerance.rtol * scale.max_abs) / scale.scale);
}

bool same_graph(const BackendSpec& a, const BackendSpec& b) {
  auto runs_eager_graph = [](GraphMode mode) { return mode == GraphMode::k_eager || mode == GraphMode::k_fused; };
  return a.graph == b.graph || (runs_eager_graph(a.graph) && runs_eager_graph(b.graph));
}

int64_t bytes_of(const Capture& capture) {
  int64_t bytes = 0;
  for (const auto& [run, value] : capture.values) {
    bytes += static_cast<int64_t>(value.nbytes());
  }
  return bytes;
}

// Coverage counts the model: the module calls the reference made on this input (a run of a
// call inside a loop counts once per iteration) and, of those, the ones whose output (the last
// value computed in the call) row `compared` says was compared. The same on every target.
std::pair<int64_t, int64_t> module_calls(const std::vector<CapturePoint>& points, const Trace& trace,
                                         const std::function<bool(size_t)>& compared) {
  std::map<std::pair<size_t, size_t>, size_t> exit_of;  // (call, run of it) -> its last row
  for (size_t r = 0; r < trace.executions.size(); ++r) {
    const std::vector<size_t>& calls = points[trace.executions[r].point].calls;
    for (size_t i = 0; i < calls.size(); ++i) {
      exit_of[{calls[i], trace.call_runs[r][i]}] = r;
    }
  }
  int64_t compared_calls = 0;
  for (const auto& [call, row] : exit_of) {
    compared_calls += compared(row) ? 1 : 0;
  }
  return {static_cast<int64_t>(exit_of.size()), compared_calls};
}

// A layer of the profile: one run of a reference point, in the order the reference ran them.
struct Row {
  Execution run;
  std::optional<size_t> target;  // the target's run of the same function (an index into its trace), if compared
  std::optional<size_t> oracle;  // the oracle's run of the same function (an index into its trace), if any
};

// Ops whose output layout on a oneDNN tensor their kernel chooses from the weights (a
// blocked format, channels padded to a multiple of 8 or 16), whatever the input's layout:
// their inputs can be fed in a plain oneDNN layout without changing what they compute.
bool chooses_output_layout(const CapturePoint& point) {
  return point.op.find("convolution") != std::string::npos || point.op.find("linear") != std::string::npos;
}

// Everything one localization works with.
class Localizer {
 public:
  Localizer(BackendInstance& reference, BackendInstance* oracle, BackendInstance& target, const at::Tensor& input,
            const LocalizeOptions& options)
      : m_reference(reference),
        m_oracle(oracle),
        m_target(target),
        m_input(input),
        m_options(options),
        m_reference_graph(reference.module()),
        m_onnx(target.onnx_worker()) {
    if (oracle != nullptr) {
      m_oracle_graph.emplace(oracle->module());
    }
    if (m_onnx == nullptr) {
      m_target_graph.emplace(target.module());
    }
    m_precision_ratio = std::max(1.0, unit_roundoff(target.spec()) / unit_roundoff(reference.spec()));
  }

  Localization run() {
    align();
    make_rows();
    compare_in_windows();
    Localization result;
    result.alignment = to_string(m_alignment.kind);
    result.layers = static_cast<int64_t>(m_rows.size());
    assign_statuses_and_ranks(result);
    count_calls(result);
    describe_what_was_not_compared(result);
    if (m_onnx != nullptr) {
      if (m_marking_changed > 0.0) {
        add_note(
            "marking the compared values as outputs changed what ONNX Runtime computes: that session's "
            "outputs differ from the plain session's by up to " +
            format_value(m_marking_changed) + ", and the layers describe that session");
      }
      if (!result.first_divergent.empty() || !m_options.reinject_at.empty()) {
        add_note("re-injection is not run on ONNX Runtime targets: the session runs its graph whole");
      }
    } else if (std::optional<size_t> row = reinjected_row(result)) {
      try {
        reinject(*row, result);
      } catch (const Error& e) {
        add_note(std::string("re-injection not run: ") + e.what());
      } catch (const std::exception& e) {
        add_note("re-injection not run: " + torch_error_summary(e));
      }
    }
    result.note = m_note;
    result.peak_rss_kib = peak_rss_kib();
    return result;
  }

 private:
  const std::vector<CapturePoint>& points() const { return m_reference_graph.points(); }

  void add_note(const std::string& note) {
    if (!note.empty()) {
      m_note += (m_note.empty() ? "" : "; ") + note;
    }
  }

  // One forward of each backend that records what ran (no values), then the alignment of
  // those runs: values are paired run by run, so a loop that a rewrite unrolled pairs
  // iteration by iteration, and a branch that did not run has nothing to pair.
  void align() {
    m_reference_trace = capture(m_reference, m_reference_graph, {}).trace;
    m_reference_runs = unrolled_points(points(), m_reference_trace);
    if (m_oracle != nullptr) {
      m_oracle_trace = capture(*m_oracle, *m_oracle_graph, {}).trace;
      m_oracle_alignment = align_points(m_reference_runs, unrolled_points(m_oracle_graph->points(), m_oracle_trace),
                                        same_graph(m_reference.spec(), m_oracle->spec()));
    }
    if (m_onnx != nullptr) {
      OnnxScopeAlignment paired = align_onnx_scopes(m_reference_runs, m_onnx->graph());
      m_alignment.kind = AlignmentKind::k_onnx_scope;
      m_alignment.target_of = std::move(paired.target_of);
      m_alignment.observed = paired.observed;
      m_onnx_values = std::move(paired.values);
      add_note(paired.note);
      return;
    }
    m_target_trace = capture(m_target, *m_target_graph, {}).trace;
    std::set<std::string> target_code;
    for (const CapturePoint& point : m_target_graph->points()) {
      if (!point.callstack.empty()) {
        target_code.insert(code_of(point));
      }
    }
    m_alignment = align_points(m_reference_runs, unrolled_points(m_target_graph->points(), m_target_trace),
                               same_graph(m_reference.spec(), m_target.spec()), &target_code);
  }

  // One row per run of the reference, with where the oracle and the target ran the same
  // function; a row with no counterpart is not observable, and the row says why.
  void make_rows() {
    std::map<std::string, size_t> reference_runs;  // code key -> runs on the reference
    for (const CapturePoint& run : m_reference_runs) {
      ++reference_runs[code_of(run)];
    }
    std::set<std::string> target_nodes;         // code keys of the target's graph
    std::map<std::string, size_t> target_runs;  // code key -> runs on the target
    if (m_target_graph) {
      for (const CapturePoint& point : m_target_graph->points()) {
        target_nodes.insert(code_of(point));
      }
      for (const Execution& run : m_target_trace.executions) {
        ++target_runs[code_of(m_target_graph->points()[run.point])];
      }
    }
    m_rows.resize(m_reference_runs.size());
    m_layers.resize(m_reference_runs.size());
    for (size_t r = 0; r < m_reference_runs.size(); ++r) {
      Row& row = m_rows[r];
      row.run = m_reference_trace.executions[r];
      m_layers[r].name = m_reference_runs[r].name;
      if (m_oracle != nullptr) {
        row.oracle = m_oracle_alignment.target_of[r];
      }
      row.target = m_alignment.target_of[r];
      if (row.target) {
        continue;
      }
      m_layers[r].reason = k_reason_fused;
      const CapturePoint& point = m_reference_runs[r];
      const std::string key = code_of(point);
      if (m_onnx != nullptr || point.callstack.empty() || target_nodes.count(key) == 0) {
        continue;  // the rewrite removed or merged the node: fused
      }
      const size_t here = reference_runs[key];
      const size_t there = target_runs[key];
      if (there == 0) {
        m_layers[r].reason = point.branch.empty()
                                 ? "not run on the target"
                                 : "not run on the target: it took another branch or ran the loop fewer times";
      } else if (there != here) {
        m_layers[r].reason =
            "runs " + std::to_string(here) + " times on the reference, " + std::to_string(there) + " on the target";
      }
    }
  }

  // The target's values of the wanted runs: from its capture graph, or from its ONNX Runtime
  // session with those values marked as outputs (whose final outputs are compared with the
  // plain session's: marking may change what ONNX Runtime fuses).
  // `wanted` are indices into the target's runs (its trace; for ONNX Runtime, its values).
  std::map<size_t, at::Tensor> capture_target(const std::set<size_t>& wanted) {
    std::map<size_t, at::Tensor> values;
    if (m_onnx == nullptr) {
      std::set<Execution> runs;
      for (size_t t : wanted) {
        runs.insert(m_target_trace.executions.at(t));
      }
      Capture target = capture(m_target, *m_target_graph, runs);
      for (size_t t : wanted) {
        values.emplace(t, std::move(target.values.at(m_target_trace.executions[t])));
      }
      return values;
    }
    if (wanted.empty()) {
      return values;
    }
    std::vector<std::string> names;
    for (size_t t : wanted) {
      names.push_back(m_onnx_values.at(t));
    }
    const at::Tensor prepared = m_target.prepare_input(m_input);
    if (m_plain_outputs.empty()) {
      m_plain_outputs = m_onnx->run_marked(prepared, {}).outputs;
    }
    OnnxWorker::Marked marked = m_onnx->run_marked(prepared, names);
    for (size_t i = 0; i < marked.outputs.size() && i < m_plain_outputs.size(); ++i) {
      const at::Tensor& plain = m_plain_outputs[i];
      const at::Tensor& other = marked.outputs[i];
      if (!other.equal(plain)) {
        const double difference = other.sizes() == plain.sizes() && plain.is_floating_point()
                                      ? (other.to(at::kDouble) - plain.to(at::kDouble)).abs().max().item<double>()
                                      : INFINITY;
        m_marking_changed = std::max(m_marking_changed, std::isnan(difference) ? INFINITY : difference);
      }
    }
    size_t i = 0;
    for (size_t t : wanted) {
      values.emplace(t, std::move(marked.values.at(i++)));
    }
    return values;
  }

  Capture capture(BackendInstance& instance, const CaptureGraph& graph, const std::set<Execution>& wanted,
                  ValueLayout layout = ValueLayout::k_dense) {
    Capture result;
    at::Tensor prepared = instance.prepare_input(m_input);
    instance.with_settings([&]() {
      result = graph.run(prepared, wanted, layout);
      return c10::IValue();
    });
    return result;
  }

  // Rows `window` against the oracle, then against the target; at most the reference's
  // window and one other backend's are held at once.
  void compare_window(const std::vector<size_t>& window, int64_t* bytes) {
    std::set<Execution> wanted;
    for (size_t r : window) {
      wanted.insert(m_rows[r].run);
    }
    Capture reference = capture(m_reference, m_reference_graph, wanted);
    *bytes = bytes_of(reference);
    if (m_oracle != nullptr) {
      std::set<Execution> oracle_wanted;
      for (size_t r : window) {
        if (m_rows[r].oracle) {
          oracle_wanted.insert(m_oracle_trace.executions.at(*m_rows[r].oracle));
        }
      }
      Capture oracle = capture(*m_oracle, *m_oracle_graph, oracle_wanted);
      for (size_t r : window) {
        if (m_rows[r].oracle) {
          Difference noise = normalized_difference(reference.values.at(m_rows[r].run),
                                                   oracle.values.at(m_oracle_trace.executions[*m_rows[r].oracle]));
          m_layers[r].noise_floor = noise.comparable ? noise.delta : 0.0;
        }
      }
    }
    std::set<size_t> target_wanted;
    for (size_t r : window) {
      if (m_rows[r].target) {
        target_wanted.insert(*m_rows[r].target);
      }
    }
    const std::map<size_t, at::Tensor> target = capture_target(target_wanted);
    for (size_t r : window) {
      if (!m_rows[r].target) {
        continue;
      }
      Difference difference = normalized_difference(target.at(*m_rows[r].target), reference.values.at(m_rows[r].run));
      if (!difference.comparable) {
        m_rows[r].target.reset();  // a boundary matched a value of another shape: not the same value
        m_layers[r].reason = k_reason_fused;
        continue;
      }
      m_layers[r].delta = difference.delta;
      m_layers[r].threshold =
          threshold_for(m_layers[r].noise_floor, m_precision_ratio, difference, m_options.tolerance);
    }
  }

  void compare_in_windows() {
    const size_t count = m_rows.size();
    size_t begin = 0;
    size_t window = std::min<size_t>(16, count);
    while (begin < count) {
      std::vector<size_t> rows_in_window;
      for (size_t r = begin; r < std::min(count, begin + window); ++r) {
        rows_in_window.push_back(r);
      }
      int64_t bytes = 0;
      compare_window(rows_in_window, &bytes);
      begin += rows_in_window.size();
      const int64_t per_row = std::max<int64_t>(1, bytes / static_cast<int64_t>(rows_in_window.size()));
      window = static_cast<size_t>(std::max<int64_t>(1, m_options.budget_bytes / per_row));
    }
  }

  bool observed(size_t row) const { return m_rows[row].target.has_value(); }

  // The largest delta of the observed rows feeding `row`; unobserved ones are looked
  // through to their own inputs.
  double predecessor_delta(size_t row, std::map<size_t, double>& memo) const {
    if (auto it = memo.find(row); it != memo.end()) {
      return it->second;
    }
    double worst = 0.0;
    for (size_t p : m_reference_runs[row].predecessors) {
      worst = std::max(worst, observed(p) ? m_layers[p].delta : predecessor_delta(p, memo));
    }
    return memo[row] = worst;
  }

  // The unobserved rows feeding `row`, back to observed ones, in order.
  std::vector<std::string> unobserved_before(size_t row) const {
    std::set<size_t> found;
    std::vector<size_t> stack(m_reference_runs[row].predecessors);
    while (!stack.empty()) {
      const size_t p = stack.back();
      stack.pop_back();
      if (observed(p) || !found.insert(p).second) {
        continue;
      }
      stack.insert(stack.end(), m_reference_runs[p].predecessors.begin(), m_reference_runs[p].predecessors.end());
    }
    std::vector<std::string> names;
    for (size_t p : found) {
      names.push_back(m_layers[p].name);
    }
    return names;
  }

  void assign_statuses_and_ranks(Localization& result) {
    std::map<size_t, double> memo;
    double best_rank = -INFINITY;
    for (size_t r = 0; r < m_layers.size(); ++r) {
      Tier2Layer& layer = m_layers[r];
      if (!observed(r)) {
        layer.status = LayerStatus::k_not_observable;
        layer.delta = 0.0;
        layer.threshold = 0.0;
        ++result.not_observable;
        continue;
      }
      layer.reason.clear();
      ++result.observed;
      const double before = predecessor_delta(r, memo);
      layer.rank = (layer.delta - before) / (before + k_rank_epsilon);
      if (!(layer.delta > layer.threshold)) {
        continue;
      }
      layer.status = LayerStatus::k_divergent;
      if (result.first_divergent.empty()) {
        result.first_divergent = layer.name;
        m_first_divergent = r;
        result.fused_before = unobserved_before(r);
      }
      if (layer.rank > best_rank) {
        best_rank = layer.rank;
        result.highest_rank = layer.name;
      }
    }
    result.profile = m_layers;
  }

  void count_calls(Localization& result) const {
    std::tie(result.calls, result.calls_compared) =
        module_calls(points(), m_reference_trace, [&](size_t row) { return observed(row); });
    result.coverage = result.calls > 0 ? static_cast<double>(result.calls_compared) / static_cast<double>(result.calls)
                      : m_layers.empty() ? 1.0
                                         : static_cast<double>(result.observed) / static_cast<double>(m_layers.size());
  }

  // A profile is partial when some layer was not compared for a reason other than a rewrite's
  // fusion, or some code was not captured at all: then "no divergent layer" would be a claim
  // about layers nobody looked at.
  void describe_what_was_not_compared(Localization& result) const {
    size_t count = 0;
    std::optional<size_t> first;
    for (size_t r = 0; r < m_layers.size(); ++r) {
      if (!observed(r) && m_layers[r].reason != k_reason_fused) {
        ++count;
        first = first ? first : std::optional<size_t>(r);
      }
    }
    std::string text;
    if (first) {
      text = std::to_string(count) + " of " + std::to_string(m_layers.size()) + " layers not compared, from " +
             m_layers[*first].name + " on: " + m_layers[*first].reason;
    }
    for (const std::string& node : m_reference_graph.unsupported()) {
      text += (text.empty() ? "" : "; ") + std::string("the code inside ") + node + " is not captured";
    }
    result.not_captured = text;
    if (!result.first_divergent.empty()) {
      result.status = LocalizationStatus::k_localized;
    } else {
      result.status = text.empty() ? LocalizationStatus::k_within_thresholds : LocalizationStatus::k_partial;
    }
  }

  // The row to re-inject: the one named by LocalizeOptions::reinject_at, else the first
  // divergent one.
  std::optional<size_t> reinjected_row(const Localization& result) {
    if (m_options.reinject_at.empty()) {
      return result.first_divergent.empty() ? std::nullopt : std::optional<size_t>(m_first_divergent);
    }
    for (size_t r = 0; r < m_layers.size(); ++r) {
      if (m_layers[r].name == m_options.reinject_at ||
          m_layers[r].name.substr(0, m_layers[r].name.find(" (")) == m_options.reinject_at) {
        if (!observed(r)) {
          add_note("re-injection not run: '" + m_options.reinject_at + "' is not observable on this target");
          return std::nullopt;
        }
        return r;
      }
    }
    add_note("re-injection not run: no layer is named '" + m_options.reinject_at + "'");
    return std::nullopt;
  }

  // Re-injection: the target's ops that compute the value of `row` from the nearest values
  // the two graphs share (its group: one op on an unchanged graph, a fused conv + batch norm
  // + activation on a rewritten one) run alone, fed the reference's values there (converted
  // to the dtype, memory format and layout the target had). A group input that the target
  // holds in a oneDNN layout its producing convolution chose (blocked, channels padded) is
  // not fed as a plain to_mkldnn() of the reference's value, whose layout the ops after it
  // would see differently: the convolution joins the group instead, fed in turn. "confirmed"
  // when the group alone reproduces the divergence.
  void reinject(size_t row, Localization& result) {
    const CaptureGraph& target_graph = *m_target_graph;
    const size_t target_position = *m_rows[row].target;
    const size_t target_point = m_target_trace.executions[target_position].point;
    const std::vector<std::optional<size_t>> reverse = reference_of(m_alignment, m_target_trace.executions.size());
    // The target run of point `p` that the group reads: its latest before the re-run value.
    auto input_run = [&](size_t p) -> std::optional<size_t> {
      for (size_t i = target_position; i-- > 0;) {
        if (m_target_trace.executions[i].point == p) {
          return i;
        }
      }
      return std::nullopt;
    };
    // Convolutions pulled into the group for their output layout: those whose oneDNN output
    // the divergent op reads (one step: a convolution reorders its own input whatever its layout).
    std::set<size_t> joined;
    const std::function<bool(size_t)> shared = [&](size_t p) {
      if (p == target_point || joined.count(p) != 0) {
        return false;
      }
      const std::optional<size_t> run = input_run(p);
      return run.has_value() && reverse[*run].has_value();
    };
    std::vector<size_t> target_inputs;
    std::map<size_t, at::Tensor> target;  // per group input: the target's own value, as it had it
    std::set<size_t> opaque;              // group inputs the target held in a oneDNN layout
    const bool reorders_its_input = chooses_output_layout(target_graph.points()[target_point]);
    for (int round = 0; round < 2; ++round) {
      bool reads_input = false;
      target_inputs = target_graph.group_inputs(target_point, shared, &reads_input);
      std::set<Execution> wanted;
      for (size_t p : target_inputs) {
        wanted.insert(m_target_trace.executions[*input_run(p)]);
      }
      Capture captured = capture(m_target, target_graph, wanted);
      target.clear();
      opaque.clear();
      bool grew = false;
      for (size_t p : target_inputs) {
        const Execution run = m_target_trace.executions[*input_run(p)];
        target[p] = captured.values.at(run);
        if (captured.opaque.count(run) != 0) {
          opaque.insert(p);
          if (round == 0 && !reorders_its_input && chooses_output_layout(target_graph.points()[p])) {
            grew = joined.insert(p).second || grew;
          }
        }
      }
      if (!grew) {
        break;
      }
    }
    std::set<Execution> reference_wanted{m_rows[row].run};
    std::map<size_t, Execution> reference_input;
    for (size_t p : target_inputs) {
      reference_input[p] = m_reference_trace.executions[*reverse[*input_run(p)]];
      reference_wanted.insert(reference_input[p]);
    }
    Capture reference = capture(m_reference, m_reference_graph, reference_wanted);
    const at::Tensor prepared = m_target.prepare_input(m_input);
    at::Tensor output;
    m_target.with_settings([&]() {
      output = target_graph.run_group(target_point, shared, [&](std::optional<size_t> p) -> at::Tensor {
        if (!p) {
          return prepared.clone();
        }
        const at::Tensor& like = target.at(*p);
        at::Tensor value = reference.values.at(reference_input.at(*p)).to(like.scalar_type(), false, true);
        if (like.dim() == 4 && !like.is_contiguous() && like.is_contiguous(at::MemoryFormat::ChannelsLast)) {
          value = value.contiguous(at::MemoryFormat::ChannelsLast);
        }
        return opaque.count(*p) != 0 ? value.to_mkldnn() : value;
      });
      return c10::IValue();
    });
    for (size_t p : joined) {
      result.reinjection_group.push_back(target_graph.points()[p].name);
    }
    result.reinjection_group.push_back(target_graph.points()[target_point].name);
    Difference difference = normalized_difference(output, reference.values.at(m_rows[row].run));
    result.reinjection_delta = difference.delta;
    result.reinjection =
        difference.comparable && difference.delta > m_layers[row].threshold ? "confirmed" : "not_confirmed";
  }

  BackendInstance& m_reference;
  BackendInstance* m_oracle;
  BackendInstance& m_target;
  const at::Tensor& m_input;
  LocalizeOptions m_options;
  CaptureGraph m_reference_graph;
  std::optional<CaptureGraph> m_target_graph;  // a TorchScript target's
  OnnxWorker* m_onnx = nullptr;                // an ONNX Runtime target's worker
  std::vector<std::string> m_onnx_values;      // its values that are compared
  std::vector<at::Tensor> m_plain_outputs;     // its outputs without marked values
  double m_marking_changed = 0.0;              // max |marked - plain| over the outputs
  std::string m_note;
  std::optional<CaptureGraph> m_oracle_graph;
  Alignment m_alignment;
  Alignment m_oracle_alignment;
  Trace m_reference_trace;
  std::vector<CapturePoint> m_reference_runs;  // its runs as points: one per row
  Trace m_oracle_trace;
  Trace m_target_trace;  // a TorchScript target's
  std::vector<Row> m_rows;
  std::vector<Tier2Layer> m_layers;  // per row
  size_t m_first_divergent = 0;
  // How much coarser the target computes than the reference: its layers' noise floor is
  // the reference's (measured against float64) scaled by this.
  double m_precision_ratio = 1.0;
};

BackendInstance load_runnable(const BackendSpec& spec, const BackendSource& source) {
  BackendInstance instance = BackendInstance::load(spec, source);
  if (instance.skipped()) {
    throw Error(source.config_path + ": backend '" + spec.name + "' cannot run here: " + instance.skip_reason());
  }
  return instance;
}

// The child: the localization's JSON after 'L', or the error after 'E'.
int localize_child(int fd, const LocalizeRequest& request, const at::Tensor& input) {
  std::string message;
  try {
    message = "L" + localization_to_json(localize_request(request, input));
  } catch (const Error& e) {
    message = std::string("E") + e.what();
  } catch (const std::exception& e) {
    message = "E" + torch_error_summary(e);
  }
  write_fully(fd, message.data(), message.size());
  return 0;
}

// An AOTInductor package computes its outputs in kernels that fuse across module boundaries
// and exposes nothing else: tier 1 compares those outputs. AOTInductor's intermediate value
// debug printer (AOT_INDUCTOR_DEBUG_INTERMEDIATE_VALUE_PRINTER, set when compiling) saves the
// arguments of each generated kernel, named by kernel, not the values of the model's modules,
// so no layer of the TorchScript graph has a counterpart there: every one is not observable,
// the profile is partial, and it says what can localize instead.
Localization package_outputs_only(BackendInstance& module_side, const BackendSpec& package_spec,
                                  const at::Tensor& input) {
  Localization result;
  result.alignment = "package_outputs";
  const CaptureGraph graph(module_side.module());
  Capture census;
  const at::Tensor prepared = module_side.prepare_input(input);
  module_side.with_settings([&]() {
    census = graph.run(prepared, {});
    return c10::IValue();
  });
  const bool onnx_reference = package_spec.graph == GraphMode::k_onnxruntime;
  const std::string reason = onnx_reference ? "the reference runs in ONNX Runtime: no TorchScript graph to pair with"
                                            : "inside an AOTInductor package";
  for (const std::string& name : execution_names(graph.points(), census.trace)) {
    Tier2Layer layer;
    layer.name = name;
    layer.status = LayerStatus::k_not_observable;
    layer.reason = reason;
    result.profile.push_back(std::move(layer));
  }
  result.layers = static_cast<int64_t>(result.profile.size());
  result.not_observable = result.layers;
  std::tie(result.calls, result.calls_compared) =
      module_calls(graph.points(), census.trace, [](size_t) { return false; });
  result.coverage = 0.0;
  result.status = LocalizationStatus::k_partial;
  result.not_captured = "no layer compared: every one is " + reason;
  if (onnx_reference) {
    result.note =
        "tier 2 pairs an ONNX Runtime target's values with a TorchScript reference's (onnx_scope); with ONNX "
        "Runtime as the reference there is no TorchScript graph to pair them with: make a TorchScript backend "
        "the reference";
  } else {
    // AOTInductor on a CPU computes convolutions with oneDNN, in channels-last layout, on the
    // package's threads: the TorchScript model on those settings is the nearest backend whose
    // layers tier 2 can see, and the ONNX export on oneDNN the nearest other compiled path.
    const std::string threads = package_spec.threads > 0 ? ", threads: " + std::to_string(package_spec.threads) : "";
    result.note =
        "an AOTInductor package exposes its outputs only (tier 1 compares them); its kernels fuse across modules, "
        "so tier 2 cannot see inside it. To localize, run the same model's TorchScript on the settings closest to "
        "the package, which tier 2 can see into: a backend {base: cpu_fp32, memory_format: channels_last" +
        threads +
        "} (AOTInductor runs convolutions with oneDNN in channels-last layout) as a target, then `driftgate "
        "explain` its check; or the ONNX export (onnx_model:) under onnxruntime_dnnl, when it fails the same way";
  }
  result.peak_rss_kib = peak_rss_kib();
  return result;
}

}  // namespace

void add_package_leads(std::vector<std::vector<CheckRecord>>& per_target) {
  auto same_way = [](const CheckRecord& a, const CheckRecord& b) {
    return &a != &b && a.stats && b.stats && a.output == b.output && a.stats->max_abs > 0.0 && b.stats->max_abs > 0.0 &&
           std::max(a.stats->max_abs, b.stats->max_abs) <= 1.25 * std::min(a.stats->max_abs, b.stats->max_abs);
  };
  for (auto& records : per_target) {
    for (CheckRecord& record : records) {
      if (!record.localization || record.localization->alignment != "package_outputs") {
        continue;
      }
      const CheckRecord* lead = nullptr;
      for (const auto& others : per_target) {
        for (const CheckRecord& other : others) {
          if (lead == nullptr && other.localization && !other.localization->first_divergent.empty() &&
              same_way(record, other)) {
            lead = &other;
          }
        }
      }
      if (lead != nullptr) {
        record.localization->note +=
            "; " + lead->target + " fails this input the same way (max |a-b| " + format_value(lead->stats->max_abs) +
            " there, " + format_value(record.stats->max_abs) +
            " here) and tier 2 names its first divergent layer: " + lead->localization->first_divergent +
            " (driftgate explain '" + lead->id + "')";
      }
    }
  }
}

int64_t peak_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss);
}

Localization localize(BackendInstance& reference, BackendInstance* oracle, BackendInstance& target,
                      const at::Tensor& input, const LocalizeOptions& options) {
  if (target.onnx_worker() != nullptr && !reference.is_package()) {
    return Localizer(reference, oracle, target, input, options).run();
  }
  if (target.is_package() || reference.is_package()) {
    const BackendInstance& package_side = reference.is_package() ? reference : target;
    return package_outputs_only(reference.is_package() ? target : reference, package_side.spec(), input);
  }
  return Localizer(reference, oracle, target, input, options).run();
}

LocalizeRequest localize_request_for(const Experiment& experiment, const BackendSpec& target,
                                     const BackendSource& source) {
  LocalizeRequest request;
  request.reference = experiment.reference;
  if (experiment.oracle) {
    request.oracle = oracle_backend();
  }
  request.target = target;
  request.source = source;
  request.options.tolerance = configured_tolerance(experiment, target);
  return request;
}

Localization localize_request(const LocalizeRequest& request, const at::Tensor& input) {
  BackendInstance reference = load_runnable(request.reference, request.source);
  std::optional<BackendInstance> oracle;
  if (request.oracle) {
    oracle.emplace(load_runnable(*request.oracle, request.source));
  }
  BackendSource target_source = request.source;
  if (!request.target_model_path.empty()) {
    // An onnxruntime target runs the ONNX file: that is the file the target comes from.
    (request.target.graph == GraphMode::k_onnxruntime ? target_source.onnx_model_path : target_source.model_path) =
        request.target_model_path;
  }
  BackendInstance target = load_runnable(request.target, target_source);
  try {
    return localize(reference, oracle ? &*oracle : nullptr, target, input, request.options);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(request.source.config_path + ": tier 2 localization of '" + request.target.name +
                "' failed: " + torch_error_summary(e));
  }
}

Localization localize_isolated(const LocalizeRequest& request, const at::Tensor& input, double timeout_s) {
  const std::string who = request.source.config_path + ": tier 2 localization of '" + request.target.name + "'";
  Child::StartFailure failure;
  std::optional<Child> child = Child::start([&](int fd) { return localize_child(fd, request, input); }, &failure);
  if (!child) {
    throw Error(who + (failure.at_pipe ? ": cannot create a pipe: " : ": cannot fork: ") + failure.reason);
  }
  std::string data;
  const bool finished = child->read_to_end(data, deadline_in(timeout_s));
  child->close_pipe();
  const int status = finished ? child->reap() : child->kill_and_reap();
  if (!finished) {
    throw Error(who + ": did not finish within timeout_s " + std::to_string(timeout_s) + " s and was killed");
  }
  if (data.empty() || (data[0] != 'L' && data[0] != 'E')) {
    throw Error(who + ": the process died: " + describe_exit(status));
  }
  if (data[0] == 'E') {
    throw Error(data.substr(1));
  }
  return parse_localization_json(data.substr(1));
}

}  // namespace driftgate

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
  for (const auto& [point, value] : capture.values) {
    bytes += static_cast<int64_t>(value.nbytes());
  }
  return bytes;
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
      m_oracle_alignment =
          align_points(points(), m_oracle_graph->points(), same_graph(reference.spec(), oracle->spec()));
    }
    if (m_onnx != nullptr) {
      OnnxScopeAlignment paired = align_onnx_scopes(points(), m_onnx->graph());
      m_alignment.kind = AlignmentKind::k_onnx_scope;
      m_alignment.target_of = std::move(paired.target_of);
      m_alignment.observed = paired.observed;
      m_onnx_values = std::move(paired.values);
      add_note(paired.note);
    } else {
      m_target_graph.emplace(target.module());
      m_alignment = align_points(points(), m_target_graph->points(), same_graph(reference.spec(), target.spec()));
    }
    m_precision_ratio = std::max(1.0, unit_roundoff(target.spec()) / unit_roundoff(reference.spec()));
  }

  Localization run() {
    const size_t count = points().size();
    m_layers.resize(count);
    m_observed.assign(count, false);
    for (size_t p = 0; p < count; ++p) {
      m_layers[p].name = points()[p].name;
      m_observed[p] = m_alignment.target_of[p].has_value();
    }
    compare_in_windows();
    Localization result;
    result.alignment = to_string(m_alignment.kind);
    result.layers = static_cast<int64_t>(count);
    assign_statuses_and_ranks(result);
    if (m_onnx != nullptr) {
      if (m_marking_changed > 0.0) {
        add_note(
            "marking the compared values as outputs changed what ONNX Runtime computes: that session's "
            "outputs differ from the plain session's by up to " +
            format_value(m_marking_changed) + ", and the layers describe that session");
      }
      if (!result.first_divergent.empty()) {
        add_note("re-injection is not run on ONNX Runtime targets: the session runs its graph whole");
      }
    } else if (!result.first_divergent.empty()) {
      try {
        reinject(m_first_divergent, result);
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

  // The target's values of target points `wanted`: from its capture graph, or from its ONNX
  // Runtime session with those values marked as outputs (whose final outputs are compared
  // with the plain session's: marking may change what ONNX Runtime fuses).
  std::map<size_t, at::Tensor> capture_target(const std::vector<size_t>& wanted) {
    if (m_onnx == nullptr) {
      return capture(m_target, *m_target_graph, wanted).values;
    }
    std::map<size_t, at::Tensor> values;
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
    for (size_t i = 0; i < wanted.size(); ++i) {
      values.emplace(wanted[i], std::move(marked.values.at(i)));
    }
    return values;
  }

  Capture capture(BackendInstance& instance, const CaptureGraph& graph, const std::vector<size_t>& wanted) {
    Capture result;
    at::Tensor prepared = instance.prepare_input(m_input);
    instance.with_settings([&]() {
      result = graph.run(prepared, wanted);
      return c10::IValue();
    });
    return result;
  }

  // Reference points [begin, end) against the oracle, then against the target; at
  // most the reference's window and one other backend's are held at once.
  void compare_window(const std::vector<size_t>& window, int64_t* bytes) {
    Capture reference = capture(m_reference, m_reference_graph, window);
    *bytes = bytes_of(reference);
    std::vector<Difference> scales(window.size());
    if (m_oracle != nullptr) {
      std::vector<size_t> wanted;
      for (size_t p : window) {
        if (m_oracle_alignment.target_of[p]) {
          wanted.push_back(*m_oracle_alignment.target_of[p]);
        }
      }
      Capture oracle = capture(*m_oracle, *m_oracle_graph, wanted);
      for (size_t p : window) {
        if (m_oracle_alignment.target_of[p]) {
          Difference noise =
              normalized_difference(reference.values.at(p), oracle.values.at(*m_oracle_alignment.target_of[p]));
          m_layers[p].noise_floor = noise.comparable ? noise.delta : 0.0;
        }
      }
    }
    std::vector<size_t> wanted;
    for (size_t p : window) {
      if (m_observed[p]) {
        wanted.push_back(*m_alignment.target_of[p]);
      }
    }
    const std::map<size_t, at::Tensor> target = capture_target(wanted);
    for (size_t p : window) {
      if (!m_observed[p]) {
        continue;
      }
      const at::Tensor& reference_value = reference.values.at(p);
      Difference difference = normalized_difference(target.at(*m_alignment.target_of[p]), reference_value);
      if (!difference.comparable) {
        m_observed[p] = false;  // a boundary matched a value of another shape: not the same value
        continue;
      }
      m_layers[p].delta = difference.delta;
      m_layers[p].threshold =
          threshold_for(m_layers[p].noise_floor, m_precision_ratio, difference, m_options.tolerance);
    }
  }

  void compare_in_windows() {
    const size_t count = points().size();
    size_t begin = 0;
    size_t window = std::min<size_t>(16, count);
    while (begin < count) {
      std::vector<size_t> points_in_window;
      for (size_t p = begin; p < std::min(count, begin + window); ++p) {
        points_in_window.push_back(p);
      }
      int64_t bytes = 0;
      compare_window(points_in_window, &bytes);
      begin += points_in_window.size();
      const int64_t per_point = std::max<int64_t>(1, bytes / static_cast<int64_t>(points_in_window.size()));
      window = static_cast<size_t>(std::max<int64_t>(1, m_options.budget_bytes / per_point));
    }
  }

  // The largest delta of the observed layers feeding `point`; unobserved ones are
  // looked through to their own inputs.
  double predecessor_delta(size_t point, std::map<size_t, double>& memo) const {
    if (auto it = memo.find(point); it != memo.end()) {
      return it->second;
    }
    double worst = 0.0;
    for (size_t p : points()[point].predecessors) {
      worst = std::max(worst, m_observed[p] ? m_layers[p].delta : predecessor_delta(p, memo));
    }
    return memo[point] = worst;
  }

  // The unobserved layers feeding `point`, back to observed ones, in graph order.
  std::vector<std::string> unobserved_before(size_t point) const {
    std::set<size_t> found;
    std::vector<size_t> stack(points()[point].predecessors);
    while (!stack.empty()) {
      const size_t p = stack.back();
      stack.pop_back();
      if (m_observed[p] || !found.insert(p).second) {
        continue;
      }
      stack.insert(stack.end(), points()[p].predecessors.begin(), points()[p].predecessors.end());
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
    for (size_t p = 0; p < m_layers.size(); ++p) {
      Tier2Layer& layer = m_layers[p];
      if (!m_observed[p]) {
        layer.status = LayerStatus::k_not_observable;
        layer.delta = 0.0;
        layer.threshold = 0.0;
        ++result.not_observable;
        continue;
      }
      ++result.observed;
      const double before = predecessor_delta(p, memo);
      layer.rank = (layer.delta - before) / (before + k_rank_epsilon);
      if (!(layer.delta > layer.threshold)) {
        continue;
      }
      layer.status = LayerStatus::k_divergent;
      if (result.first_divergent.empty()) {
        result.first_divergent = layer.name;
        m_first_divergent = p;
        result.fused_before = unobserved_before(p);
      }
      if (layer.rank > best_rank) {
        best_rank = layer.rank;
        result.highest_rank = layer.name;
      }
    }
    result.coverage =
        m_layers.empty() ? 1.0 : static_cast<double>(result.observed) / static_cast<double>(m_layers.size());
    result.profile = m_layers;
  }

  // Re-injection: the target's ops that compute the first divergent value from the
  // nearest values the two graphs share (its group: one op on an unchanged graph, a
  // fused conv + batch norm + activation on a rewritten one) run alone, fed the
  // reference's values there (converted to the dtype, memory format and layout the
  // target had). "confirmed" when that alone reproduces the divergence.
  void reinject(size_t point, Localization& result) {
    const CaptureGraph& target_graph = *m_target_graph;
    const size_t target_point = *m_alignment.target_of[point];
    const std::vector<std::optional<size_t>> reverse = reference_of(m_alignment, target_graph.points().size());
    const std::function<bool(size_t)> shared = [&](size_t p) { return p != target_point && reverse[p].has_value(); };
    bool reads_input = false;
    const std::vector<size_t> target_inputs = target_graph.group_inputs(target_point, shared, &reads_input);
    std::set<size_t> reference_wanted{point};
    for (size_t p : target_inputs) {
      reference_wanted.insert(*reverse[p]);
    }
    Capture reference = capture(m_reference, m_reference_graph, {reference_wanted.begin(), reference_wanted.end()});
    Capture target = capture(m_target, target_graph, target_inputs);
    const at::Tensor prepared = m_target.prepare_input(m_input);
    at::Tensor output;
    m_target.with_settings([&]() {
      output = target_graph.run_group(target_point, shared, [&](std::optional<size_t> p) -> at::Tensor {
        if (!p) {
          return prepared.clone();
        }
        const at::Tensor& like = target.values.at(*p);
        at::Tensor value = reference.values.at(*reverse[*p]).to(like.scalar_type(), false, true);
        if (like.dim() == 4 && !like.is_contiguous() && like.is_contiguous(at::MemoryFormat::ChannelsLast)) {
          value = value.contiguous(at::MemoryFormat::ChannelsLast);
        }
        return target.opaque.count(*p) != 0 ? value.to_mkldnn() : value;
      });
      return c10::IValue();
    });
    Difference difference = normalized_difference(output, reference.values.at(point));
    result.reinjection_delta = difference.delta;
    result.reinjection =
        difference.comparable && difference.delta > m_layers[point].threshold ? "confirmed" : "not_confirmed";
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
  std::vector<Tier2Layer> m_layers;
  std::vector<bool> m_observed;
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
// and the localization says so rather than guess.
Localization package_outputs_only(const BackendInstance& module_side, GraphMode package_graph) {
  Localization result;
  result.alignment = "package_outputs";
  const CaptureGraph graph(module_side.module());
  for (const CapturePoint& point : graph.points()) {
    Tier2Layer layer;
    layer.name = point.name;
    layer.status = LayerStatus::k_not_observable;
    result.profile.push_back(std::move(layer));
  }
  result.layers = static_cast<int64_t>(result.profile.size());
  result.not_observable = result.layers;
  result.note =
      package_graph == GraphMode::k_onnxruntime
          ? "tier 2 pairs an ONNX Runtime target's values with a TorchScript reference's (onnx_scope); with ONNX "
            "Runtime as the reference there is no TorchScript graph to pair them with, so no layer is observed"
          : "an AOTInductor package exposes its outputs only (tier 1 compares them); its kernels fuse across "
            "modules, so no layer of the TorchScript graph can be observed in it";
  result.peak_rss_kib = peak_rss_kib();
  return result;
}

}  // namespace

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
    return package_outputs_only(reference.is_package() ? target : reference, package_side.spec().graph);
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

#include "runner/runner.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/file_util.h"
#include "core/image_check.h"
#include "core/tolerance.h"
#include "runner/backend.h"
#include "runner/backend_messages.h"
#include "runner/backend_run.h"
#include "runner/blas_threads.h"
#include "runner/file_hashes.h"
#include "runner/inputs.h"
#include "runner/mitigation.h"
#include "runner/progress.h"
#include "runner/tier1.h"
#include "runner/tier2_localize.h"
#include "runner/tier3.h"
#include "runner/torchscript_archive.h"

namespace driftgate {
namespace {

// "0.5", "16": a number as the header's source text shows it.
std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

InputArgumentRecord describe_source(const std::string& name, const TensorSource& source) {
  InputArgumentRecord record;
  record.name = name;
  record.dtype = to_string(source.dtype());
  switch (source.kind) {
    case TensorSource::Kind::k_tensor:
      record.shape = source.tensor.shape;
      record.source = "tensor";
      record.path = source.tensor.path;
      record.hash = hash_file(source.tensor.path);
      break;
    case TensorSource::Kind::k_image: {
      const ImageInput& image = source.image;
      record.source = "image";
      record.path = image.path;
      record.hash = hash_file(image.path);
      if (image.width > 0) {
        record.shape = {1, 3, image.height, image.width};
      } else {
        const ImageInfo info = read_checked_image(image.path).info;
        record.shape = {1, 3, static_cast<int64_t>(info.height), static_cast<int64_t>(info.width)};
      }
      break;
    }
    case TensorSource::Kind::k_random:
      record.shape = source.random.shape;
      record.source = std::string("random(") +
                      (source.random.distribution == Distribution::k_uniform ? "uniform" : "normal") + ", seed " +
                      std::to_string(source.random.seed) + ")";
      break;
    case TensorSource::Kind::k_random_int:
      record.shape = source.random_int.shape;
      record.source = "random_int(" + std::to_string(source.random_int.low) + ", " +
                      std::to_string(source.random_int.high) + ", seed " + std::to_string(source.random_int.seed) + ")";
      break;
    case TensorSource::Kind::k_fill:
      record.shape = source.fill.shape;
      record.source = "fill(" + number_text(source.fill.value) + ")";
      break;
  }
  return record;
}

// Each input's arguments for the run header: for experiments with an input other than one
// float32 tensor only, so that the headers of other suites stay as they were.
std::vector<InputArgumentsRecord> describe_inputs(const Experiment& experiment) {
  std::vector<InputArgumentsRecord> described;
  if (std::all_of(experiment.inputs.begin(), experiment.inputs.end(),
                  [](const InputSpec& input) { return input.single_float32_tensor(); })) {
    return described;
  }
  for (const InputSpec& input : experiment.inputs) {
    InputArgumentsRecord record;
    record.input = input.name;
    for (const InputArgument& argument : input.args) {
      switch (argument.kind) {
        case InputArgument::Kind::k_tensor:
          record.args.push_back(describe_source(argument.name, argument.tensor));
          break;
        case InputArgument::Kind::k_tensor_list:
          for (size_t i = 0; i < argument.list.size(); ++i) {
            record.args.push_back(describe_source(argument.name + "[" + std::to_string(i) + "]", argument.list[i]));
          }
          break;
        case InputArgument::Kind::k_int:
          record.args.push_back(
              {argument.name, "int64", {}, "value(" + std::to_string(argument.int_value) + ")", "", ""});
          break;
        case InputArgument::Kind::k_float:
          record.args.push_back(
              {argument.name, "float64", {}, "value(" + number_text(argument.float_value) + ")", "", ""});
          break;
        case InputArgument::Kind::k_bool:
          record.args.push_back({argument.name,
                                 "bool",
                                 {},
                                 std::string("value(") + (argument.bool_value ? "true" : "false") + ")",
                                 "",
                                 ""});
          break;
      }
    }
    described.push_back(std::move(record));
  }
  return described;
}

ExperimentHeader make_header(const Experiment& experiment) {
  ExperimentHeader header;
  header.name = experiment.name;
  header.config_path = experiment.config_path;
  header.model_path = experiment.model_path;  // the hashes come from FileHashes
  for (const auto& input : experiment.inputs) {
    header.inputs.push_back(input.name);
  }
  header.reference = experiment.reference.name;
  for (const auto& target : experiment.targets) {
    header.targets.push_back(target.name);
  }
  header.tolerance = experiment.tolerance;
  header.tolerance_origin = experiment.tolerance_origin;
  header.tolerance_overrides = experiment.tolerance_overrides;
  header.input_args = describe_inputs(experiment);
  if (experiment.tolerance_per_dtype) {
    // What a float32 output gets; each check records what its own dtypes got.
    Tolerance defaults = assert_close_defaults("float32", "float32");
    header.tolerance.atol = defaults.atol;
    header.tolerance.rtol = defaults.rtol;
    header.tolerance_origin += " (atol/rtol: assert_close defaults per dtype)";
  }
  return header;
}

// Whether any input of `experiment` names forward's arguments (`args:`): the runner then
// binds every input to forward's schema itself (BackendSource::arguments_checked).
bool arguments_named(const Experiment& experiment) {
  return std::any_of(experiment.inputs.begin(), experiment.inputs.end(),
                     [](const InputSpec& input) { return input.named; });
}

std::string format_ms(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g ms", ms);
  return buffer;
}

// Runs one experiment; records come out in (input, target, output) order.
class ExperimentRun {
 public:
  // The steps this experiment adds to the progress count: every backend (reference,
  // oracle, targets) on every input.
  static int64_t planned_steps(const Experiment& experiment) {
    return static_cast<int64_t>((1 + (experiment.oracle ? 1 : 0) + experiment.targets.size()) *
                                experiment.inputs.size());
  }

  ExperimentRun(const Experiment& experiment, const std::vector<ModelInput>& inputs, const RunnerOptions& options,
                std::ostream& log, Progress* progress = nullptr)
      : m_progress(progress),
        m_experiment(experiment),
        m_inputs(inputs),
        m_source(BackendSource::of(experiment, options.threads, options.onnx_worker)),
        m_backend_options{ForwardPlan{experiment.repeats, experiment.latency_warmup, experiment.latency_runs},
                          experiment.timeout_s, options.isolate},
        m_log(log),
        m_trace(options.trace),
        m_verbose(options.verbose),
        m_grid(inputs.size(), std::vector<std::vector<CheckRecord>>(experiment.targets.size())) {}

  std::vector<CheckRecord> run() {
    if (m_backend_options.isolate) {
      std::vector<Stage> stages{{m_experiment.reference, m_backend_options.plan}};
      if (m_experiment.oracle) {
        stages.push_back({oracle_backend(), ForwardPlan{1, 0, 0}});  // compared, never timed
      }
      for (const BackendSpec& target : m_experiment.targets) {
        stages.push_back({target, m_backend_options.plan});
      }
      TimingTrace::Phase phase(m_trace, m_experiment.config_path + ": isolated backends (fork to last output)");
      m_isolated_runs = run_isolated(stages, m_source, m_inputs, m_experiment.timeout_s, m_trace,
                                     [&](size_t stage, size_t input) { step(stages[stage].spec.name, input); });
      for (const BackendRun& run : m_isolated_runs) {
        refuse_model_error(run);
      }
      keep_printed(stages);
    }
    TimingTrace::Phase phase(m_trace, m_experiment.config_path + ": " +
                                          (m_backend_options.isolate ? "comparison, oracle, tier 2 and 3"
                                                                     : "backends, comparison, oracle, tier 2 and 3"));
    run_reference();
    if (m_experiment.oracle) {
      run_oracle();
    }
    for (size_t t = 0; t < m_experiment.targets.size(); ++t) {
      run_target(t);
    }
    for (auto& per_input : m_grid) {
      add_package_leads(per_input);
    }
    if (m_progress != nullptr) {
      m_progress->skip(planned_steps(m_experiment) - m_steps);  // inputs a failed reference left out
    }
    phase.end();
    attach_printed();
    std::vector<CheckRecord> records;
    for (auto& per_input : m_grid) {
      for (auto& per_target : per_input) {
        std::move(per_target.begin(), per_target.end(), std::back_inserter(records));
      }
    }
    return records;
  }

 private:
  void step(const std::string& backend, size_t input) {
    ++m_steps;
    if (m_progress != nullptr) {
      m_progress->step(m_experiment.name + " " + m_experiment.inputs[input].name + " " + backend);
    }
  }

  // In-process runs report a backend's inputs when it returns.
  void steps_in_process(const BackendSpec& spec, const BackendRun& run) {
    for (size_t i = 0; i < run.inputs.size(); ++i) {
      if (run.inputs[i].forwards || !run.inputs[i].error.empty()) {
        step(spec.name, i);
      }
    }
  }

  // A model file LibTorch cannot load, or whose forward does not take one input, is
  // a config error: it stops the run (exit 2, no run file) instead of filling it with
  // crash_ref checks.
  static void refuse_model_error(const BackendRun& run) {
    if (!run.model_error.empty()) {
      throw ModelFileError(run.model_error);
    }
  }

  void run_reference() {
    m_reference_results.resize(m_inputs.size());
    m_reference_errors.resize(m_inputs.size());
    m_reference_timed_out.resize(m_inputs.size(), false);
    m_reference_instability.resize(m_inputs.size());
    m_reference_run = m_backend_options.isolate ? std::move(m_isolated_runs[0])
                                                : run_backend(m_experiment.reference, m_source, m_inputs,
                                                              std::vector<bool>(m_inputs.size(), true),
                                                              m_backend_options, nullptr, &m_reference_instance);
    refuse_model_error(m_reference_run);
    if (!m_backend_options.isolate) {
      steps_in_process(m_experiment.reference, m_reference_run);
    }
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      InputRun& input = m_reference_run.inputs[i];
      if (!input.forwards) {
        m_reference_errors[i] = input.error;
        m_reference_timed_out[i] = input.timed_out;
        continue;
      }
      m_reference_results[i] = std::move(input.forwards);
      m_reference_instability[i] = reference_instability(i).value_or("");
      if (m_reference_paths.empty()) {
        for (const auto& leaf : flatten_output(m_reference_results[i]->outputs.front())) {
          m_reference_paths.push_back(leaf.path);
        }
      }
    }
  }

  const BackendInstance* reference_instance() const { return m_reference_instance ? &*m_reference_instance : nullptr; }

  // One forward of the oracle per input on which the reference ran; failures are
  // kept as text (a model may refuse float64) and only fail checks of the oracle rule.
  void run_oracle() {
    m_oracle_outputs.resize(m_inputs.size());
    m_oracle_errors.resize(m_inputs.size());
    std::vector<bool> wanted(m_inputs.size());
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      wanted[i] = m_reference_results[i].has_value();
    }
    BackendRunOptions options = m_backend_options;
    options.plan = ForwardPlan{1, 0, 0};
    BackendRun oracle = m_backend_options.isolate
                            ? std::move(m_isolated_runs[1])
                            : run_backend(oracle_backend(), m_source, m_inputs, wanted, options, reference_instance());
    refuse_model_error(oracle);
    if (!m_backend_options.isolate) {
      steps_in_process(oracle_backend(), oracle);
    }
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      if (!oracle.load_error.empty() || !oracle.skip_reason.empty()) {
        m_oracle_errors[i] = "the float64 oracle failed: " + oracle.load_error + oracle.skip_reason;
      } else if (oracle.inputs[i].forwards) {
        m_oracle_outputs[i] = oracle.inputs[i].forwards->outputs.front();
      } else {
        m_oracle_errors[i] = "the float64 oracle failed: " + oracle.inputs[i].error;
      }
    }
  }

  // The output paths a failed comparison reports: the reference's leaves on
  // this input, else on any input, else "*".
  std::vector<std::string> paths_for(size_t input) const {
    std::vector<std::string> paths;
    if (m_reference_results[input]) {
      for (const auto& leaf : flatten_output(m_reference_results[input]->outputs.front())) {
        paths.push_back(leaf.path);
      }
    } else {
      paths = m_reference_paths.empty() ? std::vector<std::string>{"*"} : m_reference_paths;
    }
    if (m_experiment.task) {
      // Tier-3 checks exist whatever happened, so the check count stays derivable from the config.
      for (const std::string& name : task_output_names(*m_experiment.task)) {
        paths.push_back(name);
      }
    }
    return paths;
  }

  CheckRecord make_record(size_t input, size_t target, const std::string& output) const {
    CheckRecord record;
    record.experiment = m_experiment.name;
    record.input = m_experiment.inputs[input].name;
    record.reference = m_experiment.reference.name;
    record.target = m_experiment.targets[target].name;
    record.output = output;
    record.id = make_check_id(record.experiment, record.input, record.reference, record.target, output);
    record.tolerance = configured_tolerance(m_experiment, m_experiment.targets[target]);
    if (m_reference_results[input]) {
      record.reference_ms = m_reference_results[input]->median_ms;
      record.reference_iqr_ms = m_reference_results[input]->iqr_ms;
    }
    return record;
  }

  // One record per output path of `input`, all with the same status and message.
  void fill(size_t input, size_t target, CheckStatus status, const std::string& message) {
    auto& records = m_grid[input][target];
    for (const auto& path : paths_for(input)) {
      CheckRecord record = make_record(input, target, path);
      record.status = status;
      record.message = message;
      records.push_back(std::move(record));
    }
    log_line(input, target, std::string(to_string(status)) + ": " + message);
  }

  // Why the reference has nothing to compare against on `input`, or nullopt.
  std::optional<std::pair<CheckStatus, std::string>> reference_problem(size_t input) const {
    const std::string failed = "the reference failed, so there is nothing to compare with: ";
    if (!m_reference_run.load_error.empty()) {
      return std::make_pair(m_reference_run.load_timed_out ? CheckStatus::k_timeout : CheckStatus::k_crash_ref,
                            failed + m_reference_run.load_error);
    }
    if (!m_reference_run.skip_reason.empty()) {
      return std::make_pair(CheckStatus::k_skipped, "the reference '" + m_experiment.reference.name +
                                                        "' cannot run here: " + m_reference_run.skip_reason);
    }
    if (!m_reference_errors[input].empty()) {
      return std::make_pair(m_reference_timed_out[input] ? CheckStatus::k_timeout : CheckStatus::k_crash_ref,
                            failed + m_reference_errors[input]);
    }
    if (!m_reference_instability[input].empty()) {
      return std::make_pair(CheckStatus::k_ref_nondeterministic, m_reference_instability[input]);
    }
    return std::nullopt;
  }

  void run_target(size_t t) {
    const BackendSpec& spec = m_experiment.targets[t];
    std::vector<bool> wanted(m_inputs.size());
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      wanted[i] = !reference_problem(i).has_value();
    }
    BackendRun target = m_backend_options.isolate
                            ? std::move(m_isolated_runs[(m_experiment.oracle ? 2 : 1) + t])
                            : run_backend(spec, m_source, m_inputs, wanted, m_backend_options, reference_instance());
    refuse_model_error(target);
    if (!m_backend_options.isolate) {
      steps_in_process(spec, target);
    }
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      if (auto problem = reference_problem(i)) {
        fill(i, t, problem->first, problem->second);
      } else if (!target.load_error.empty()) {
        fill(i, t, target.load_timed_out ? CheckStatus::k_timeout : CheckStatus::k_crash_target, target.load_error);
      } else if (!target.skip_reason.empty()) {
        fill(i, t, CheckStatus::k_skipped, "backend '" + spec.name + "' cannot run here: " + target.skip_reason);
      } else if (!target.inputs[i].forwards) {
        fill(i, t, target.inputs[i].timed_out ? CheckStatus::k_timeout : CheckStatus::k_crash_target,
             target.inputs[i].error);
      } else {
        compare(i, t, spec, *target.inputs[i].forwards);
      }
    }
  }

  // Why the reference's own repeats on `input` do not agree, or nullopt. Each later
  // repeat is judged against the first by tier 1 itself (the configured rule and
  // tolerance; assert_close's for the oracle rule, which needs no oracle here), so
  // "nondeterministic" means what "fail" means for a target. A reference that
  // disagrees with itself cannot be compared with: every check on the input gets
  // ref_nondeterministic, never a verdict on the target (run_reference computes it
  // once per input; reference_problem reports it). repeat_max_abs (computed with the
  // forwards) skips the comparison where the repeats are identical.
  std::optional<std::string> reference_instability(size_t input) const {
    const Forwards& reference = *m_reference_results[input];
    const bool identical = std::all_of(reference.repeat_max_abs.begin(), reference.repeat_max_abs.end(),
                                       [](const auto& entry) { return entry.second == 0.0; });
    if (reference.outputs.size() < 2 || identical) {
      return std::nullopt;
    }
    CompareOptions options;
    options.tolerance = configured_tolerance(m_experiment, m_experiment.reference);
    if (options.tolerance.rule == ToleranceRule::k_oracle) {
      options.tolerance.rule = ToleranceRule::k_assert_close;
    }
    options.tolerance_per_dtype = m_experiment.tolerance_per_dtype;
    options.reference_device = m_experiment.reference.device;
    options.target_device = m_experiment.reference.device;
    for (size_t r = 1; r < reference.outputs.size(); ++r) {
      std::vector<LeafComparison> leaves;
      try {
        leaves = compare_outputs(reference.outputs.front(), reference.outputs[r], options);
      } catch (const std::exception& e) {
        return "the reference's repeat " + std::to_string(r + 1) + " cannot be compared with its first: " + e.what();
      }
      for (const LeafComparison& leaf : leaves) {
        if (leaf.status != CheckStatus::k_pass && leaf.status != CheckStatus::k_nonfinite_output) {
          return "the reference '" + m_experiment.reference.name + "' gives other outputs on repeat " +
                 std::to_string(r + 1) +
                 " than on its first forward, so nothing can be compared with it: " + leaf.output + ": " +
                 to_string(leaf.status) + ": " + leaf.message +
                 " (a model with randomness left in eval mode, e.g. dropout or an unseeded random op; or "
                 "state kept between forwards)";
        }
      }
    }
    return std::nullopt;
  }

  void compare(size_t input, size_t t, const BackendSpec& spec, const Forwards& forwards) {
    const Forwards& reference = *m_reference_results[input];
    CompareOptions options;
    options.resolve_tolerance = [this, &spec](const std::string& output, const std::string& reference_dtype,
                                              const std::string& target_dtype) {
      return resolve_tolerance(m_experiment, spec, output, reference_dtype, target_dtype);
    };
    if (m_experiment.oracle && m_oracle_outputs[input]) {
      options.oracle = &*m_oracle_outputs[input];
    } else {
      options.oracle_problem = m_experiment.oracle ? m_oracle_errors[input] : "the oracle is off (oracle: false)";
    }
    options.same_dtype_promised = m_experiment.reference.dtype == spec.dtype;
    options.reference_device = m_experiment.reference.device;
    options.target_device = spec.device;
    std::vector<LeafComparison> leaves;
    try {
      leaves = compare_outputs(reference.outputs.front(), forwards.outputs.front(), options);
    } catch (const Error& e) {
      fill(input, t, CheckStatus::k_crash_target, e.what());
      return;
    } catch (const std::exception& e) {
      fill(input, t, CheckStatus::k_crash_target, "comparing the outputs failed: " + torch_error_summary(e));
      return;
    }
    std::map<std::string, int> counts;
    double worst_abs = 0.0;
    std::optional<OracleErrors> worst_oracle;
    for (LeafComparison& leaf : leaves) {
      CheckRecord record = make_record(input, t, leaf.output);
      record.status = leaf.status;
      record.message = std::move(leaf.message);
      record.observed_reference = std::move(leaf.observed_reference);
      record.observed_target = std::move(leaf.observed_target);
      record.stats = std::move(leaf.stats);
      if (record.stats) {
        record.tolerance = leaf.tolerance;
      }
      record.target_ms = forwards.median_ms;
      record.target_iqr_ms = forwards.iqr_ms;
      if (record.stats) {
        worst_abs = std::max(worst_abs, record.stats->max_abs);
        if (record.stats->oracle &&
            (!worst_oracle || record.stats->oracle->target_max_abs > worst_oracle->target_max_abs)) {
          worst_oracle = record.stats->oracle;
        }
        if (auto it = reference.repeat_max_abs.find(leaf.output); it != reference.repeat_max_abs.end()) {
          record.stats->reference_repeat_max_abs = it->second;
        }
        if (auto it = forwards.repeat_max_abs.find(leaf.output); it != forwards.repeat_max_abs.end()) {
          record.stats->target_repeat_max_abs = it->second;
        }
      }
      ++counts[to_string(record.status)];
      m_grid[input][t].push_back(std::move(record));
    }
    if (m_experiment.task) {
      for (TaskVerdict& verdict : judge_task(*m_experiment.task, reference.outputs.front(), forwards.outputs.front(),
                                             m_experiment.inputs[input].name)) {
        CheckRecord record = make_record(input, t, verdict.output);
        record.status = verdict.status;
        record.message = std::move(verdict.message);
        record.task = std::move(verdict.result);
        record.target_ms = forwards.median_ms;
        record.target_iqr_ms = forwards.iqr_ms;
        ++counts[to_string(record.status)];
        m_grid[input][t].push_back(std::move(record));
      }
    }
    std::string summary;
    for (const auto& [status, count] : counts) {
      summary += (summary.empty() ? "" : ", ") + std::to_string(count) + " " + status;
    }
    char detail[192];
    if (worst_oracle) {
      std::snprintf(detail, sizeof detail,
                    " (max |a-b| %.3g vs reference; vs fp64: target %.3g, reference %.3g; %s vs %s)", worst_abs,
                    worst_oracle->target_max_abs, worst_oracle->reference_max_abs,
                    format_ms(forwards.median_ms).c_str(), format_ms(reference.median_ms).c_str());
    } else {
      std::snprintf(detail, sizeof detail, " (max |a-b| %.3g vs reference; %s vs %s)", worst_abs,
                    format_ms(forwards.median_ms).c_str(), format_ms(reference.median_ms).c_str());
    }
    log_line(input, t, summary + detail);
    localize_check(input, t, spec);
  }

  // Tier 2: captures every activation of reference, oracle and target on this input
  // and attaches where the divergence starts to this (input, target)'s compared
  // records: the failing ones (activations: on_failure) or all (always). Isolated
  // runs localize in a forked child, like the forwards. A localization that fails
  // is logged and leaves the records as they are.
  void localize_check(size_t input, size_t t, const BackendSpec& spec) {
    if (m_experiment.activations == Activations::k_off) {
      return;
    }
    std::vector<CheckRecord*> wanted;
    for (CheckRecord& record : m_grid[input][t]) {
      if (record.stats && (m_experiment.activations == Activations::k_always || is_failure(record.status))) {
        wanted.push_back(&record);
      }
    }
    if (wanted.empty()) {
      return;
    }
    // Tier 2 left at its default skips what it cannot capture yet (an explicit
    // `activations:` with such inputs is a config error: core/experiment.cc).
    if (std::string limit = input_feature_limit(m_experiment.inputs[input]); !limit.empty()) {
      log_line(input, t, "tier 2: skipped: " + limit + "; tier 2 captures forwards of one float32 tensor");
      return;
    }
    const LocalizeRequest request = localize_request_for(m_experiment, spec, m_source);
    const at::Tensor& tensor = m_inputs[input][0].toTensor();
    try {
      Localization localization = m_backend_options.isolate ? localize_isolated(request, tensor, m_experiment.timeout_s)
                                                            : localize_request(request, tensor);
      log_line(input, t, "tier 2: " + describe_localization(localization));
      for (CheckRecord* record : wanted) {
        record->localization = localization;
      }
    } catch (const Error& e) {
      log_line(input, t, std::string("tier 2: no localization: ") + e.what());
    }
  }

  // What each stage's backend printed while it loaded and ran each input (isolated runs),
  // before the runs are taken apart; printed on the log under -v.
  void keep_printed(const std::vector<Stage>& stages) {
    m_printed.assign(stages.size(), {});
    for (size_t stage = 0; stage < stages.size(); ++stage) {
      const BackendRun& run = m_isolated_runs[stage];
      m_printed[stage].name = stages[stage].spec.name;
      m_printed[stage].per_input.resize(m_inputs.size());
      for (size_t i = 0; i < m_inputs.size(); ++i) {
        std::vector<std::string>& lines = m_printed[stage].per_input[i];
        lines = run.load_messages;
        lines.insert(lines.end(), run.inputs[i].messages.begin(), run.inputs[i].messages.end());
        if (m_verbose) {
          for (const std::string& line : run.inputs[i].messages) {
            log_printed(stages[stage].spec.name, m_experiment.inputs[i].name, line);
          }
        }
      }
      if (m_verbose) {
        for (const std::string& line : run.load_messages) {
          log_printed(stages[stage].spec.name, "(load)", line);
        }
      }
    }
  }

  void log_printed(const std::string& backend, const std::string& input, const std::string& line) {
    const std::string text = "[" + m_experiment.name + "] " + input + " " + backend + " printed: " + line;
    if (m_progress != nullptr) {
      m_progress->line(text);
    } else {
      m_log << text << "\n";
    }
  }

  // Each check gets what its reference, the oracle and its target printed for its input.
  void attach_printed() {
    if (m_printed.empty()) {
      return;
    }
    const size_t first_target = m_experiment.oracle ? 2 : 1;
    for (size_t i = 0; i < m_grid.size(); ++i) {
      for (size_t t = 0; t < m_grid[i].size(); ++t) {
        std::vector<size_t> stages = {0, first_target + t};
        if (m_experiment.oracle) {
          stages.insert(stages.begin() + 1, 1);
        }
        std::vector<BackendMessage> messages;
        for (size_t stage : stages) {
          add_backend_messages(messages, m_printed[stage].name, m_printed[stage].per_input[i]);
        }
        for (CheckRecord& record : m_grid[i][t]) {
          record.messages = messages;
        }
      }
    }
  }

  void log_line(size_t input, size_t target, const std::string& text) {
    const std::string line = "[" + m_experiment.name + "] " + m_experiment.inputs[input].name + " " +
                             m_experiment.reference.name + "~" + m_experiment.targets[target].name + ": " + text;
    if (m_progress != nullptr) {
      m_progress->line(line);
    } else {
      m_log << line << "\n";
    }
  }

  Progress* m_progress;
  int64_t m_steps = 0;  // progress steps this experiment made
  const Experiment& m_experiment;
  const std::vector<ModelInput>& m_inputs;
  BackendSource m_source;
  BackendRunOptions m_backend_options;
  std::ostream& m_log;
  const TimingTrace& m_trace;
  std::optional<BackendInstance> m_reference_instance;  // in-process runs only (for the aliasing check)
  BackendRun m_reference_run;
  std::vector<BackendRun> m_isolated_runs;  // isolated: reference, oracle (if on), targets
  struct Printed {
    std::string name;                                 // the stage's backend
    std::vector<std::vector<std::string>> per_input;  // its load's lines, then the input's
  };
  std::vector<Printed> m_printed;  // isolated runs: per stage
  bool m_verbose = false;
  std::vector<std::optional<Forwards>> m_reference_results;   // per input
  std::vector<std::string> m_reference_errors;                // per input; "" when it ran
  std::vector<bool> m_reference_timed_out;                    // per input
  std::vector<std::string> m_reference_instability;           // per input; "" when its repeats agree
  std::vector<std::string> m_reference_paths;                 // leaves on the first input that ran
  std::vector<std::optional<c10::IValue>> m_oracle_outputs;   // per input; empty when the oracle failed or is off
  std::vector<std::string> m_oracle_errors;                   // per input; why the oracle has no output
  std::vector<std::vector<std::vector<CheckRecord>>> m_grid;  // [input][target] -> records
};

}  // namespace

std::vector<Experiment> shard_slice(const std::vector<Experiment>& experiments, const ShardInfo& shard) {
  std::vector<Experiment> slice = experiments;
  int64_t pair = 0;
  for (Experiment& experiment : slice) {
    std::vector<InputSpec> kept;
    for (InputSpec& input : experiment.inputs) {
      if (pair++ % shard.count == shard.index) {
        kept.push_back(std::move(input));
      }
    }
    experiment.inputs = std::move(kept);
  }
  return slice;
}

RunFile run_experiments(const std::vector<Experiment>& experiments, const CommitInfo& commit,
                        const Environment& environment, const RunnerOptions& options, std::ostream& log) {
  if (options.threads < 1) {
    throw Error("--threads must be at least 1 (got " + std::to_string(options.threads) + ")");
  }
  if (options.isolate) {
    // Forked children inherit no usable OpenMP pool: the runner itself stays single-threaded.
    at::set_num_threads(1);
  }
  set_blas_threads(1);  // the runner's own work; each backend sets its own (runner/blas_threads.h)
  RunFile run;
  run.header.tool_version = DRIFTGATE_VERSION;
  run.header.commit = commit;
  run.header.environment = environment;
  // User errors (missing files, bad images, arguments forward does not take) surface
  // before any forward runs.
  std::vector<std::vector<ModelInput>> inputs;
  if (options.shard.count < 1 || options.shard.index < 0 || options.shard.index >= options.shard.count) {
    throw Error("--shard " + std::to_string(options.shard.index) + "/" + std::to_string(options.shard.count) +
                ": the index must be 0..N-1 and N at least 1");
  }
  run.header.shard = options.shard;
  const std::vector<Experiment> slice = shard_slice(experiments, options.shard);
  // Content hashes of every config and model, computed by a forked process while
  // this one makes inputs and waits for the experiments' children.
  std::vector<std::string> hashed_paths;
  for (const Experiment& experiment : experiments) {
    hashed_paths.push_back(experiment.config_path);
    hashed_paths.push_back(experiment.model_path);
  }
  FileHashes hashes = FileHashes::start(std::move(hashed_paths));
  for (size_t index = 0; index < slice.size(); ++index) {
    const Experiment& experiment = slice[index];
    std::vector<ModelInput> tensors;
    try {
      // Every shard's header describes the whole suite (merge requires the same
      // experiments in every file); only the checks are the slice's.
      run.header.experiments.push_back(make_header(experiments[index]));
      if (options.mitigate) {
        for (const InputSpec& spec : experiments[index].inputs) {
          if (std::string limit = input_feature_limit(spec); !limit.empty()) {
            throw Error(limit +
                        ", and --mitigate searches fallbacks for inputs of one float32 tensor in this "
                        "version; run without --mitigate, or mitigate an experiment whose inputs are one "
                        "float32 tensor each");
          }
        }
      }
      TimingTrace::Phase input_phase(options.trace, experiment.config_path + ": make inputs");
      if (!arguments_named(experiment)) {
        for (const auto& spec : experiment.inputs) {
          tensors.push_back({make_input(spec)});
        }
      }
      input_phase.end();
      // A file that is no TorchScript archive at all is a config error, not a crash_ref.
      TimingTrace::Phase archive_phase(options.trace, experiment.config_path + ": model archive pre-flight");
      std::string problem = torchscript_archive_problem(experiments[index].model_path);
      archive_phase.end();
      if (!problem.empty()) {
        throw Error("model file '" + experiments[index].model_path + "' " + problem);
      }
      if (arguments_named(experiment)) {
        TimingTrace::Phase bind_phase(options.trace, experiment.config_path + ": load forward's schema, make inputs");
        // Bound to forward's schema here, once, before any forward: a mismatch is a config error.
        const c10::FunctionSchema schema =
            forward_schema(BackendSource::of(experiment, options.threads, options.onnx_worker));
        for (const auto& spec : experiment.inputs) {
          try {
            tensors.push_back(make_input(spec, schema));
          } catch (const ModelFileError&) {
            throw;
          } catch (const Error& e) {
            throw ModelFileError(experiment.config_path + ": model '" + experiment.model_path + "': " + e.what());
          }
        }
      }
    } catch (const ModelFileError&) {
      throw;
    } catch (const Error& e) {
      throw Error(experiment.config_path + ": " + e.what());
    }
    inputs.push_back(std::move(tensors));
  }
  int64_t total_steps = 0;
  for (const Experiment& experiment : slice) {
    total_steps += ExperimentRun::planned_steps(experiment);
  }
  std::optional<Progress> progress;
  if (options.progress) {
    progress.emplace(log, options.progress_terminal, total_steps);
  }
  for (size_t e = 0; e < slice.size(); ++e) {
    if (slice[e].inputs.empty()) {
      continue;  // another shard's work
    }
    std::vector<CheckRecord> records =
        ExperimentRun(slice[e], inputs[e], options, log, progress ? &*progress : nullptr).run();
    if (options.mitigate) {
      // Variants run on the failing inputs only: their tensors, looked up by name.
      const auto run_variant = [&](const Experiment& variant) {
        std::vector<ModelInput> subset;
        for (const InputSpec& spec : variant.inputs) {
          for (size_t i = 0; i < slice[e].inputs.size(); ++i) {
            if (slice[e].inputs[i].name == spec.name) {
              subset.push_back(inputs[e][i]);
            }
          }
        }
        // A search over fallbacks: no tier-2 localization for each try.
        Experiment quiet = variant;
        quiet.activations = Activations::k_off;
        return ExperimentRun(quiet, subset, options, log).run();
      };
      // The selective search's candidates: the submodules the target may run in float32.
      MitigationOptions mitigation;
      mitigation.run_threads = options.threads;
      mitigation.list_layers = [&](const Experiment& experiment, const BackendSpec& target) {
        return float32_module_candidates(target, BackendSource::of(experiment, options.threads, options.onnx_worker));
      };
      mitigate_failures(slice[e], records, run_variant, mitigation, log);
    }
    std::move(records.begin(), records.end(), std::back_inserter(run.checks));
  }
  TimingTrace::Phase reap_phase(options.trace, "wait for the last children to exit");
  reap_exiting_children();
  reap_phase.end();
  TimingTrace::Phase hash_phase(options.trace, "wait for the config and model hashes");
  const std::vector<std::string> hashed = hashes.wait();
  hash_phase.end();
  for (size_t index = 0; index < run.header.experiments.size(); ++index) {
    run.header.experiments[index].config_hash = hashed[2 * index];
    run.header.experiments[index].model_hash = hashed[2 * index + 1];
  }
  run.summary = summarize(run.header, run.checks);
  return run;
}

}  // namespace driftgate

#include "runner/runner.h"

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
#include "core/tolerance.h"
#include "runner/backend.h"
#include "runner/inputs.h"
#include "runner/tier1.h"

namespace driftgate {
namespace {

// The outputs of `repeats` forwards of one backend on one input.
struct Forwards {
  std::vector<c10::IValue> outputs;
  double median_ms = 0.0;
  std::map<std::string, double> repeat_max_abs;  // per numeric leaf; empty for one repeat
};

Forwards run_forwards(BackendInstance& instance, const at::Tensor& input, int repeats) {
  Forwards forwards;
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    auto start = std::chrono::steady_clock::now();
    forwards.outputs.push_back(instance.forward(input));
    std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
    times.push_back(elapsed.count());
  }
  std::sort(times.begin(), times.end());
  size_t middle = times.size() / 2;
  forwards.median_ms = times.size() % 2 == 1 ? times[middle] : (times[middle - 1] + times[middle]) / 2.0;
  forwards.repeat_max_abs = repeat_max_abs(forwards.outputs);
  return forwards;
}

ExperimentHeader make_header(const Experiment& experiment) {
  ExperimentHeader header;
  header.name = experiment.name;
  header.config_path = experiment.config_path;
  header.config_hash = hash_file(experiment.config_path);
  header.model_path = experiment.model_path;
  header.model_hash = hash_file(experiment.model_path);
  for (const auto& input : experiment.inputs) {
    header.inputs.push_back(input.name);
  }
  header.reference = experiment.reference.name;
  for (const auto& target : experiment.targets) {
    header.targets.push_back(target.name);
  }
  header.tolerance = experiment.tolerance;
  header.tolerance_origin = experiment.tolerance_origin;
  if (experiment.tolerance_per_dtype) {
    // What a float32 output gets; each check records what its own dtypes got.
    Tolerance defaults = assert_close_defaults("float32", "float32");
    header.tolerance.atol = defaults.atol;
    header.tolerance.rtol = defaults.rtol;
    header.tolerance_origin += " (atol/rtol: assert_close defaults per dtype)";
  }
  return header;
}

std::string format_ms(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g ms", ms);
  return buffer;
}

// The float64 oracle: a CPU float64 instance of its own, loaded like any backend.
BackendSpec oracle_spec() {
  BackendSpec spec;
  spec.name = "oracle_fp64";
  spec.dtype = DType::k_float64;
  spec.description = "CPU float64: the oracle";
  return spec;
}

// The tolerance a check between `reference` and `target` specs is judged with
// when no output dtype is known (crashes, skips, structure failures).
Tolerance configured_tolerance(const Experiment& experiment, const BackendSpec& target) {
  Tolerance tolerance = experiment.tolerance;
  if (experiment.tolerance_per_dtype) {
    Tolerance defaults = assert_close_defaults(to_string(experiment.reference.dtype), to_string(target.dtype));
    tolerance.atol = defaults.atol;
    tolerance.rtol = defaults.rtol;
  }
  return tolerance;
}

// Runs one experiment; records come out in (input, target, output) order.
class ExperimentRun {
 public:
  ExperimentRun(const Experiment& experiment, const std::vector<at::Tensor>& inputs,
                const RunnerOptions& options, std::ostream& log)
      : m_experiment(experiment),
        m_inputs(inputs),
        m_source{experiment.config_path, experiment.model_path, options.threads},
        m_log(log),
        m_grid(inputs.size(), std::vector<std::vector<CheckRecord>>(experiment.targets.size())) {}

  std::vector<CheckRecord> run() {
    run_reference();
    if (m_experiment.oracle) {
      run_oracle();
    }
    for (size_t t = 0; t < m_experiment.targets.size(); ++t) {
      run_target(t);
    }
    std::vector<CheckRecord> records;
    for (auto& per_input : m_grid) {
      for (auto& per_target : per_input) {
        std::move(per_target.begin(), per_target.end(), std::back_inserter(records));
      }
    }
    return records;
  }

 private:
  void run_reference() {
    m_reference_results.resize(m_inputs.size());
    m_reference_errors.resize(m_inputs.size());
    try {
      m_reference.emplace(BackendInstance::load(m_experiment.reference, m_source));
    } catch (const Error& e) {
      m_reference_load_error = e.what();
      return;
    }
    if (m_reference->skipped()) {
      return;
    }
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      try {
        m_reference_results[i] = run_forwards(*m_reference, m_inputs[i], m_experiment.repeats);
      } catch (const Error& e) {
        m_reference_errors[i] = e.what();
        continue;
      } catch (const std::exception& e) {
        m_reference_errors[i] = "measuring the reference's outputs failed: " + torch_error_summary(e);
        continue;
      }
      if (m_reference_paths.empty()) {
        for (const auto& leaf : flatten_output(m_reference_results[i]->outputs.front())) {
          m_reference_paths.push_back(leaf.path);
        }
      }
    }
  }

  // One forward of the oracle per input on which the reference ran; failures are
  // kept as text (a model may refuse float64) and only fail checks of the oracle rule.
  void run_oracle() {
    m_oracle_outputs.resize(m_inputs.size());
    m_oracle_errors.resize(m_inputs.size());
    std::optional<BackendInstance> oracle;
    try {
      oracle.emplace(BackendInstance::load(oracle_spec(), m_source));
      if (m_reference && !m_reference->skipped()) {
        check_no_shared_storage(*m_reference, *oracle);
      }
    } catch (const Error& e) {
      std::fill(m_oracle_errors.begin(), m_oracle_errors.end(), std::string("the float64 oracle failed: ") + e.what());
      return;
    }
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      if (!m_reference_results[i]) {
        continue;
      }
      try {
        m_oracle_outputs[i] = oracle->forward(m_inputs[i]);
      } catch (const Error& e) {
        m_oracle_errors[i] = std::string("the float64 oracle failed: ") + e.what();
      }
    }
  }

  // The output paths a failed comparison reports: the reference's leaves on
  // this input, else on any input, else "*".
  std::vector<std::string> paths_for(size_t input) const {
    if (m_reference_results[input]) {
      std::vector<std::string> paths;
      for (const auto& leaf : flatten_output(m_reference_results[input]->outputs.front())) {
        paths.push_back(leaf.path);
      }
      return paths;
    }
    return m_reference_paths.empty() ? std::vector<std::string>{"*"} : m_reference_paths;
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
    if (!m_reference_load_error.empty()) {
      return std::make_pair(CheckStatus::k_crash_ref, failed + m_reference_load_error);
    }
    if (m_reference->skipped()) {
      return std::make_pair(CheckStatus::k_skipped, "the reference '" + m_experiment.reference.name +
                                                        "' cannot run here: " + m_reference->skip_reason());
    }
    if (!m_reference_errors[input].empty()) {
      return std::make_pair(CheckStatus::k_crash_ref, failed + m_reference_errors[input]);
    }
    return std::nullopt;
  }

  void run_target(size_t t) {
    const BackendSpec& spec = m_experiment.targets[t];
    std::optional<BackendInstance> target;
    std::string load_error;
    try {
      target.emplace(BackendInstance::load(spec, m_source));
      if (m_reference && !m_reference->skipped()) {
        check_no_shared_storage(*m_reference, *target);
      }
    } catch (const Error& e) {
      load_error = e.what();
    }
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      if (auto problem = reference_problem(i)) {
        fill(i, t, problem->first, problem->second);
      } else if (!load_error.empty()) {
        fill(i, t, CheckStatus::k_crash_target, load_error);
      } else if (target->skipped()) {
        fill(i, t, CheckStatus::k_skipped, "backend '" + spec.name + "' cannot run here: " + target->skip_reason());
      } else {
        compare(i, t, *target);
      }
    }
  }

  void compare(size_t input, size_t t, BackendInstance& target) {
    const Forwards& reference = *m_reference_results[input];
    CompareOptions options;
    options.tolerance = m_experiment.tolerance;
    options.tolerance_per_dtype = m_experiment.tolerance_per_dtype;
    if (m_experiment.oracle && m_oracle_outputs[input]) {
      options.oracle = &*m_oracle_outputs[input];
    } else {
      options.oracle_problem = m_experiment.oracle ? m_oracle_errors[input] : "the oracle is off (oracle: false)";
    }
    options.same_dtype_promised = m_experiment.reference.dtype == target.spec().dtype;
    options.reference_device = m_experiment.reference.device;
    options.target_device = target.spec().device;
    Forwards forwards;
    std::vector<LeafComparison> leaves;
    try {
      forwards = run_forwards(target, m_inputs[input], m_experiment.repeats);
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
    std::string summary;
    for (const auto& [status, count] : counts) {
      summary += (summary.empty() ? "" : ", ") + std::to_string(count) + " " + status;
    }
    char detail[192];
    if (worst_oracle) {
      std::snprintf(detail, sizeof detail, " (max |a-b| %.3g vs reference; vs fp64: target %.3g, reference %.3g; %s vs %s)",
                    worst_abs, worst_oracle->target_max_abs, worst_oracle->reference_max_abs,
                    format_ms(forwards.median_ms).c_str(), format_ms(reference.median_ms).c_str());
    } else {
      std::snprintf(detail, sizeof detail, " (max |a-b| %.3g vs reference; %s vs %s)", worst_abs,
                    format_ms(forwards.median_ms).c_str(), format_ms(reference.median_ms).c_str());
    }
    log_line(input, t, summary + detail);
  }

  void log_line(size_t input, size_t target, const std::string& text) {
    m_log << "[" << m_experiment.name << "] " << m_experiment.inputs[input].name << " "
          << m_experiment.reference.name << "~" << m_experiment.targets[target].name << ": " << text << "\n";
  }

  const Experiment& m_experiment;
  const std::vector<at::Tensor>& m_inputs;
  BackendSource m_source;
  std::ostream& m_log;
  std::optional<BackendInstance> m_reference;
  std::string m_reference_load_error;
  std::vector<std::optional<Forwards>> m_reference_results;  // per input
  std::vector<std::string> m_reference_errors;               // per input; "" when it ran
  std::vector<std::string> m_reference_paths;                // leaves on the first input that ran
  std::vector<std::optional<c10::IValue>> m_oracle_outputs;  // per input; empty when the oracle failed or is off
  std::vector<std::string> m_oracle_errors;                  // per input; why the oracle has no output
  std::vector<std::vector<std::vector<CheckRecord>>> m_grid;  // [input][target] -> records
};

}  // namespace

RunFile run_experiments(const std::vector<Experiment>& experiments, const CommitInfo& commit,
                        const Environment& environment, const RunnerOptions& options, std::ostream& log) {
  if (options.threads < 1) {
    throw Error("--threads must be at least 1 (got " + std::to_string(options.threads) + ")");
  }
  RunFile run;
  run.header.tool_version = DRIFTGATE_VERSION;
  run.header.commit = commit;
  run.header.environment = environment;
  // User errors (missing files, bad images) surface before any forward runs.
  std::vector<std::vector<at::Tensor>> inputs;
  for (const auto& experiment : experiments) {
    std::vector<at::Tensor> tensors;
    try {
      run.header.experiments.push_back(make_header(experiment));
      for (const auto& spec : experiment.inputs) {
        tensors.push_back(make_input(spec));
      }
    } catch (const Error& e) {
      throw Error(experiment.config_path + ": " + e.what());
    }
    inputs.push_back(std::move(tensors));
  }
  for (size_t e = 0; e < experiments.size(); ++e) {
    std::vector<CheckRecord> records = ExperimentRun(experiments[e], inputs[e], options, log).run();
    std::move(records.begin(), records.end(), std::back_inserter(run.checks));
  }
  run.summary = summarize(run.header, run.checks);
  return run;
}

}  // namespace driftgate

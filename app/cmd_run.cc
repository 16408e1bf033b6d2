// driftgate run: runs experiments on their reference and target backends and
// writes the run file (header, one record per check, summary).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "app/cli_util.h"
#include "app/command.h"
#include "core/error.h"
#include "core/experiment.h"
#include "core/file_util.h"
#include "core/git_repo.h"
#include "core/record.h"
#include "differ/latency.h"
#include "differ/run_digest.h"
#include "runner/environment_probe.h"
#include "runner/mitigation.h"
#include "runner/runner.h"

namespace driftgate {

namespace {

// Everything `driftgate run` was asked to do.
struct RunRequest {
  std::vector<std::string> configs;  // experiment YAML files, run in this order
  std::string output_path;           // the run file to write
  int threads = 1;                   // intra-op threads of backends that do not set their own
  std::string repo = ".";            // a directory inside the git checkout (for the commit stamp)
  bool quiet = false;                // no progress lines; only the result line and errors
  bool verbose = false;              // what backends print on stderr, also on the log
  bool in_process = false;           // no forked children: faster to debug, but a crash ends the run
  std::string shard;                 // "i/N": run the i-th of N deterministic slices (0-based)
  bool mitigate = false;             // search fallbacks for failing targets (runner/mitigation.h)
  bool trace_timing = false;         // phase durations to stderr (runner/timing_trace.h)
};

// "2/4" -> {2, 4}. Throws driftgate::Error unless 0 <= i < N.
ShardInfo parse_shard(const std::string& text) {
  ShardInfo shard;
  size_t slash = text.find('/');
  char* end = nullptr;
  bool valid = slash != std::string::npos && slash > 0 && slash + 1 < text.size();
  if (valid) {
    long index = std::strtol(text.c_str(), &end, 10);
    valid = end == text.c_str() + slash;
    long count = std::strtol(text.c_str() + slash + 1, &end, 10);
    valid = valid && *end == '\0' && count >= 1 && count <= 100000 && index >= 0 && index < count;
    shard.index = static_cast<int>(index);
    shard.count = static_cast<int>(count);
  }
  if (!valid) {
    throw Error("driftgate run: --shard '" + text + "': expected i/N with 0 <= i < N (0-based), e.g. --shard 0/4");
  }
  return shard;
}

const CommandHelp k_help{
    "driftgate run CONFIG.yaml... -o RUN.jsonl [--threads N] [--shard i/N] [--repo DIR] [--in-process] [--mitigate]\n"
    "    [-q] [--trace-timing]",
    "Loads every experiment config first (any error: exit 2, nothing written), then runs each model on\n"
    "its reference backend, every target backend and a float64 oracle, each a separately loaded instance\n"
    "in its own forked process, and compares every output leaf of every input (tier 1: shape, dtype,\n"
    "NaN/inf, then the experiment's rule: assert_close by default, polygraphy, normwise or oracle). Writes\n"
    "one JSONL run file: a header (commit, environment and its key, hashes of configs and models), one\n"
    "record per check (inputs x targets x outputs; a target that aborts, segfaults, exceeds timeout_s or\n"
    "cannot run here still gets its records: crash_ref, crash_target, timeout, skipped) and a summary.\n"
    "Progress goes to stderr: [n/N] per backend and input as its forwards finish, the time elapsed and\n"
    "an estimate of the time left (one line rewritten in place on a terminal, a line per step\n"
    "elsewhere), and each target's error against the reference and against float64.\n"
    "Latency: after its compared repeats each backend runs warm-up forwards, then timed ones (the\n"
    "experiment's `latency:`, default 3 and 10); the record keeps the median and interquartile range per\n"
    "backend and input, and the run ends with that table (not with -q). Latency never fails a check.\n"
    "Tier 2 (the experiment's `activations:`, default on_failure; always; off): every failing check gets\n"
    "a localization, the per-layer error profile and the first divergent layer (driftgate explain).\n"
    "An experiment with a `task:` section also gets tier-3 checks (output task:classification,\n"
    "task:detection[stable|native], task:segmentation; status fail_task when the answer changed); a task\n"
    "naming an output the model lacks (or one that is no tensor) is a config error: exit 2, nothing written.\n"
    "--mitigate: for each failing target, tries fp32, onednn_off, contiguous, eager, ort_basic (ONNX Runtime\n"
    "at optimization basic) and stable_nms, those that change something, in every set of up to 3;\n"
    "records the cheapest set (by latency) that restores tier-1 agreement and the cheapest that restores\n"
    "task agreement; a set that is the reference again ranks last. A target cast\n"
    "to bfloat16/float16 also gets the fewest blocks run in float32 that restore agreement. The choices\n"
    "are timed again side by side with the target in one more run.\n"
    "Exit 1 when any check failed (fail_*, crash_*, timeout), known failures included: the gate is\n"
    "driftgate diff's exit code. Skipped checks do not fail the run.",
    "driftgate run configs/*.yaml -o out/run.jsonl --threads 1   # then: driftgate diff out/run.jsonl"};

std::optional<RunRequest> parse_request(CommandContext& context) {
  RunRequest request;
  po::options_description options;
  // clang-format off
  options.add_options()
      ("config", po::value<std::vector<std::string>>(&request.configs),
       "experiment config files (positional, one or more)")
      ("output,o", po::value<std::string>(&request.output_path)->required(), "the run file to write (JSONL)")
      ("threads", po::value<int>(&request.threads)->default_value(1),
       "intra-op threads for backends that do not set their own (enters the environment key)")
      ("repo", po::value<std::string>(&request.repo)->default_value("."),
       "a directory inside the git checkout whose HEAD stamps the run")
      ("shard", po::value<std::string>(&request.shard),
       "i/N: run only the (experiment, input) pairs at positions i, i+N, ... (0-based); join with merge")
      ("in-process", po::bool_switch(&request.in_process),
       "run every backend in this process (no isolation: a crash or hang ends the run)")
      ("mitigate", po::bool_switch(&request.mitigate),
       "search fallbacks for failing targets; the winning set and its latency cost go into the records")
      ("quiet,q", po::bool_switch(&request.quiet), "no progress lines on stderr")
      ("verbose,v", po::bool_switch(&request.verbose),
       "print each line a backend printed on stderr (LibTorch's warnings and logs) once the experiment's "
       "backends have run; without -v "
       "they are only in the records (each check's \"messages\": backend, text, count)")
      ("trace-timing", po::bool_switch(&request.trace_timing),
       "print each phase's wall and CPU time to stderr (start, configs, probe, hashes, inputs; per "
       "backend: load, forwards, transfer; comparison; writing), also under -q");
  // clang-format on
  po::positional_options_description positional;
  positional.add("config", -1);
  po::variables_map variables;
  if (!parse_command_line("run", context.args, options, positional, k_help, variables, context.out)) {
    return std::nullopt;
  }
  if (request.configs.empty()) {
    throw Error("driftgate run: no experiment config given; e.g. driftgate run configs/*.yaml -o run.jsonl");
  }
  if (request.threads < 1) {
    throw Error("driftgate run: --threads " + std::to_string(request.threads) + ": must be at least 1");
  }
  return request;
}

// Every config, loaded and validated before anything runs; experiment names
// must be unique across them (they are the first part of every check id).
std::vector<Experiment> load_all(const std::vector<std::string>& configs) {
  std::vector<Experiment> experiments;
  std::map<std::string, std::string> defined_in;
  for (const auto& path : configs) {
    Experiment experiment = load_experiment(path);
    auto [it, inserted] = defined_in.emplace(experiment.name, path);
    if (!inserted) {
      throw Error(path + ": experiment name '" + experiment.name + "' is already used by " + it->second +
                  "; experiment names must be unique across the configs of a run (they start every check id)");
    }
    experiments.push_back(std::move(experiment));
  }
  return experiments;
}

// The run file must not replace a file the run reads (its config, model, images,
// tensors or labels): `run x.yaml -o x.yaml` would overwrite the config with results.
// Checked before anything runs; the same file reached by another name or a link counts.
void refuse_output_over_input(const std::vector<Experiment>& experiments, const std::string& output_path) {
  std::error_code ec;
  if (!std::filesystem::exists(output_path, ec)) {
    return;  // every input exists, so a new file cannot be one of them
  }
  auto check = [&](const std::string& input, const std::string& what) {
    std::error_code equivalent_ec;
    if (std::filesystem::equivalent(output_path, input, equivalent_ec)) {
      throw Error("driftgate run: -o " + output_path + " is " + what + " (" + input +
                  "); the run file would overwrite it: write it elsewhere, e.g. -o run.jsonl");
    }
  };
  for (const Experiment& experiment : experiments) {
    const std::string of = " of experiment '" + experiment.name + "'";
    check(experiment.config_path, "the config" + of);
    check(experiment.model_path, "the model" + of);
    for (const InputSpec& input : experiment.inputs) {
      for (const TensorSource* source : tensor_sources(input)) {
        if (source->kind == TensorSource::Kind::k_image) {
          check(source->image.path, "the image of input '" + input.name + "'" + of);
        } else if (source->kind == TensorSource::Kind::k_tensor) {
          check(source->tensor.path, "the tensor of input '" + input.name + "'" + of);
        }
      }
    }
    if (experiment.task && !experiment.task->labels_path.empty()) {
      check(experiment.task->labels_path, "the labels file" + of);
    }
  }
}

CommitInfo commit_of(const std::string& repo_path) {
  std::optional<GitRepo> repo = GitRepo::open(repo_path);
  if (!repo) {
    return CommitInfo{"unknown", "", false};
  }
  return repo->head_info();
}

// "12 checks (10 pass, 2 fail_numeric)", statuses in taxonomy order.
std::string describe(const RunSummary& summary) {
  std::string counts;
  for (CheckStatus status : all_check_statuses()) {
    auto it = summary.by_status.find(to_string(status));
    if (it != summary.by_status.end() && it->second > 0) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(it->second) + " " + it->first;
    }
  }
  return std::to_string(summary.checks) + " checks" + (counts.empty() ? "" : " (" + counts + ")");
}

// One line per (experiment, target): the worst error against the reference and,
// where the oracle ran, against float64 beside the reference's own, so drift can be
// told from "the reference is the less accurate one".
void print_errors_per_target(const RunFile& run, std::ostream& out) {
  struct Worst {
    double reference = 0.0;
    double target_oracle = -1.0;
    double reference_oracle = 0.0;
  };
  std::vector<std::pair<std::string, Worst>> rows;
  for (const auto& check : run.checks) {
    if (!check.stats) {
      continue;
    }
    std::string key = check.experiment + " " + check.target;
    auto row = std::find_if(rows.begin(), rows.end(), [&](const auto& item) { return item.first == key; });
    if (row == rows.end()) {
      rows.emplace_back(key, Worst{});
      row = rows.end() - 1;
    }
    row->second.reference = std::max(row->second.reference, check.stats->max_abs);
    if (check.stats->oracle) {
      row->second.target_oracle = std::max(row->second.target_oracle, check.stats->oracle->target_max_abs);
      row->second.reference_oracle = std::max(row->second.reference_oracle, check.stats->oracle->reference_max_abs);
    }
  }
  if (rows.empty()) {
    return;
  }
  out << "max |error| per target: vs the reference; vs float64 (the reference's own vs float64)\n";
  for (const auto& [key, worst] : rows) {
    char line[160];
    if (worst.target_oracle >= 0.0) {
      std::snprintf(line, sizeof line, "  %-40s %.3g; %.3g (%.3g)\n", key.c_str(), worst.reference, worst.target_oracle,
                    worst.reference_oracle);
    } else {
      std::snprintf(line, sizeof line, "  %-40s %.3g; no oracle\n", key.c_str(), worst.reference);
    }
    out << line;
  }
}

// Which task adapter restored agreement, and each mitigation found, once per
// (experiment, target): results, so printed even under -q.
// Backends that printed on stderr, named without -v (which printed each line as it came).
void print_backend_messages_line(const RunFile& run, bool verbose, std::ostream& out) {
  std::set<std::string> backends;
  size_t checks = 0;
  for (const CheckRecord& check : run.checks) {
    checks += check.messages.empty() ? 0 : 1;
    for (const BackendMessage& message : check.messages) {
      backends.insert(message.backend);
    }
  }
  if (checks == 0 || verbose) {
    return;
  }
  std::string names;
  for (const std::string& name : backends) {
    names += (names.empty() ? "" : ", ") + name;
  }
  out << "backends printed on stderr (" << names << "): in the records of " << checks
      << " checks (\"messages\"); run -v prints the lines\n";
}

void print_task_and_mitigation_lines(const RunFile& run, std::ostream& out) {
  std::set<std::string> printed;
  for (const auto& check : run.checks) {
    const std::string key = check.experiment + " " + check.target;
    if (check.mitigation && printed.insert("m " + key).second) {
      // The target's and the reference's latency, then each choice against both.
      const bool task_failed = std::any_of(run.checks.begin(), run.checks.end(), [&](const CheckRecord& other) {
        return other.mitigation && other.experiment == check.experiment && other.target == check.target &&
               other.output.rfind("task:", 0) == 0;
      });
      const std::vector<std::string> lines = mitigation_lines(*check.mitigation, check.target, task_failed);
      for (size_t i = 0; i < lines.size(); ++i) {
        out << (i == 0 ? "mitigation [" + check.experiment + "] " : std::string("  ")) << lines[i] << "\n";
      }
    }
    if (check.task && check.status == CheckStatus::k_pass && printed.insert("t " + key + check.input).second) {
      for (const auto& finding : check.task->findings) {
        if (finding.find("restores the agreement") != std::string::npos) {
          out << "tier 3 [" << check.experiment << "] " << check.input << " " << check.reference << "~" << check.target
              << ": " << finding << "\n";
        }
      }
    }
  }
}

// Swallows progress output under -q.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
};

// A task check the runner could not judge (unsupported) means that the config's task block does
// not fit the model: an output it names is missing or is no tensor (runner/tier3.cc, judge_task).
// That is a config error, found at the first forward: exit 2 with the messages, nothing written.
void refuse_unfit_tasks(const RunFile& run) {
  std::vector<std::string> messages;
  for (const auto& check : run.checks) {
    if (check.status == CheckStatus::k_unsupported && check.output.rfind("task:", 0) == 0 &&
        std::find(messages.begin(), messages.end(), check.message) == messages.end()) {
      messages.push_back(check.message);
    }
  }
  if (messages.empty()) {
    return;
  }
  std::string text;
  for (const auto& message : messages) {
    text += "\n  " + message;
  }
  throw Error("driftgate run: a task does not fit its model, so no run file was written:" + text);
}

}  // namespace

int cmd_run(CommandContext& context) {
  std::optional<RunRequest> request = parse_request(context);
  if (!request) {
    return 0;
  }
  const TimingTrace trace = request->trace_timing ? TimingTrace(context.err) : TimingTrace();
  trace.print_startup();
  TimingTrace::Phase total(trace, "total after start");
  TimingTrace::Phase phase(trace, "load configs");
  std::vector<Experiment> experiments = load_all(request->configs);
  refuse_output_over_input(experiments, request->output_path);
  phase.end();
  TimingTrace::Phase commit_phase(trace, "commit (git HEAD)");
  CommitInfo commit = commit_of(request->repo);
  commit_phase.end();
  TimingTrace::Phase probe_phase(trace, "environment probe");
  Environment environment = probe_environment(request->threads, onnx_worker_setting(context.env));
  probe_phase.end();
  RunnerOptions options;
  options.trace = trace;
  options.threads = request->threads;
  options.isolate = !request->in_process;
  options.mitigate = request->mitigate;
  options.progress = !request->quiet;
  options.verbose = request->verbose;
  options.onnx_worker = onnx_worker_setting(context.env);
  // One status line rewritten in place only where stderr is a terminal (not in CI logs).
  options.progress_terminal = &context.err == &std::cerr && ::isatty(STDERR_FILENO) == 1;
  if (!request->shard.empty()) {
    options.shard = parse_shard(request->shard);
  }

  NullBuffer null_buffer;
  std::ostream null_stream(&null_buffer);
  std::ostream& log = request->quiet ? null_stream : context.err;
  RunFile run = run_experiments(experiments, commit, environment, options, log);
  refuse_unfit_tasks(run);

  TimingTrace::Phase write_phase(trace, "write run file");
  std::ostringstream text;
  write_run(text, run);
  write_file_atomic(request->output_path, text.str());
  write_phase.end();

  print_errors_per_target(run, log);
  print_task_and_mitigation_lines(run, context.err);
  log << render_latency_text(latency_rows(digest_view(run)));
  print_backend_messages_line(run, request->verbose, log);
  context.err << "driftgate run: " << describe(run.summary) << " -> " << request->output_path << "\n";
  if (run.header.shard.count > 1) {
    context.err << "shard " << run.header.shard.index << "/" << run.header.shard.count << ": " << run.summary.checks
                << " of the suite's " << run.summary.expected_checks
                << " expected checks; join the shard files with driftgate merge\n";
  } else if (run.summary.checks != run.summary.expected_checks) {
    context.err << "warning: " << run.summary.checks << " checks written, " << run.summary.expected_checks
                << " expected from inputs x targets x outputs (the reference's outputs differ between inputs)\n";
  }
  for (const auto& check : run.checks) {
    if (is_failure(check.status)) {
      return 1;
    }
  }
  return 0;
}

}  // namespace driftgate

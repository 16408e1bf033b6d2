// The runner: turns experiments into a run file.
//
// For each experiment it loads the reference backend and every target as
// separate module instances, feeds each input to each, and compares every
// target's outputs with the reference's (tier 1). What it must never do is
// drop a check: a target that throws gives k_crash_target records, a backend this
// machine cannot run gives k_skipped records, so the number of checks is always
// inputs x targets x outputs and the summary can be derived from the config.
// Torch-free header: app/cmd_run.cc includes it.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "core/environment.h"
#include "core/experiment.h"
#include "core/record.h"
#include "runner/timing_trace.h"

namespace driftgate {

struct RunnerOptions {
  // Intra-op threads (at::set_num_threads) of every backend whose spec says
  // threads: 0. The `--threads` of `driftgate run`; at least 1.
  int threads = 1;
  // Run each experiment's backends in forked child processes (runner/backend_run.h), so a
  // check that aborts, crashes or exceeds its experiment's timeout_s is recorded
  // (crash_ref, crash_target, timeout) and the run goes on. Off: everything runs
  // in this process, and a crash ends the run.
  bool isolate = true;
  // `run --shard i/N`: run only the (experiment, input) pairs whose position in
  // config order is i modulo N. The header still describes the whole suite (every
  // shard's must be the same for `merge`); the checks and the summary's counts are
  // the slice's, its expected_checks the suite's.
  ShardInfo shard;
  // `run --mitigate`: for every target with failing checks, try fallbacks (runner/mitigation.h)
  // and record the smallest set that restores agreement, with its latency cost.
  bool mitigate = false;
  // Progress (runner/progress.h) on the log stream: one step per backend and input.
  // `progress_terminal`: the log stream is a terminal, so the status is one line
  // rewritten in place. cmd_run turns progress off under -q.
  bool progress = false;
  bool progress_terminal = false;
  // `run -v`: each line a backend printed on stderr (LibTorch's warnings and logs), on the
  // log once the experiment's backends have run; otherwise they are only in the records
  // (CheckRecord::messages).
  bool verbose = false;
  // The onnxruntime backends' worker program (runner/onnx_worker.h): DRIFTGATE_ORT_WORKER,
  // which main() reads; "" for driftgate-ort beside the running driftgate.
  std::string onnx_worker;
  // `run --trace-timing`: phase durations (inputs, hashes, each backend's load and
  // forwards in the child, transfer, comparison) to stderr. Disabled by default.
  TimingTrace trace;
};

// The experiments with only the inputs of `shard` (an experiment may keep none).
std::vector<Experiment> shard_slice(const std::vector<Experiment>& experiments, const ShardInfo& shard);

// Runs all experiments and returns the run file: the header (commit,
// environment, per experiment the content hashes of config and model), one
// CheckRecord per (experiment, input, target, reference output leaf) in that
// order, and the summary (core's summarize()). Writes one progress line per
// (experiment, input, target) to `log`.
//
// Before any forward it hashes every config and model file and makes every
// input; a missing file or a bad image throws driftgate::Error (a user error:
// nothing is run). LibTorch failures after that become records, never throws:
//   - the reference fails to load or to run an input: k_crash_ref for every target,
//     one per output leaf the reference produced on its other inputs, or one
//     with output "*" when it produced none;
//   - a target fails to load or to run: k_crash_target per reference leaf;
//   - a backend cannot run here (no CUDA, float16 on the CPU): k_skipped with the reason;
//   - isolated, a child that dies gives k_crash_* with the signal, one that exceeds
//     timeout_s gives k_timeout.
RunFile run_experiments(const std::vector<Experiment>& experiments, const CommitInfo& commit,
                        const Environment& environment, const RunnerOptions& options, std::ostream& log);

}  // namespace driftgate

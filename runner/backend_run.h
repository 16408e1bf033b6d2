// An experiment's backends run on its inputs, in this process or isolated in
// forked child processes.
//
// It exists so that a model that aborts, segfaults or hangs in one check does not
// take the run down with it. Isolated, one child forked from the runner loads the
// experiment's backends one after the other (reference first, each a fresh
// instance, the previous one destroyed) and sends each input's outputs back over a
// pipe (torch::jit::pickle_save) as soon as it has them. When the child dies, the
// (backend, input) it was on is recorded as crashed (with the signal) and a fresh
// child takes over from the next one; when a load or an input's forwards exceed the
// time limit the child is killed and that check recorded as timed out. One child
// per experiment, not per backend: a fresh process pays LibTorch's cold start
// (about 0.1 s on resnet18) once, not once per backend.
//
// Forking is only safe while the runner process has never entered a multi-threaded
// OpenMP region (GNU libgomp's thread pool does not survive fork: the child hangs),
// so the isolated runner keeps its own intra-op thread count at 1 and runs no
// forward itself; children set each backend's threads.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/experiment.h"
#include "runner/backend.h"
#include "runner/inputs.h"
#include "runner/timing_trace.h"

namespace driftgate {

// How one backend's forwards on one input run: `repeats` forwards whose outputs are
// compared (the first calls of a freshly loaded module, as a user's first request sees
// it), then untimed forwards until `warmup` have run in all, then `runs` timed forwards
// whose outputs are dropped. runs == 0 times nothing (the oracle).
struct ForwardPlan {
  int repeats = 2;
  int warmup = 3;
  int runs = 10;
};

// The outputs of one backend's repeats on one input and the latency of its timed runs.
struct Forwards {
  std::vector<c10::IValue> outputs;
  double median_ms = 0.0;  // of the timed runs; 0 when none ran
  double iqr_ms = 0.0;     // q3 - q1 of the timed runs (linear interpolation, as numpy.percentile)
  std::map<std::string, double> repeat_max_abs;  // per numeric leaf; empty for one repeat
};

// How one input went for a backend that loaded.
struct InputRun {
  std::optional<Forwards> forwards;  // present when every repeat ran
  std::string error;                 // why not: thrown, crashed (with the signal) or timed out
  bool timed_out = false;
  // Isolated runs: what the child printed on stderr while it ran this input
  // (message_lines, runner/backend_messages.h). In-process runs leave stderr alone.
  std::vector<std::string> messages;
};

struct BackendRun {
  std::string skip_reason;  // the backend cannot run here (nothing was loaded)
  std::string load_error;   // loading threw, crashed or timed out
  std::string model_error;  // the model file itself cannot be used (ModelFileError); nothing else ran
  bool load_timed_out = false;
  std::vector<std::string> load_messages;  // isolated runs: stderr while the backend loaded
  std::vector<InputRun> inputs;            // one per input; untouched where not wanted
};

struct BackendRunOptions {
  ForwardPlan plan;
  double timeout_s = 120.0;  // per load and per input (all its forwards), isolated runs only
  bool isolate = true;       // the runner uses run_isolated; run_backend always runs in process
};

// Runs `spec` on inputs[i] for every i with wanted[i], in this process.
// `alias_reference`, when given, is checked with check_no_shared_storage (a failure
// is a load error) and `keep` receives the loaded instance.
BackendRun run_backend(const BackendSpec& spec, const BackendSource& source, const std::vector<ModelInput>& inputs,
                       const std::vector<bool>& wanted, const BackendRunOptions& options,
                       const BackendInstance* alias_reference = nullptr,
                       std::optional<BackendInstance>* keep = nullptr);

// One backend of an isolated experiment and its forwards per input.
struct Stage {
  BackendSpec spec;
  ForwardPlan plan;
};

// Runs `stages` in order in forked children, one BackendRun per stage. Stage 0 is
// the reference: it runs every input; the other stages run only the inputs on which
// it produced outputs, and nothing when it could not load or is skipped.
// `timeout_s` bounds each load and each input's forwards. `trace` (when enabled)
// gets the child's load, forwards and send per stage and input, and the parent's
// receive per message. `on_input(stage, input)`, when given, is called as each input's
// forwards of a stage end (outputs received, an error, a crash or a timeout): the
// runner's progress line. Each child's stderr goes to an anonymous file (memfd) that
// the parent reads after every message: what a backend printed while it loaded lands in
// its load_messages, while it ran an input in that input's messages, and the last line
// before a crash or a timeout also ends that error's text.
std::vector<BackendRun> run_isolated(const std::vector<Stage>& stages, const BackendSource& source,
                                     const std::vector<ModelInput>& inputs, double timeout_s,
                                     const TimingTrace& trace = TimingTrace(),
                                     const std::function<void(size_t stage, size_t input)>& on_input = {});

// run_isolated does not wait for its last child to exit (the kernel freeing a
// child's models takes tens of milliseconds): this waits for every such child.
// The runner calls it before it returns; later run_isolated calls reap the ones
// already gone.
void reap_exiting_children();

// The latency of `times_ms` (median and interquartile range) and the run-to-run
// variance of repeated outputs.
Forwards make_forwards(std::vector<c10::IValue> outputs, std::vector<double> times_ms);

// The q-quantile (0..1) of sorted values, linearly interpolated between the two nearest
// ranks (numpy.percentile's default); 0 for none.
double quantile(const std::vector<double>& sorted, double q);

}  // namespace driftgate

// Isolated runs: a check that aborts, segfaults or hangs is recorded and the run goes on.
//
// Its own test binary, because forking is only safe from a process that never ran a
// multi-threaded OpenMP region (runner/backend_run.h); runner_test's backend tests do.
// The misbehaving models call dgtest::explode, an operator registered here, which
// misbehaves only for float64 inputs whose sum exceeds 100, so one (input, backend)
// check fails while the others on the same model pass.
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/library.h>
#include <torch/script.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "runner/backend_messages.h"
#include "runner/backend_run.h"
#include "runner/runner.h"
#include "test_models.h"

namespace {

at::Tensor explode(const at::Tensor& x, int64_t mode) {
  if (x.scalar_type() == at::kDouble && x.sum().item<double>() > 100.0) {
    if (mode == 0) {
      std::abort();
    }
    if (mode == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(1000));
    }
    if (mode == 2) {
      ::raise(SIGSEGV);
    }
    if (mode == 3) {  // last words, then abort
      std::fprintf(stderr, "dgtest: \x1b[31mred\x1b[0m\ndgtest: about to abort\n");
      std::fflush(stderr);
      std::abort();
    }
    if (mode == 4) {  // a flood: 50 distinct lines, ~1.3 MiB in all, then an ordinary result
      for (int i = 0; i < 40000; ++i) {
        std::fprintf(stderr, "dgtest: flood line %02d of a chatty kernel\n", i % 50);
      }
      std::fflush(stderr);
    }
  }
  if (mode == 3 || mode == 4) {
    std::fprintf(stderr, "dgtest: explode ran on %s\n", x.scalar_type() == at::kDouble ? "float64" : "float32");
    std::fflush(stderr);
  }
  return x.clone();
}

TORCH_LIBRARY(dgtest, m) { m.def("explode(Tensor x, int mode) -> Tensor", &explode); }

}  // namespace

namespace driftgate {
namespace {

using testing::backend;
using testing::backend_with_dtype;
using testing::random_input;

// Resolves "dgtest.explode" in TorchScript source defined from C++ (the native
// resolver knows only "torch").
struct DgtestResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name, torch::jit::GraphFunction&,
                                                         const torch::jit::SourceRange&) override {
    if (name == "dgtest") {
      return std::make_shared<torch::jit::BuiltinModule>("dgtest");
    }
    if (name == "torch") {
      return std::make_shared<torch::jit::BuiltinModule>("aten");
    }
    return nullptr;
  }
};

// x -> explode(x, mode) * 1.5 + 1
std::string save_exploding_model(const std::string& dir, int mode) {
  torch::jit::Module module("Exploding");
  module.register_parameter("w", at::full({1}, 1.5), false);
  module.define("def forward(self, x):\n    return dgtest.explode(x, " + std::to_string(mode) + ") * self.w + 1.0\n",
                std::make_shared<DgtestResolver>());
  std::string path = dir + "/exploding_" + std::to_string(mode) + ".pt";
  module.save(path);
  return path;
}

Experiment make_experiment(const std::string& dir, const std::string& model) {
  Experiment experiment = testing::make_experiment(dir, "exploding", model, 2);
  experiment.tolerance_per_dtype = true;
  experiment.oracle = false;
  // "big" (uniform, 1000 elements) sums to about 500: the float64 backend misbehaves there.
  InputSpec big = random_input("big", {1, 1000}, 2);
  big.args[0].tensor.random.distribution = Distribution::k_uniform;
  experiment.inputs = {random_input("small", {1, 10}, 1), big, random_input("small2", {1, 10}, 3)};
  experiment.targets = {backend_with_dtype("cpu_fp64", DType::k_float64), backend("plain")};
  return experiment;
}

RunFile run(const std::vector<Experiment>& experiments, std::ostream& log) {
  Environment environment;
  environment.keyed["threads"] = "1";
  return run_experiments(experiments, testing::k_test_commit, environment, RunnerOptions{}, log);
}

// The latency plan as counted by a model that counts its own calls ("growing": call n
// returns x[:, :n]): per backend instance, `repeats` (here 1) compared forwards, untimed
// ones up to `warmup` in all, then `runs` timed ones, so the second input's output has
// repeats + max(0, warmup - repeats) + runs + 1 columns. In process and isolated alike.
TEST(Isolation, ForwardsRunAsTheLatencyPlanSays) {
  std::string dir = testing::fresh_dir("isolation_plan");
  Experiment experiment = testing::make_experiment(dir, "plan", testing::save_hostile_model(dir, "growing"), 1);
  experiment.oracle = false;
  experiment.inputs = {random_input("one", {1, 40}, 1), random_input("two", {1, 40}, 2)};
  experiment.targets = {backend("plain")};
  struct Plan {
    int warmup;
    int runs;
    int64_t columns;  // of the second input's first output
  };
  for (const Plan& plan : {Plan{5, 4, 10}, Plan{1, 3, 5}, Plan{0, 1, 3}}) {
    experiment.latency_warmup = plan.warmup;
    experiment.latency_runs = plan.runs;
    for (bool isolate : {false, true}) {
      std::ostringstream log;
      RunnerOptions options;
      options.isolate = isolate;
      RunFile result = run_experiments({experiment}, testing::k_test_commit, Environment{}, options, log);
      ASSERT_EQ(result.checks.size(), 2u) << log.str();
      const CheckRecord& second = result.checks[1];
      ASSERT_TRUE(second.observed_reference) << second.id << ": " << second.message;
      EXPECT_EQ(second.observed_reference->shape, (std::vector<int64_t>{1, plan.columns}))
          << "warmup " << plan.warmup << " runs " << plan.runs << " isolate " << isolate;
      EXPECT_GT(second.reference_ms, 0.0);
      EXPECT_GT(second.target_ms, 0.0);
      EXPECT_GE(second.target_iqr_ms, 0.0);  // measured: a number, not nan
      EXPECT_EQ(second.target_iqr_ms == 0.0, plan.runs == 1) << second.target_iqr_ms;
    }
  }
}

// The quantiles of the timed runs as numpy.percentile computes them (linear
// interpolation between ranks); the values are numpy's for these inputs.
TEST(Isolation, LatencyQuantilesAreNumpys) {
  EXPECT_DOUBLE_EQ(quantile({1.0, 2.0, 3.0, 4.0}, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(quantile({1.0, 2.0, 3.0, 4.0}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1.0, 2.0, 3.0, 4.0}, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(quantile({2.0, 3.0, 5.0, 7.0, 11.0}, 0.75), 7.0);
  EXPECT_DOUBLE_EQ(quantile({2.0, 3.0, 5.0, 7.0, 11.0, 13.0}, 0.25), 3.5);
  EXPECT_DOUBLE_EQ(quantile({9.0}, 0.75), 9.0);
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0.0);
  Forwards forwards = make_forwards({}, {13.0, 2.0, 11.0, 5.0, 3.0, 7.0});
  EXPECT_DOUBLE_EQ(forwards.median_ms, 6.0);
  EXPECT_DOUBLE_EQ(forwards.iqr_ms, 10.0 - 3.5);
}

TEST(Isolation, AbortInOneCheckIsRecordedAndTheRunGoesOn) {
  std::string dir = testing::fresh_dir("isolation_abort");
  std::ostringstream log;
  RunFile result = run({make_experiment(dir, save_exploding_model(dir, 0))}, log);
  ASSERT_EQ(result.checks.size(), 6u);
  // Order: input, then target.
  EXPECT_EQ(result.checks[0].status, CheckStatus::k_pass) << result.checks[0].message;
  EXPECT_EQ(result.checks[1].status, CheckStatus::k_pass);
  EXPECT_EQ(result.checks[2].id, "exploding/big/cpu_fp32~cpu_fp64/out");
  EXPECT_EQ(result.checks[2].status, CheckStatus::k_crash_target);
  EXPECT_NE(result.checks[2].message.find("backend 'cpu_fp64': the process running forward of"), std::string::npos)
      << result.checks[2].message;
  EXPECT_NE(result.checks[2].message.find("died: killed by signal 6"), std::string::npos) << result.checks[2].message;
  EXPECT_EQ(result.checks[3].status, CheckStatus::k_pass);  // "plain" on the same input
  EXPECT_EQ(result.checks[4].status, CheckStatus::k_pass);  // a fresh child took the input after the crash
  EXPECT_EQ(result.checks[5].status, CheckStatus::k_pass);
}

TEST(Isolation, HangBeyondTimeoutIsRecordedAsTimeout) {
  std::string dir = testing::fresh_dir("isolation_hang");
  Experiment experiment = make_experiment(dir, save_exploding_model(dir, 1));
  experiment.timeout_s = 1.5;
  experiment.repeats = 1;
  std::ostringstream log;
  RunFile result = run({experiment}, log);
  ASSERT_EQ(result.checks.size(), 6u);
  EXPECT_EQ(result.checks[2].status, CheckStatus::k_timeout);
  EXPECT_NE(result.checks[2].message.find("did not finish within timeout_s 1.5 s and was killed"), std::string::npos)
      << result.checks[2].message;
  EXPECT_EQ(result.checks[4].status, CheckStatus::k_pass);
  EXPECT_EQ(result.summary.by_status.at("timeout"), 1);
  EXPECT_EQ(result.summary.by_status.at("pass"), 5);
}

TEST(Isolation, SegfaultInTheReferenceIsCrashRefForThatInputOnly) {
  std::string dir = testing::fresh_dir("isolation_segv");
  Experiment experiment = make_experiment(dir, save_exploding_model(dir, 2));
  experiment.reference = backend_with_dtype("ref_fp64", DType::k_float64);
  experiment.targets = {backend("plain")};
  std::ostringstream log;
  RunFile result = run({experiment}, log);
  ASSERT_EQ(result.checks.size(), 3u);
  EXPECT_EQ(result.checks[0].status, CheckStatus::k_pass) << result.checks[0].message;
  EXPECT_EQ(result.checks[1].status, CheckStatus::k_crash_ref);
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan its SEGV handler reports the fault first and, with abort_on_error=1 (tools/test.sh),
  // ends the child with SIGABRT; with handle_segv=0 the segfault itself kills it.
  const std::string& message = result.checks[1].message;
  EXPECT_TRUE(message.find("killed by signal 11") != std::string::npos ||
              message.find("killed by signal 6") != std::string::npos)
      << message;
#else
  EXPECT_NE(result.checks[1].message.find("killed by signal 11"), std::string::npos) << result.checks[1].message;
#endif
  EXPECT_EQ(result.checks[2].status, CheckStatus::k_pass);
}

// Every line of a run with the timings zeroed.
std::string without_timings(RunFile run) {
  std::ostringstream text;
  for (CheckRecord& check : run.checks) {
    check.reference_ms = 0.0;
    check.target_ms = 0.0;
    check.reference_iqr_ms = check.target_iqr_ms = 0.0;
    if (check.localization) {
      check.localization->peak_rss_kib = 0;  // memory, like time, depends on the process measured
    }
    text << check_to_json_line(check) << "\n";
  }
  return text.str();
}

TEST(Isolation, IsolatedRecordsEqualInProcessOnesAndRepeatExactly) {
  std::string dir = testing::fresh_dir("isolation_same");
  Experiment experiment = make_experiment(dir, testing::save_conv_bn_model(dir));
  experiment.oracle = true;
  experiment.inputs = {random_input("a", {1, 3, 6, 6}, 1), random_input("b", {1, 3, 6, 6}, 2)};
  BackendSpec frozen = backend("frozen");
  frozen.graph = GraphMode::k_frozen;
  experiment.targets = {frozen, backend_with_dtype("cpu_bf16", DType::k_bfloat16)};
  std::ostringstream log;
  std::string first = without_timings(run({experiment}, log));
  EXPECT_EQ(without_timings(run({experiment}, log)), first);
  Environment environment;
  environment.keyed["threads"] = "1";
  RunnerOptions in_process;
  in_process.isolate = false;
  EXPECT_EQ(without_timings(run_experiments({experiment}, testing::k_test_commit, environment, in_process, log)),
            first);
  EXPECT_NE(first.find("\"oracle\":{"), std::string::npos);
}

// What a backend prints on stderr goes into the records of its checks (deduplicated,
// counted), not to the terminal; a crash's last line ends its message; a flood is
// bounded (the last 1 MiB of a step is read, at most 20 distinct lines per backend).
TEST(Isolation, WhatBackendsPrintIsRecordedPerCheckAndBounded) {
  std::string dir = testing::fresh_dir("isolation_stderr");
  std::ostringstream log;
  RunFile result = run({make_experiment(dir, save_exploding_model(dir, 3))}, log);
  ASSERT_EQ(result.checks.size(), 6u);
  const CheckRecord& crashed = result.checks[2];
  EXPECT_EQ(crashed.status, CheckStatus::k_crash_target);
  const std::string last = "died: killed by signal 6 (Aborted); its last line on stderr: dgtest: about to abort";
  EXPECT_NE(crashed.message.find(last), std::string::npos) << crashed.message;
  auto count_of = [](const CheckRecord& check, const std::string& backend, const std::string& text) {
    for (const BackendMessage& message : check.messages) {
      if (message.backend == backend && message.text == text) {
        return message.count;
      }
    }
    return int64_t{0};
  };
  // The reference (float32) ran explode 13 times on "small" (2 repeats, 1 more warm-up
  // forward to the default 3, 10 timed ones); the float64 target too.
  EXPECT_EQ(count_of(result.checks[0], "cpu_fp32", "dgtest: explode ran on float32"), 13);
  EXPECT_EQ(count_of(result.checks[0], "cpu_fp64", "dgtest: explode ran on float64"), 13);
  EXPECT_EQ(count_of(result.checks[1], "cpu_fp64", "dgtest: explode ran on float64"), 0);  // not plain's check
  EXPECT_EQ(count_of(crashed, "cpu_fp64", "dgtest: about to abort"), 1);
  EXPECT_EQ(count_of(crashed, "cpu_fp64", "dgtest: \\x1b[31mred\\x1b[0m"), 1);  // the escape made visible
  EXPECT_EQ(log.str().find("explode ran on"), std::string::npos) << log.str();  // off the log without -v

  dir = testing::fresh_dir("isolation_flood");
  result = run({make_experiment(dir, save_exploding_model(dir, 4))}, log);
  ASSERT_EQ(result.checks.size(), 6u);
  const CheckRecord& flooded = result.checks[2];
  EXPECT_EQ(flooded.status, CheckStatus::k_pass) << flooded.message;
  size_t kept = 0;
  int64_t more = 0;
  bool unread = false;
  for (const BackendMessage& message : flooded.messages) {
    if (message.backend != "cpu_fp64") {
      continue;
    }
    if (message.text == k_more_backend_messages) {
      more = message.count;
    } else {
      ++kept;
    }
    unread = unread || message.text.find("bytes of stderr before these not read") != std::string::npos;
  }
  EXPECT_EQ(kept, k_backend_messages_per_backend);
  EXPECT_GT(more, 0);
  EXPECT_TRUE(unread) << "the first of the flood's ~1.3 MiB were not read, and a line says so";
}

}  // namespace
}  // namespace driftgate

#include "runner/runner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "runner/backend.h"
#include "runner/tier2_explain.h"
#include "test_models.h"

namespace driftgate {
namespace {

using testing::backend;
using testing::backend_with_dtype;
using testing::random_input;

Experiment make_experiment(const std::string& dir, const std::string& name, const std::string& model) {
  return testing::make_experiment(dir, name, model, 2);
}

RunFile run(const std::vector<Experiment>& experiments, std::ostream& log) {
  Environment environment;
  environment.keyed["threads"] = "1";
  // In process: these tests cover the comparison logic and the aliasing check;
  // runner_isolation_test covers forked children.
  RunnerOptions options;
  options.isolate = false;
  return run_experiments(experiments, testing::k_test_commit, environment, options, log);
}

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

TEST(Runner, TwoInputsThreeTargetsTwoOutputsMakeTwelveChecks) {
  std::string dir = testing::fresh_dir("runner_twelve");
  Experiment experiment = make_experiment(dir, "convbn", testing::save_conv_bn_model(dir));
  experiment.inputs = {random_input("a", {1, 3, 6, 6}, 1), random_input("b", {1, 3, 6, 6}, 2)};
  BackendSpec onednn_off = backend("onednn_off");
  onednn_off.onednn = false;
  BackendSpec channels_last = backend("channels_last");
  channels_last.memory_format = MemoryFormat::k_channels_last;
  BackendSpec frozen = backend("frozen");
  frozen.graph = GraphMode::k_frozen;
  experiment.targets = {onednn_off, channels_last, frozen};

  std::ostringstream log;
  RunFile result = run({experiment}, log);
  ASSERT_EQ(result.checks.size(), 12u);
  EXPECT_EQ(result.summary.expected_checks, 12);
  EXPECT_EQ(result.summary.checks, 12);
  EXPECT_EQ(result.summary.by_status.at("pass"), 12);
  EXPECT_EQ(count_lines(log.str()), 6) << log.str();
  // Order: input, then target in config order, then output path.
  EXPECT_EQ(result.checks[0].id, make_check_id("convbn", "a", "cpu_fp32", "onednn_off", "out[0]"));
  EXPECT_EQ(result.checks[1].id, make_check_id("convbn", "a", "cpu_fp32", "onednn_off", "out[1]"));
  EXPECT_EQ(result.checks[2].target, "channels_last");
  EXPECT_EQ(result.checks[6].input, "b");
  EXPECT_EQ(result.checks[11].id, make_check_id("convbn", "b", "cpu_fp32", "frozen", "out[1]"));
  const CheckRecord& channels_last_check = result.checks[2];
  ASSERT_TRUE(channels_last_check.observed_target && channels_last_check.stats);
  EXPECT_EQ(channels_last_check.observed_target->memory_format, "channels_last");
  EXPECT_EQ(channels_last_check.observed_reference->memory_format, "contiguous");
  EXPECT_TRUE(channels_last_check.stats->reference_repeat_max_abs);
  EXPECT_EQ(*channels_last_check.stats->target_repeat_max_abs, 0.0);
  EXPECT_GT(channels_last_check.target_ms, 0.0);
  const ExperimentHeader& header = result.header.experiments.at(0);
  EXPECT_EQ(header.model_hash.size(), 40u);
  EXPECT_EQ(header.targets, (std::vector<std::string>{"onednn_off", "channels_last", "frozen"}));
  EXPECT_EQ(result.header.commit.sha, testing::k_test_commit.sha);

  // The file round-trips through the record format's own parser.
  std::stringstream text;
  write_run(text, result);
  EXPECT_EQ(parse_run(text, "run.jsonl").checks.size(), 12u);
}

TEST(Runner, CrashesAndUnavailableBackendsBecomeRecords) {
  std::string dir = testing::fresh_dir("runner_crash");
  Experiment experiment = make_experiment(dir, "raising", testing::save_raising_model(dir));
  // Input "two" has a batch of 2, which the model (reference included) refuses.
  experiment.inputs = {random_input("one", {1, 3}, 1), random_input("two", {2, 3}, 2)};
  BackendSpec cuda = backend("cuda_fp32");
  cuda.device = Device::k_cuda;
  experiment.targets = {backend_with_dtype("cpu_fp64", DType::k_float64), backend("plain"), cuda,
                        backend_with_dtype("cpu_fp16", DType::k_float16)};

  std::ostringstream log;
  RunFile result = run({experiment}, log);
  ASSERT_EQ(result.checks.size(), 8u);
  EXPECT_EQ(result.summary.expected_checks, 8);
  const auto& checks = result.checks;
  EXPECT_EQ(checks[0].status, CheckStatus::k_crash_target);
  EXPECT_NE(checks[0].message.find("forward of '" + experiment.model_path + "' failed"), std::string::npos);
  EXPECT_NE(checks[0].message.find("float64 is not supported"), std::string::npos) << checks[0].message;
  EXPECT_EQ(checks[1].status, CheckStatus::k_pass);
  EXPECT_EQ(checks[2].status, CheckStatus::k_skipped);
  EXPECT_NE(checks[2].message.find("no CUDA"), std::string::npos) << checks[2].message;
  EXPECT_EQ(checks[3].status, CheckStatus::k_skipped);
  EXPECT_NE(checks[3].message.find("float16"), std::string::npos) << checks[3].message;
  for (size_t i = 4; i < 8; ++i) {
    EXPECT_EQ(checks[i].status, CheckStatus::k_crash_ref) << checks[i].id;
    EXPECT_EQ(checks[i].output, "out");  // the reference's leaves from input "one"
    EXPECT_NE(checks[i].message.find("batch of 2 is not supported"), std::string::npos) << checks[i].message;
  }
  EXPECT_EQ(count_lines(log.str()), 8) << log.str();
}

// A model file LibTorch cannot load is the config's problem, not the reference's:
// the run stops (cmd_run: exit 2, no run file) instead of writing crash_ref checks.
TEST(Runner, ModelThatCannotLoadStopsTheRun) {
  std::string dir = testing::fresh_dir("runner_broken");
  Experiment experiment = make_experiment(dir, "broken", testing::save_broken_model(dir));
  experiment.inputs = {random_input("one", {1, 3}, 1), random_input("two", {1, 3}, 2)};
  experiment.targets = {backend("plain"), backend("other")};
  for (bool isolate : {false, true}) {
    std::ostringstream log;
    RunnerOptions options;
    options.isolate = isolate;
    try {
      run_experiments({experiment}, testing::k_test_commit, Environment{}, options, log);
      FAIL() << "a model LibTorch cannot load gave a run (isolate " << isolate << ")";
    } catch (const ModelFileError& e) {
      const std::string message = e.what();
      EXPECT_EQ(
          message.rfind(
              experiment.config_path + ": model '" + experiment.model_path + "' cannot be loaded by LibTorch ", 0),
          0u)
          << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << "summarised, not pasted: " << message;
    }
    EXPECT_EQ(log.str(), "");
  }
}

TEST(Runner, ForwardWithTwoInputsStopsTheRun) {
  std::string dir = testing::fresh_dir("runner_two_inputs");
  Experiment experiment = make_experiment(dir, "two", testing::save_hostile_model(dir, "two_inputs"));
  experiment.inputs = {random_input("one", {1, 3}, 1)};
  experiment.targets = {backend("plain")};
  std::ostringstream log;
  try {
    run({experiment}, log);
    FAIL() << "a forward of two inputs was run";
  } catch (const ModelFileError& e) {
    EXPECT_NE(std::string(e.what()).find("forward takes 2 required inputs (x, y)"), std::string::npos) << e.what();
  }
}

// Issue 24's model behaviours, in process and isolated (one child runs every backend
// in turn, so an input changed in place would reach the next backend there too).
TEST(Runner, ModelBehaviourIsNotBlamedOnTheTarget) {
  std::string dir = testing::fresh_dir("runner_hostile");
  struct Case {
    std::string kind;
    CheckStatus expected;
  };
  for (const Case& c :
       {Case{"in_place", CheckStatus::k_pass}, Case{"all_nan", CheckStatus::k_nonfinite_output},
        Case{"random", CheckStatus::k_ref_nondeterministic}, Case{"growing", CheckStatus::k_ref_nondeterministic}}) {
    Experiment experiment = make_experiment(dir, c.kind, testing::save_hostile_model(dir, c.kind));
    // Five columns: "growing" slices 1, 2 (then 3, the one timed forward) on the first
    // input and 4, 5 on the second.
    experiment.latency_warmup = 0;
    experiment.latency_runs = 1;
    experiment.inputs = {random_input("one", {1, 5}, 1), random_input("two", {2, 5}, 2)};
    experiment.targets = {backend("plain"), backend("other")};
    for (bool isolate : {false, true}) {
      std::ostringstream log;
      RunnerOptions options;
      options.isolate = isolate;
      RunFile result = run_experiments({experiment}, testing::k_test_commit, Environment{}, options, log);
      ASSERT_EQ(result.checks.size(), 4u) << c.kind;
      for (const auto& check : result.checks) {
        EXPECT_EQ(check.status, c.expected)
            << c.kind << " isolate " << isolate << ": " << check.id << ": " << check.message;
        EXPECT_EQ(is_failure(check.status), c.expected != CheckStatus::k_pass) << c.kind;
      }
    }
  }
}

TEST(Runner, MissingModelOrBadInputIsAUserErrorBeforeAnythingRuns) {
  std::string dir = testing::fresh_dir("runner_missing");
  Experiment experiment = make_experiment(dir, "missing", dir + "/nope.pt");
  experiment.inputs = {random_input("one", {1, 3}, 1)};
  experiment.targets = {backend("plain")};
  std::ostringstream log;
  try {
    run({experiment}, log);
    FAIL() << "a missing model was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(experiment.config_path + ": ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("nope.pt"), std::string::npos) << e.what();
  }
  experiment.model_path = testing::save_raising_model(dir);
  experiment.inputs[0].args[0].tensor.random.shape = {};
  try {
    run({experiment}, log);
    FAIL() << "an empty random shape was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(experiment.config_path + ": input 'one': ", 0), 0u) << e.what();
  }
  EXPECT_EQ(log.str(), "");
}

TEST(Runner, ShardsSliceExperimentInputPairsDeterministically) {
  std::string dir = testing::fresh_dir("runner_shard");
  Experiment first = make_experiment(dir, "first", testing::save_conv_bn_model(dir));
  first.inputs = {random_input("a", {1, 3, 4, 4}, 1), random_input("b", {1, 3, 4, 4}, 2),
                  random_input("c", {1, 3, 4, 4}, 3)};
  first.targets = {backend("plain")};
  Experiment second = first;
  second.name = "second";
  second.inputs = {random_input("d", {1, 3, 4, 4}, 4), random_input("e", {1, 3, 4, 4}, 5)};
  auto names = [](const std::vector<Experiment>& slice) {
    std::vector<std::string> result;
    for (const auto& experiment : slice) {
      for (const auto& input : experiment.inputs) {
        result.push_back(experiment.name + "/" + input.name);
      }
    }
    return result;
  };
  EXPECT_EQ(names(shard_slice({first, second}, ShardInfo{0, 2})),
            (std::vector<std::string>{"first/a", "first/c", "second/e"}));
  EXPECT_EQ(names(shard_slice({first, second}, ShardInfo{1, 2})), (std::vector<std::string>{"first/b", "second/d"}));
  EXPECT_EQ(names(shard_slice({first, second}, ShardInfo{0, 1})).size(), 5u);

  Environment environment;
  environment.keyed["threads"] = "1";
  RunnerOptions options;
  options.isolate = false;
  options.shard = ShardInfo{1, 2};
  std::ostringstream log;
  RunFile result = run_experiments({first, second}, testing::k_test_commit, environment, options, log);
  EXPECT_EQ(result.header.shard.index, 1);
  EXPECT_EQ(result.header.shard.count, 2);
  ASSERT_EQ(result.header.experiments.size(), 2u);
  // The header describes the whole suite, as merge requires of every shard.
  EXPECT_EQ(result.header.experiments[0].inputs, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(result.header.experiments[1].inputs, (std::vector<std::string>{"d", "e"}));
  ASSERT_EQ(result.checks.size(), 4u);  // the slice: 2 inputs x 1 target x 2 outputs
  EXPECT_EQ(result.checks[0].id, make_check_id("first", "b", "cpu_fp32", "plain", "out[0]"));
  EXPECT_EQ(result.checks[2].id, make_check_id("second", "d", "cpu_fp32", "plain", "out[0]"));
  EXPECT_EQ(result.summary.checks, 4);
  EXPECT_EQ(result.summary.expected_checks, 10);  // 5 inputs x 1 target x 2 outputs
  std::stringstream text;
  write_run(text, result);
  EXPECT_NE(text.str().find("\"shard\":{\"index\":1,\"count\":2}"), std::string::npos);
  EXPECT_EQ(parse_run(text, "shard.jsonl").checks.size(), 4u);
  options.shard = ShardInfo{2, 2};
  EXPECT_THROW(run_experiments({first}, testing::k_test_commit, environment, options, log), Error);
}

TEST(Runner, DictOutputsAreComparedPerKey) {
  std::string dir = testing::fresh_dir("runner_dict");
  Experiment experiment = make_experiment(dir, "dict", testing::save_dict_model(dir));
  experiment.inputs = {random_input("one", {1, 3, 2, 2}, 1)};
  experiment.targets = {backend_with_dtype("cpu_bf16", DType::k_bfloat16)};
  experiment.tolerance = Tolerance{1e-7, 1e-7};
  std::ostringstream log;
  RunFile result = run({experiment}, log);
  ASSERT_EQ(result.checks.size(), 2u);
  EXPECT_EQ(result.checks[0].output, "out['boxes']");
  EXPECT_EQ(result.checks[1].output, "out['scores']");
  // bfloat16 rounding is far beyond 1e-7: the dict's leaves are really compared.
  EXPECT_EQ(result.checks[1].status, CheckStatus::k_fail_numeric);
  EXPECT_EQ(result.checks[1].observed_target->dtype, "bfloat16");
}

}  // namespace
}  // namespace driftgate

namespace driftgate {
namespace {

// An input with `args:` on a forward(x, y) model: bound by name, in process and isolated;
// the header lists the arguments; --mitigate and a misspelt name stop the run before any
// forward.
TEST(Runner, NamedArgumentsRunInProcessAndIsolated) {
  std::string dir = testing::fresh_dir("runner_named");
  Experiment experiment = make_experiment(dir, "two", testing::save_hostile_model(dir, "two_inputs"));
  InputSpec input;
  input.name = "named";
  input.named = true;
  InputArgument y;
  y.name = "y";
  y.tensor.kind = TensorSource::Kind::k_random_int;
  y.tensor.random_int = RandomIntInput{{1, 3}, 0, 5, 1, ElementType::k_int64};
  InputArgument x = random_input("", {1, 3}, 2).args[0];
  x.name = "x";
  input.args = {y, x};  // the config's order; forward's is (x, y)
  experiment.inputs = {input};
  experiment.latency_warmup = 0;
  experiment.latency_runs = 1;
  BackendSpec fp64 = backend_with_dtype("cpu_fp64", DType::k_float64);
  experiment.targets = {backend("plain"), fp64};
  for (bool isolate : {false, true}) {
    std::ostringstream log;
    RunnerOptions options;
    options.isolate = isolate;
    RunFile result = run_experiments({experiment}, testing::k_test_commit, Environment{}, options, log);
    ASSERT_EQ(result.checks.size(), 2u);
    EXPECT_EQ(result.checks[0].id, make_check_id("two", "named", "cpu_fp32", "plain", "out"));
    EXPECT_EQ(result.checks[0].status, CheckStatus::k_pass) << result.checks[0].message;
    EXPECT_EQ(result.checks[1].status, CheckStatus::k_pass) << result.checks[1].message;
    ASSERT_EQ(result.header.experiments[0].input_args.size(), 1u);
    const std::vector<InputArgumentRecord>& listed = result.header.experiments[0].input_args[0].args;
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[0].name, "y");
    EXPECT_EQ(listed[0].dtype, "int64");
    EXPECT_EQ(listed[0].source, "random_int(0, 5, seed 1)");
    EXPECT_EQ(listed[1].shape, (std::vector<int64_t>{1, 3}));
  }
  std::ostringstream log;
  RunnerOptions mitigate;
  mitigate.isolate = false;
  mitigate.mitigate = true;
  try {
    run_experiments({experiment}, testing::k_test_commit, Environment{}, mitigate, log);
    FAIL() << "--mitigate ran an input with args";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'named' names forward's arguments under 'args', and --mitigate"),
              std::string::npos)
        << e.what();
  }
  try {
    explain_check(experiment, "named", "plain", ExplainOptions{});
    FAIL() << "explain ran an input with args";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), experiment.config_path +
                                         ": input 'named' names forward's arguments under 'args', and explain "
                                         "captures forwards of one float32 tensor in this version; explain an input "
                                         "of one float32 tensor, or read the check's tier-1 record");
  }
  experiment.inputs[0].args[0].name = "z";
  try {
    run({experiment}, log);
    FAIL() << "an argument forward lacks was run";
  } catch (const ModelFileError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'named': forward has no argument 'z'; did you mean 'x'? [schema: "
                                         "forward(Tensor x, Tensor y) -> Tensor]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(log.str(), "");
}

}  // namespace
}  // namespace driftgate

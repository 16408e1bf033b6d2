// The --mitigate search (runner/mitigation.h) against a fake VariantRunner: records
// built here by hand, with pass/fail and latencies per variant chosen by each test, so
// the ranking and the layer search are checked against facts the test sets, not against
// timings of real forwards.
#include "runner/mitigation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace driftgate {
namespace {

constexpr double k_target_ms = 4.0;
constexpr double k_reference_ms = 10.0;

BackendSpec spec(const std::string& name, DType dtype) {
  BackendSpec backend;
  backend.name = name;
  backend.dtype = dtype;
  return backend;
}

// An experiment with two inputs, reference cpu_fp32 and the one target given.
Experiment experiment_with(const BackendSpec& target, bool task) {
  Experiment experiment;
  experiment.name = "exp";
  experiment.reference = spec("cpu_fp32", DType::k_float32);
  experiment.targets = {target};
  for (const char* name : {"a", "b"}) {
    InputSpec input;
    input.name = name;
    experiment.inputs.push_back(input);
  }
  if (task) {
    TaskSpec spec_task;
    spec_task.kind = TaskKind::k_classification;
    spec_task.outputs = {"out"};
    experiment.task = spec_task;
  }
  return experiment;
}

CheckRecord record(const std::string& input, const std::string& target, const std::string& output, bool pass,
                   double target_ms) {
  CheckRecord check;
  check.experiment = "exp";
  check.input = input;
  check.reference = "cpu_fp32";
  check.target = target;
  check.output = output;
  check.status =
      pass ? CheckStatus::k_pass : (output == "out" ? CheckStatus::k_fail_numeric : CheckStatus::k_fail_task);
  check.reference_ms = k_reference_ms;
  check.target_ms = target_ms;
  check.target_iqr_ms = 0.25;
  return check;
}

// What a variant does in the fake: tier 1 passes, the task passes, its latency.
struct Behaviour {
  bool tier1 = false;
  bool task = false;
  double ms = 1.0;
};

// A VariantRunner whose verdicts and latencies come from `behave` (given the variant's
// spec); it keeps every experiment it was asked to run.
struct FakeRunner {
  std::function<Behaviour(const BackendSpec&)> behave;
  std::vector<Experiment> runs;

  VariantRunner runner() {
    return [this](const Experiment& variant) {
      runs.push_back(variant);
      std::vector<CheckRecord> records;
      for (const InputSpec& input : variant.inputs) {
        for (const BackendSpec& target : variant.targets) {
          const Behaviour behaviour = behave(target);
          // Per input: the same latency on "a", twice it on "b" would average to 1.5x;
          // the same on both keeps the test's arithmetic plain.
          records.push_back(record(input.name, target.name, "out", behaviour.tier1, behaviour.ms));
          if (variant.task) {
            records.push_back(record(input.name, target.name, "task:classification", behaviour.task, behaviour.ms));
          }
        }
      }
      return records;
    };
  }

  size_t targets_run() const {
    size_t count = 0;
    for (const Experiment& run : runs) {
      count += run.targets.size();
    }
    return count;
  }
};

// The failing target's records on both inputs (tier 1 fails; the task too when `task`).
std::vector<CheckRecord> failing_records(const std::string& target, bool task) {
  std::vector<CheckRecord> records;
  for (const char* input : {"a", "b"}) {
    records.push_back(record(input, target, "out", false, k_target_ms));
    if (task) {
      records.push_back(record(input, target, "task:classification", false, k_target_ms));
    }
  }
  return records;
}

bool has(const BackendSpec& variant, const std::string& part) {
  const std::string& name = variant.name;
  const std::string needle = "+" + part;
  for (size_t at = name.find(needle); at != std::string::npos; at = name.find(needle, at + 1)) {
    const size_t end = at + needle.size();
    if (end == name.size() || name[end] == '+') {
      return true;
    }
  }
  return false;
}

// The search on the fake; its figures are the search runs' own (measure_together off), except
// where a test turns the final side-by-side measurement on.
Mitigation mitigate(const Experiment& experiment, std::vector<CheckRecord>& records, FakeRunner& fake,
                    const MitigationOptions& given, std::string* log_text = nullptr, bool measure_together = false) {
  MitigationOptions options = given;
  options.measure_together = measure_together;
  std::ostringstream log;
  mitigate_failures(experiment, records, fake.runner(), options, log);
  if (log_text) {
    *log_text = log.str();
  }
  EXPECT_TRUE(records.front().mitigation.has_value());
  for (const CheckRecord& check : records) {
    EXPECT_TRUE(check.mitigation.has_value()) << check.output;  // every failing check carries it
  }
  return records.front().mitigation.value_or(Mitigation{});
}

TEST(Mitigation, ReferenceEquivalentSetRanksLastEvenWhenCheapest) {
  const BackendSpec target = spec("cpu_bf16", DType::k_bfloat16);
  const Experiment experiment = experiment_with(target, false);
  std::vector<CheckRecord> records = failing_records("cpu_bf16", false);
  FakeRunner fake;
  // fp32 alone is the reference again and the cheapest; fp32 + onednn_off restores too, slower.
  fake.behave = [](const BackendSpec& variant) {
    if (variant.name == "cpu_bf16+fp32") {
      return Behaviour{true, true, 2.0};
    }
    if (variant.name == "cpu_bf16+fp32+onednn_off") {
      return Behaviour{true, true, 9.0};
    }
    return Behaviour{false, false, 3.0};
  };
  const Mitigation mitigation = mitigate(experiment, records, fake, MitigationOptions{});
  // One run with all three sets of {fp32, onednn_off} as targets, on the failing inputs.
  ASSERT_EQ(fake.runs.size(), 1U);
  std::vector<std::string> names;
  for (const BackendSpec& variant : fake.runs[0].targets) {
    names.push_back(variant.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cpu_bf16+fp32", "cpu_bf16+onednn_off", "cpu_bf16+fp32+onednn_off"}));
  EXPECT_EQ(mitigation.tried, 3);
  ASSERT_EQ(mitigation.choices.size(), 1U);
  EXPECT_EQ(mitigation.choices[0].fallbacks, (std::vector<std::string>{"fp32", "onednn_off"}));
  EXPECT_EQ(mitigation.choices[0].restores, "tier1");
  EXPECT_FALSE(mitigation.choices[0].reference_equivalent);
  EXPECT_EQ(mitigation.choices[0].latency_ms, 9.0);
  EXPECT_EQ(mitigation.choices[0].latency_iqr_ms, 0.25);
  EXPECT_EQ(mitigation.target_ms, k_target_ms);
  EXPECT_EQ(mitigation.reference_ms, k_reference_ms);

  // When the reference again is all that restores, it is the choice, marked.
  fake.behave = [](const BackendSpec& variant) {
    return Behaviour{variant.name == "cpu_bf16+fp32", variant.name == "cpu_bf16+fp32", 10.0};
  };
  std::vector<CheckRecord> again = failing_records("cpu_bf16", false);
  std::string log;
  const Mitigation only = mitigate(experiment, again, fake, MitigationOptions{}, &log);
  ASSERT_EQ(only.choices.size(), 1U);
  EXPECT_EQ(only.choices[0].fallbacks, std::vector<std::string>{"fp32"});
  EXPECT_TRUE(only.choices[0].reference_equivalent);
  // 10 ms against the target's 4 and the reference's 10.
  EXPECT_EQ(log,
            "[exp] mitigation: cpu_bf16 (4 ms, reference 10 ms per forward): tier-1 agreement: fp32 (= reference): "
            "10 ms (x2.50 target, x1.00 reference); tried 3 variants in 1 run\n");
}

// The reported latencies come from one more run with the failing target and the choice
// side by side: the fake's target runs at 40 ms there (not the 10 ms the failing records
// say) and the choice at 30 ms, the reference at 10 ms, so the ratios are x0.75 and x3.00.
TEST(Mitigation, ChoicesAreMeasuredBesideTheTargetInOneMoreRun) {
  const BackendSpec target = spec("cpu_bf16", DType::k_bfloat16);
  const Experiment experiment = experiment_with(target, false);
  std::vector<CheckRecord> records = failing_records("cpu_bf16", false);
  FakeRunner fake;
  fake.behave = [&](const BackendSpec& variant) {
    if (variant.name == "cpu_bf16") {
      return Behaviour{false, false, 40.0};
    }
    if (variant.name == "cpu_bf16+fp32+onednn_off") {
      return Behaviour{true, true, fake.runs.size() == 2 ? 30.0 : 3.0};
    }
    return Behaviour{false, false, 1.0};
  };
  const Mitigation mitigation = mitigate(experiment, records, fake, MitigationOptions{}, nullptr, true);
  ASSERT_EQ(fake.runs.size(), 2U);
  ASSERT_EQ(fake.runs[1].targets.size(), 2U);
  EXPECT_EQ(fake.runs[1].targets[0].name, "cpu_bf16");
  EXPECT_EQ(fake.runs[1].targets[1].name, "cpu_bf16+fp32+onednn_off");
  EXPECT_EQ(mitigation.tried, static_cast<int64_t>(fake.runs[0].targets.size()));  // the measurement tries nothing
  ASSERT_EQ(mitigation.choices.size(), 1U);
  EXPECT_DOUBLE_EQ(mitigation.target_ms, 40.0);
  EXPECT_DOUBLE_EQ(mitigation.reference_ms, k_reference_ms);
  EXPECT_DOUBLE_EQ(mitigation.choices[0].latency_ms, 30.0);
  EXPECT_NE(mitigation.message.find("30 ms (x0.75 target, x3.00 reference)"), std::string::npos) << mitigation.message;
}

TEST(Mitigation, EverySetSizeIsTriedAndTheCheapestWins) {
  // bf16, channels-last, frozen: fp32, onednn_off, contiguous, eager apply: 4 + 6 + 4 sets.
  BackendSpec target = spec("t", DType::k_bfloat16);
  target.memory_format = MemoryFormat::k_channels_last;
  target.graph = GraphMode::k_frozen;
  const Experiment experiment = experiment_with(target, false);
  std::vector<CheckRecord> records = failing_records("t", false);
  FakeRunner fake;
  // fp32 restores alone (7 ms); onednn_off + contiguous + eager restores at 3 ms; any set
  // with fp32 restores, slower with each member.
  fake.behave = [](const BackendSpec& variant) {
    if (variant.name == "t+onednn_off+contiguous+eager") {
      return Behaviour{true, true, 3.0};
    }
    if (has(variant, "fp32")) {
      return Behaviour{true, true,
                       7.0 + static_cast<double>(std::count(variant.name.begin(), variant.name.end(), '+'))};
    }
    return Behaviour{false, false, 1.0};
  };
  const Mitigation mitigation = mitigate(experiment, records, fake, MitigationOptions{});
  ASSERT_EQ(fake.runs.size(), 1U);
  EXPECT_EQ(fake.runs[0].targets.size(), 14U);
  EXPECT_EQ(mitigation.tried, 14);
  ASSERT_EQ(mitigation.choices.size(), 1U);
  EXPECT_EQ(mitigation.choices[0].fallbacks, (std::vector<std::string>{"onednn_off", "contiguous", "eager"}));
  EXPECT_EQ(mitigation.choices[0].backend, "t+onednn_off+contiguous+eager");
  EXPECT_EQ(mitigation.choices[0].latency_ms, 3.0);
  // Only fp32 + contiguous + eager is the reference again (oneDNN on, contiguous, eager, float32).
  EXPECT_TRUE(reference_equivalent(
      apply_fallbacks(target, {Fallback::k_fp32, Fallback::k_contiguous, Fallback::k_eager}), experiment.reference, 1));
  EXPECT_FALSE(reference_equivalent(apply_fallbacks(target, {Fallback::k_fp32, Fallback::k_contiguous}),
                                    experiment.reference, 1));
}

TEST(Mitigation, TaskAndTier1ChoicesAreListedApartOnlyWhenTheyDiffer) {
  const BackendSpec target = spec("cpu_bf16", DType::k_bfloat16);
  const Experiment experiment = experiment_with(target, true);
  FakeRunner fake;
  // onednn_off restores the task only, at 5 ms; fp32 + onednn_off restores everything at 8 ms.
  fake.behave = [](const BackendSpec& variant) {
    if (variant.name == "cpu_bf16+onednn_off") {
      return Behaviour{false, true, 5.0};
    }
    if (variant.name == "cpu_bf16+fp32+onednn_off") {
      return Behaviour{true, true, 8.0};
    }
    return Behaviour{false, false, 1.0};
  };
  std::vector<CheckRecord> records = failing_records("cpu_bf16", true);
  const Mitigation both = mitigate(experiment, records, fake, MitigationOptions{});
  ASSERT_EQ(both.choices.size(), 2U);
  EXPECT_EQ(both.choices[0].restores, "tier1");
  EXPECT_EQ(both.choices[0].backend, "cpu_bf16+fp32+onednn_off");
  EXPECT_EQ(both.choices[1].restores, "tier3");
  EXPECT_EQ(both.choices[1].backend, "cpu_bf16+onednn_off");
  EXPECT_EQ(both.choices[1].latency_ms, 5.0);
  EXPECT_NE(both.message.find("; task agreement: onednn_off: 5 ms (x1.25 target, x0.50 reference)"), std::string::npos)
      << both.message;

  // The task-only set slower than the full one: the tier-1 choice is also the task's, listed once.
  fake.behave = [](const BackendSpec& variant) {
    if (variant.name == "cpu_bf16+onednn_off") {
      return Behaviour{false, true, 9.0};
    }
    if (variant.name == "cpu_bf16+fp32+onednn_off") {
      return Behaviour{true, true, 8.0};
    }
    return Behaviour{false, false, 1.0};
  };
  std::vector<CheckRecord> again = failing_records("cpu_bf16", true);
  const Mitigation one = mitigate(experiment, again, fake, MitigationOptions{});
  ASSERT_EQ(one.choices.size(), 1U);
  EXPECT_EQ(one.choices[0].backend, "cpu_bf16+fp32+onednn_off");
  EXPECT_NE(one.message.find("tier-1 and task agreement: fp32 + onednn_off: 8 ms"), std::string::npos) << one.message;
}

std::vector<std::string> layer_names(size_t count) {
  std::vector<std::string> layers;
  for (size_t i = 0; i < count; ++i) {
    layers.push_back("layer." + std::to_string(i));
  }
  return layers;
}

bool includes(const std::vector<std::string>& set, const std::vector<std::string>& needed) {
  return std::all_of(needed.begin(), needed.end(),
                     [&](const std::string& name) { return std::find(set.begin(), set.end(), name) != set.end(); });
}

// A fake where the float32 modules in `needed` restore the task; fallback sets never do.
// Each module in float32 costs 0.5 ms over the target's 4 ms.
FakeRunner selective_fake(const std::vector<std::string>& needed) {
  FakeRunner fake;
  fake.behave = [needed](const BackendSpec& variant) {
    const bool restores = !variant.float32_modules.empty() && includes(variant.float32_modules, needed);
    return Behaviour{false, restores, k_target_ms + 0.5 * static_cast<double>(variant.float32_modules.size())};
  };
  return fake;
}

bool valid_backend_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '+';
  });
}

TEST(Mitigation, LayerSearchFindsExactlyTheLayersNeeded) {
  const BackendSpec target = spec("cpu_bf16", DType::k_bfloat16);
  const Experiment experiment = experiment_with(target, true);
  std::vector<CheckRecord> records = failing_records("cpu_bf16", true);
  FakeRunner fake = selective_fake({"layer.7", "layer.9"});
  MitigationOptions options;
  int listed = 0;
  options.list_layers = [&](const Experiment& listed_experiment, const BackendSpec& listed_target) {
    ++listed;
    EXPECT_EQ(listed_experiment.name, "exp");
    EXPECT_EQ(listed_target.name, "cpu_bf16");
    return layer_names(20);
  };
  const Mitigation mitigation = mitigate(experiment, records, fake, options);
  EXPECT_EQ(listed, 1);
  ASSERT_EQ(mitigation.choices.size(), 1U);  // no fallback set restores
  const MitigationChoice& choice = mitigation.choices[0];
  EXPECT_EQ(choice.float32_modules, (std::vector<std::string>{"layer.7", "layer.9"}));
  EXPECT_EQ(choice.restores, "tier3");
  EXPECT_TRUE(choice.fallbacks.empty());
  EXPECT_FALSE(choice.reference_equivalent);
  EXPECT_EQ(choice.latency_ms, 5.0);
  EXPECT_LE(fake.runs.size(), 24U);
  EXPECT_EQ(mitigation.tried, static_cast<int64_t>(fake.targets_run()));
  // The run that found it had it as a target, by that name.
  bool seen = false;
  for (const Experiment& run : fake.runs) {
    EXPECT_EQ(run.inputs.size(), 2U);
    for (const BackendSpec& variant : run.targets) {
      EXPECT_TRUE(valid_backend_name(variant.name)) << variant.name;
      if (!variant.float32_modules.empty()) {
        EXPECT_EQ(variant.dtype, DType::k_bfloat16);  // the selective variants stay in the target's dtype
      }
      seen = seen || (variant.name == choice.backend && variant.float32_modules == choice.float32_modules);
    }
  }
  EXPECT_TRUE(seen) << choice.backend;
  // The bisection ran a prefix and a suffix as two targets of one run.
  bool both_ends = false;
  for (const Experiment& run : fake.runs) {
    if (run.targets.size() == 2 && run.targets[0].float32_modules.front() == "layer.0" &&
        run.targets[1].float32_modules.back() == "layer.19" && run.targets[0].float32_modules.size() < 20) {
      both_ends = true;
    }
  }
  EXPECT_TRUE(both_ends);
  // 4 ms / 5 ms: 80% of the target's speed.
  EXPECT_NE(mitigation.message.find("selective, task agreement: 2 submodules in float32 (layer.7, layer.9): 5 ms "
                                    "(x1.25 target, x0.50 reference; keeps 80% of the target's speed)"),
            std::string::npos)
      << mitigation.message;
}

TEST(Mitigation, LayerSearchStartsFromTheFirstDivergentLayer) {
  const BackendSpec target = spec("cpu_fp16", DType::k_float16);
  const Experiment experiment = experiment_with(target, false);
  std::vector<CheckRecord> records = failing_records("cpu_fp16", false);
  Localization localization;
  localization.first_divergent = "layer.7.block.0/aten::hardswish_#1";  // inside the eligible module layer.7
  records[0].localization = localization;
  FakeRunner fake;
  fake.behave = [](const BackendSpec& variant) {
    const bool restores = includes(variant.float32_modules, {"layer.7"});
    return Behaviour{restores, restores, 4.5};
  };
  MitigationOptions options;
  options.list_layers = [](const Experiment&, const BackendSpec&) { return layer_names(12); };
  const Mitigation mitigation = mitigate(experiment, records, fake, options);
  // The fallback sets' run, then the seed beside all modules: it restores, nothing to shrink.
  ASSERT_EQ(fake.runs.size(), 2U);
  ASSERT_EQ(fake.runs[1].targets.size(), 2U);
  EXPECT_EQ(fake.runs[1].targets[0].float32_modules, std::vector<std::string>{"layer.7"});
  EXPECT_EQ(fake.runs[1].targets[1].float32_modules, layer_names(12));
  ASSERT_EQ(mitigation.choices.size(), 1U);
  EXPECT_EQ(mitigation.choices[0].float32_modules, std::vector<std::string>{"layer.7"});
  EXPECT_EQ(mitigation.choices[0].restores, "tier1");  // no task check: tier-1 is the criterion
  EXPECT_EQ(mitigation.tried, 3 + 2);                  // fp32, onednn_off, both; seed, all
}

// Only every candidate in float32 restores: the choice is the reference again in all but name
// (only glue between the modules stays in bfloat16), marked so.
TEST(Mitigation, EveryModuleInFloat32IsMarkedAsTheReference) {
  const BackendSpec target = spec("cpu_bf16", DType::k_bfloat16);
  const Experiment experiment = experiment_with(target, true);
  std::vector<CheckRecord> records = failing_records("cpu_bf16", true);
  FakeRunner fake = selective_fake(layer_names(6));
  MitigationOptions options;
  options.list_layers = [](const Experiment&, const BackendSpec&) { return layer_names(6); };
  const Mitigation mitigation = mitigate(experiment, records, fake, options);
  ASSERT_EQ(mitigation.choices.size(), 1U);
  EXPECT_EQ(mitigation.choices[0].float32_modules, layer_names(6));
  EXPECT_TRUE(mitigation.choices[0].reference_equivalent);
  std::vector<CheckRecord> again = failing_records("cpu_bf16", true);
  FakeRunner fewer = selective_fake({"layer.2"});
  EXPECT_FALSE(mitigate(experiment, again, fewer, options).choices.at(0).reference_equivalent);
}

TEST(Mitigation, NoSelectiveChoiceWhenAllLayersInFloat32DoNotRestore) {
  const BackendSpec target = spec("cpu_bf16", DType::k_bfloat16);
  const Experiment experiment = experiment_with(target, false);
  std::vector<CheckRecord> records = failing_records("cpu_bf16", false);
  FakeRunner fake;
  fake.behave = [](const BackendSpec&) { return Behaviour{false, false, 1.0}; };
  MitigationOptions options;
  options.list_layers = [](const Experiment&, const BackendSpec&) { return layer_names(9); };
  const Mitigation mitigation = mitigate(experiment, records, fake, options);
  EXPECT_TRUE(mitigation.choices.empty());
  EXPECT_EQ(fake.runs.size(), 2U);  // fallback sets; all modules
  EXPECT_EQ(mitigation.message,
            "no fallback set or float32 submodule set restores agreement for cpu_bf16; tried 4 variants in 2 runs; "
            "all 9 submodules in float32 do not restore agreement");
  EXPECT_EQ(mitigation.selective_note, "all 9 submodules in float32 do not restore agreement");
}

TEST(Mitigation, AVariantTheRunnerRefusesEndsTheLayerSearchNotTheRun) {
  const BackendSpec target = spec("cpu_bf16", DType::k_bfloat16);
  const Experiment experiment = experiment_with(target, false);
  std::vector<CheckRecord> records = failing_records("cpu_bf16", false);
  FakeRunner fake;
  fake.behave = [](const BackendSpec& variant) {
    if (!variant.float32_modules.empty()) {
      throw Error("backend 'cpu_bf16+fp32_modules_1': float32_modules: the model has no module 'layer.0'");
    }
    return Behaviour{variant.name == "cpu_bf16+fp32+onednn_off", false, 6.0};
  };
  MitigationOptions options;
  options.list_layers = [](const Experiment&, const BackendSpec&) { return layer_names(3); };
  const Mitigation mitigation = mitigate(experiment, records, fake, options);
  ASSERT_EQ(mitigation.choices.size(), 1U);
  EXPECT_EQ(mitigation.choices[0].backend, "cpu_bf16+fp32+onednn_off");
  EXPECT_EQ(mitigation.selective_note,
            "the layer search stopped: backend 'cpu_bf16+fp32_modules_1': float32_modules: the model has no module "
            "'layer.0'");
  // A lister that cannot load the model: no selective search, said so.
  options.list_layers = [](const Experiment&, const BackendSpec&) -> std::vector<std::string> {
    throw Error("model file 'm.pt' is no TorchScript archive");
  };
  std::vector<CheckRecord> again = failing_records("cpu_bf16", false);
  EXPECT_EQ(mitigate(experiment, again, fake, options).selective_note,
            "cannot list the submodules: model file 'm.pt' is no TorchScript archive");
}

TEST(Mitigation, NoSelectiveSearchForAutocastOrFloat32Targets) {
  BackendSpec autocast = spec("cpu_bf16_autocast", DType::k_bfloat16);
  autocast.autocast = true;
  BackendSpec onednn = spec("channels_last", DType::k_float32);
  onednn.memory_format = MemoryFormat::k_channels_last;
  for (const BackendSpec& target : {autocast, onednn}) {
    const Experiment experiment = experiment_with(target, false);
    std::vector<CheckRecord> records = failing_records(target.name, false);
    FakeRunner fake;
    fake.behave = [](const BackendSpec&) { return Behaviour{false, false, 1.0}; };
    MitigationOptions options;
    options.list_layers = [](const Experiment&, const BackendSpec&) -> std::vector<std::string> {
      ADD_FAILURE() << "listed layers of a target that is not cast";
      return {};
    };
    mitigate(experiment, records, fake, options);
    EXPECT_EQ(fake.runs.size(), 1U) << target.name;
  }
}

TEST(Mitigation, TheRunBudgetBoundsTheSearchAndItsResultStillRestores) {
  const BackendSpec target = spec("cpu_bf16", DType::k_bfloat16);
  const Experiment experiment = experiment_with(target, true);
  const std::vector<std::string> needed{"layer.3", "layer.20", "layer.41"};
  for (int max_runs : {1, 2, 3, 5, 8}) {
    std::vector<CheckRecord> records = failing_records("cpu_bf16", true);
    FakeRunner fake = selective_fake(needed);
    MitigationOptions options;
    options.max_runs = max_runs;
    options.list_layers = [](const Experiment&, const BackendSpec&) { return layer_names(48); };
    const Mitigation mitigation = mitigate(experiment, records, fake, options);
    EXPECT_LE(fake.runs.size(), static_cast<size_t>(max_runs));
    EXPECT_EQ(mitigation.tried, static_cast<int64_t>(fake.targets_run()));
    if (max_runs < 2) {
      EXPECT_TRUE(mitigation.choices.empty());
      continue;
    }
    ASSERT_EQ(mitigation.choices.size(), 1U) << max_runs;
    EXPECT_TRUE(includes(mitigation.choices[0].float32_modules, needed)) << max_runs;
  }
}

// Brute force: the size of the smallest subset of `layers` for which `restores` holds.
size_t smallest_restoring(const std::vector<std::string>& layers,
                          const std::function<bool(const std::vector<std::string>&)>& restores) {
  size_t best = layers.size() + 1;
  for (uint32_t mask = 0; mask < (1U << layers.size()); ++mask) {
    std::vector<std::string> set;
    for (size_t i = 0; i < layers.size(); ++i) {
      if (mask & (1U << i)) {
        set.push_back(layers[i]);
      }
    }
    if (set.size() < best && restores(set)) {
      best = set.size();
    }
  }
  return best;
}

TEST(Mitigation, LayerSearchAgreesWithBruteForceOnMonotonePredicates) {
  std::mt19937 random(20261206);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + random() % 10;
    const std::vector<std::string> layers = layer_names(n);
    std::vector<std::string> needed;
    for (const std::string& layer : layers) {
      if (random() % 3 == 0) {
        needed.push_back(layer);
      }
    }
    if (needed.empty()) {
      needed.push_back(layers[random() % n]);
    }
    // "all of needed" or "at least t of needed": monotone, every minimal set of one size.
    const size_t at_least = trial % 2 == 0 ? needed.size() : 1 + random() % needed.size();
    const auto restores = [&](const std::vector<std::string>& set) {
      size_t hits = 0;
      for (const std::string& name : needed) {
        hits += std::find(set.begin(), set.end(), name) != set.end() ? 1 : 0;
      }
      return hits >= at_least;
    };
    std::vector<std::string> seed;
    if (trial % 3 == 0) {
      seed.push_back(layers[random() % n]);  // a seed that may or may not restore
    }
    const auto found = search_layers(layers, seed, restores, 1000);
    ASSERT_TRUE(found.has_value()) << trial;
    EXPECT_TRUE(restores(*found)) << trial;
    EXPECT_EQ(found->size(), smallest_restoring(layers, restores)) << "trial " << trial << ", n " << n;
    if (at_least == needed.size()) {
      EXPECT_EQ(*found, needed) << trial;
    }
  }
  // Nothing restores: nothing found.
  EXPECT_FALSE(search_layers(
      layer_names(5), {}, [](const std::vector<std::string>&) { return false; }, 1000));
}

TEST(Mitigation, ReferenceEquivalenceComparesEverythingThatChangesComputation) {
  const BackendSpec reference = spec("cpu_fp32", DType::k_float32);
  BackendSpec variant = reference;
  variant.name = "other_name";
  variant.description = "described otherwise";
  EXPECT_TRUE(reference_equivalent(variant, reference, 1));
  variant.threads = 1;  // what threads 0 means in a run with --threads 1
  EXPECT_TRUE(reference_equivalent(variant, reference, 1));
  EXPECT_FALSE(reference_equivalent(variant, reference, 4));
  const std::vector<std::function<void(BackendSpec&)>> changes{
      [](BackendSpec& b) { b.device = Device::k_cuda; },
      [](BackendSpec& b) { b.dtype = DType::k_bfloat16; },
      [](BackendSpec& b) { b.autocast = true; },
      [](BackendSpec& b) { b.memory_format = MemoryFormat::k_channels_last; },
      [](BackendSpec& b) { b.onednn = false; },
      [](BackendSpec& b) { b.threads = 2; },
      [](BackendSpec& b) { b.graph = GraphMode::k_frozen; },
      [](BackendSpec& b) { b.optimize_numerics = false; },
      [](BackendSpec& b) { b.tf32 = true; },
      [](BackendSpec& b) { b.float32_modules = {"classifier.3"}; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    BackendSpec changed = reference;
    changes[i](changed);
    EXPECT_FALSE(reference_equivalent(changed, reference, 1)) << "change " << i;
  }
  // stable_nms changes judging only: bf16 + fp32 + stable_nms is the reference again.
  EXPECT_TRUE(reference_equivalent(
      apply_fallbacks(spec("cpu_bf16", DType::k_bfloat16), {Fallback::k_fp32, Fallback::k_stable_nms}), reference, 1));
}

TEST(Mitigation, OnnxRuntimeTargetsFallBackToBasicOptimizationOrTheTorchScriptModel) {
  BackendSpec ort = spec("onnxruntime", DType::k_float32);
  ort.graph = GraphMode::k_onnxruntime;
  // LibTorch's oneDNN flag means nothing to ONNX Runtime: no onednn_off variant.
  EXPECT_EQ(applicable_fallbacks(ort, false), (std::vector<Fallback>{Fallback::k_eager, Fallback::k_ort_basic}));
  for (OnnxOptimization level : {OnnxOptimization::k_disable, OnnxOptimization::k_basic}) {
    ort.onnx_optimization = level;
    EXPECT_EQ(applicable_fallbacks(ort, false), std::vector<Fallback>{Fallback::k_eager}) << to_string(level);
  }
  ort.onnx_optimization = OnnxOptimization::k_extended;
  ort.onnx_provider = OnnxProvider::k_dnnl;
  const BackendSpec basic = apply_fallbacks(ort, {Fallback::k_ort_basic});
  EXPECT_EQ(basic.onnx_optimization, OnnxOptimization::k_basic);
  EXPECT_EQ(basic.onnx_provider, OnnxProvider::k_dnnl);
  EXPECT_EQ(basic.graph, GraphMode::k_onnxruntime);
  EXPECT_EQ(basic.name, "onnxruntime+ort_basic");
  // Two ONNX Runtime backends differ by provider or level; eager is the TorchScript model.
  EXPECT_FALSE(reference_equivalent(basic, ort, 1));
  BackendSpec other_provider = basic;
  other_provider.onnx_provider = OnnxProvider::k_cpu;
  EXPECT_FALSE(reference_equivalent(other_provider, basic, 1));
  EXPECT_TRUE(reference_equivalent(apply_fallbacks(ort, {Fallback::k_eager}), spec("cpu_fp32", DType::k_float32), 1));
  // eager with ort_basic would be eager again: that set is not tried.
  EXPECT_EQ(fallback_sets(applicable_fallbacks(ort, false), 3),
            (std::vector<std::vector<Fallback>>{{Fallback::k_eager}, {Fallback::k_ort_basic}}));
}

TEST(Mitigation, TerminalLinesShowEveryChoiceAgainstTargetAndReference) {
  Mitigation mitigation;
  mitigation.target_ms = 4.0;
  mitigation.reference_ms = 10.0;
  mitigation.tried = 17;
  mitigation.choices.push_back(MitigationChoice{"tier1", {"fp32"}, {}, "t+fp32", 10.0, 0.5, true});
  mitigation.choices.push_back(MitigationChoice{"tier3", {"onednn_off", "contiguous"}, {}, "t+x", 3.0, 0.5, false});
  mitigation.choices.push_back(MitigationChoice{
      "tier3", {}, {"m.0", "m.1", "m.2", "m.3", "m.4", "m.5", "m.6"}, "t+fp32_modules_9", 5.0, 0.5, false});
  EXPECT_EQ(mitigation_lines(mitigation, "t"),
            (std::vector<std::string>{
                "t: 4 ms per forward, reference 10 ms; tried 17 variants",
                "tier-1 agreement: fp32 (= reference): 10 ms (x2.50 target, x1.00 reference)",
                "task agreement: onednn_off + contiguous: 3 ms (x0.75 target, x0.30 reference)",
                "selective, task agreement: 7 submodules in float32 (m.0, m.1, m.2, m.3, m.4, m.5, ... 1 more): 5 ms "
                "(x1.25 target, x0.50 reference; keeps 80% of the target's speed)"}));
  // Why the selective search found nothing, after the choices.
  Mitigation noted = mitigation;
  noted.choices.resize(1);
  noted.selective_note = "all 9 submodules in float32 do not restore agreement";
  EXPECT_EQ(mitigation_lines(noted, "t").back(), "selective: all 9 submodules in float32 do not restore agreement");
  // With a failing task check and no task choice apart, the tier-1 choice is the task's too.
  Mitigation tier1_only = mitigation;
  tier1_only.choices.resize(1);
  EXPECT_EQ(mitigation_lines(tier1_only, "t", true)[1],
            "tier-1 and task agreement: fp32 (= reference): 10 ms (x2.50 target, x1.00 reference)");
  EXPECT_EQ(mitigation_lines(mitigation, "t", true)[1],
            "tier-1 agreement: fp32 (= reference): 10 ms (x2.50 target, x1.00 reference)");
  // A target slower than the reference (bfloat16 without native support) is pointed out.
  Mitigation slow = mitigation;
  slow.target_ms = 40.0;
  EXPECT_EQ(mitigation_lines(slow, "t").back(),
            "note: the reference is faster than t on this machine (10 ms vs 40 ms per forward)");
  EXPECT_EQ(mitigation_lines(mitigation, "t").size(), 4U);  // faster target: no note
  Mitigation none;
  none.message = "no fallback set or float32 submodule set restores agreement for t; tried 3 variants in 1 run";
  EXPECT_EQ(mitigation_lines(none, "t"), std::vector<std::string>{none.message});
}

}  // namespace
}  // namespace driftgate

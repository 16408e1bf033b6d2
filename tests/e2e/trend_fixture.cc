// Writes a baseline store for `driftgate trend` tests and benchmarks through the
// real record writer (DirectoryStore::save), so the files always match the record
// format parse_run reads, whatever fields it grows.
//
//   trend_fixture --store DIR --shas FILE [--checks N] [--env-switch-at I] [--step-at I]
//                 [--step-check ID]... [--env-step-check ID]...
//
// FILE lists commit SHAs oldest first (trend_repo.py prints them). Every commit gets one
// baseline of experiment "resnet" with N checks (N/4 inputs x 4 targets). Commits before
// --env-switch-at run in environment A (onednn 2.6.3), the rest in B (onednn 3.1). Each
// check's max_abs is a fixed per-check level times +-0.1 decades of deterministic noise;
// from commit --step-at on, the --step-check checks are at least 1000x worse and fail atol 1e-4,
// and carry a tier-2 localization (a 24-layer profile diverging from layer2.0.conv1 on) as the
// runner records for failing checks with activations: on_failure. The --env-step-check checks
// are 100x worse in environment B (an upgrade that moves them: a step at the environment change).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/record.h"
#include "core/tier2_profile.h"
#include "differ/baseline_store.h"

namespace {

constexpr double k_atol = 1e-4;
const std::vector<std::string> k_targets = {"channels_last", "frozen", "onednn_off", "threads_2"};

struct FixtureOptions {
  std::string store;
  std::string shas_path;
  size_t checks = 12;
  size_t env_switch_at = 15;
  size_t step_at = 22;
  std::set<std::string> step_checks;
  std::set<std::string> env_step_checks;
};

driftgate::Environment environment(const std::string& onednn) {
  driftgate::Environment environment;
  environment.keyed = {
      {"compiler", "gcc 12.2"}, {"libtorch", "2.1.0"}, {"onednn", onednn}, {"schema", "1"}, {"threads", "1"}};
  environment.info["cpu_model"] = "fixture cpu";
  return environment;
}

driftgate::CheckRecord make_check(const std::string& input, const std::string& target, double max_abs) {
  driftgate::CheckRecord check;
  check.experiment = "resnet";
  check.input = input;
  check.reference = "cpu_fp32";
  check.target = target;
  check.output = "out";
  check.id = driftgate::make_check_id(check.experiment, input, check.reference, target, check.output);
  check.tolerance.atol = k_atol;
  check.tolerance.rtol = 0.0;
  bool pass = max_abs <= k_atol;
  check.status = pass ? driftgate::CheckStatus::k_pass : driftgate::CheckStatus::k_fail_numeric;
  check.message = pass ? "" : "3 of 1000 elements outside atol 1e-4";
  driftgate::Tier1Stats stats;
  stats.numel = 1000;
  stats.mismatches = pass ? 0 : 3;
  stats.mismatch_fraction = static_cast<double>(stats.mismatches) / 1000.0;
  stats.max_abs = max_abs;
  stats.max_abs_index = {0, 1};
  stats.max_abs_reference = 1.5;
  stats.max_abs_target = 1.5 + max_abs;
  stats.max_rel = max_abs / 1.5;
  stats.max_rel_index = {0, 1};
  stats.max_abs_reference_value = 2.0;
  stats.min_atol = max_abs;  // rtol is 0
  check.stats = stats;
  check.reference_ms = 1.0;
  check.target_ms = 1.2;
  return check;
}

// A resnet-like profile: fp32-noise-level error up to layer2.0.conv1, where the divergence
// starts and grows; layer2.0.bn1 is fused into the conv by the target (not observable).
driftgate::Localization make_localization(double scale) {
  const std::vector<std::string> modules = {"conv1/aten::_convolution#1 (conv.py:459)",
                                            "bn1/aten::batch_norm#1 (functional.py:2450)",
                                            "relu/aten::relu_#1 (functional.py:1457)",
                                            "maxpool/aten::max_pool2d#1 (functional.py:788)",
                                            "layer1.0.conv1/aten::_convolution#1 (conv.py:459)",
                                            "layer1.0.bn1/aten::batch_norm#1 (functional.py:2450)",
                                            "layer1.0.relu/aten::relu_#1 (functional.py:1457)",
                                            "layer1.0.conv2/aten::_convolution#1 (conv.py:459)",
                                            "layer1.0.bn2/aten::batch_norm#1 (functional.py:2450)",
                                            "layer1.0/aten::add_#1 (resnet.py:97)",
                                            "layer1.0.relu/aten::relu_#2 (functional.py:1457)",
                                            "layer2.0.conv1/aten::_convolution#1 (conv.py:459)",
                                            "layer2.0.bn1/aten::batch_norm#1 (functional.py:2450)",
                                            "layer2.0.relu/aten::relu_#1 (functional.py:1457)",
                                            "layer2.0.conv2/aten::_convolution#1 (conv.py:459)",
                                            "layer2.0.bn2/aten::batch_norm#1 (functional.py:2450)",
                                            "layer2.0.downsample.0/aten::_convolution#1 (conv.py:459)",
                                            "layer2.0.downsample.1/aten::batch_norm#1 (functional.py:2450)",
                                            "layer2.0/aten::add_#1 (resnet.py:97)",
                                            "layer2.0.relu/aten::relu_#2 (functional.py:1457)",
                                            "avgpool/aten::adaptive_avg_pool2d#1 (functional.py:1214)",
                                            "/aten::flatten#1 (resnet.py:279)",
                                            "fc/aten::linear#1 (linear.py:114)",
                                            "/aten::softmax#1 (model.py:12)"};
  const size_t first_divergent = 11;
  driftgate::Localization localization;
  localization.alignment = "position";
  localization.layers = static_cast<int64_t>(modules.size());
  localization.first_divergent = modules[first_divergent];
  localization.highest_rank = modules[first_divergent];
  localization.reinjection = "confirmed";
  for (size_t i = 0; i < modules.size(); ++i) {
    driftgate::Tier2Layer layer;
    layer.name = modules[i];
    layer.noise_floor = 2e-7 * (1.0 + 0.1 * static_cast<double>(i));
    layer.threshold = 100.0 * layer.noise_floor;
    layer.delta = i < first_divergent ? 3.0 * layer.noise_floor : scale * std::pow(1.6, static_cast<double>(i));
    layer.status = layer.delta > layer.threshold ? driftgate::LayerStatus::k_divergent : driftgate::LayerStatus::k_ok;
    layer.rank = i == first_divergent ? 40.0 : 0.5;
    if (i == first_divergent + 1) {
      layer.status = driftgate::LayerStatus::k_not_observable;
      layer.delta = 0.0;
    }
    localization.observed += layer.status == driftgate::LayerStatus::k_not_observable ? 0 : 1;
    localization.profile.push_back(layer);
  }
  localization.not_observable = localization.layers - localization.observed;
  localization.coverage = static_cast<double>(localization.observed) / static_cast<double>(localization.layers);
  return localization;
}

FixtureOptions parse(int argc, char** argv) {
  FixtureOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string name = argv[i];
    std::string value = argv[i + 1];
    if (name == "--store") {
      options.store = value;
    } else if (name == "--shas") {
      options.shas_path = value;
    } else if (name == "--checks") {
      options.checks = std::stoul(value);
    } else if (name == "--env-switch-at") {
      options.env_switch_at = std::stoul(value);
    } else if (name == "--step-at") {
      options.step_at = std::stoul(value);
    } else if (name == "--step-check") {
      options.step_checks.insert(value);
    } else if (name == "--env-step-check") {
      options.env_step_checks.insert(value);
    } else {
      std::cerr << "trend_fixture: unknown option " << name << "\n";
      std::exit(2);
    }
  }
  if (options.store.empty() || options.shas_path.empty() || options.checks % k_targets.size() != 0) {
    std::cerr << "trend_fixture: need --store DIR --shas FILE and --checks a multiple of 4\n";
    std::exit(2);
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  FixtureOptions options = parse(argc, argv);
  std::vector<std::string> shas;
  std::ifstream in(options.shas_path);
  for (std::string sha; in >> sha;) {
    shas.push_back(sha);
  }
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> level(-7.5, -5.5);
  std::uniform_real_distribution<double> noise(-0.1, 0.1);
  std::vector<std::string> inputs;
  std::vector<double> levels;
  for (size_t i = 0; i < options.checks / k_targets.size(); ++i) {
    inputs.push_back("in" + std::to_string(i));
    for (size_t t = 0; t < k_targets.size(); ++t) {
      levels.push_back(std::pow(10.0, level(random)));
    }
  }
  driftgate::DirectoryStore store(options.store);
  for (size_t c = 0; c < shas.size(); ++c) {
    driftgate::RunFile run;
    run.header.tool_version = "0.1.0";
    run.header.commit.sha = shas[c];
    run.header.commit.branch = "main";
    run.header.environment = environment(c < options.env_switch_at ? "2.6.3" : "3.1");
    driftgate::ExperimentHeader experiment;
    experiment.name = "resnet";
    experiment.config_path = "configs/resnet.yaml";
    experiment.config_hash = std::string(40, '1');
    experiment.model_path = "models/resnet.pt";
    experiment.model_hash = std::string(40, '2');
    experiment.inputs = inputs;
    experiment.reference = "cpu_fp32";
    experiment.targets = k_targets;
    experiment.tolerance.atol = k_atol;
    experiment.tolerance.rtol = 0.0;
    experiment.tolerance_origin = "configs/resnet.yaml:9:12";
    run.header.experiments.push_back(experiment);
    for (size_t i = 0; i < inputs.size(); ++i) {
      for (size_t t = 0; t < k_targets.size(); ++t) {
        double max_abs = levels[i * k_targets.size() + t] * std::pow(10.0, noise(random));
        driftgate::CheckRecord check = make_check(inputs[i], k_targets[t], max_abs);
        if (c >= options.env_switch_at && options.env_step_checks.count(check.id) != 0) {
          check = make_check(inputs[i], k_targets[t], max_abs * 100.0);
        }
        if (c >= options.step_at && options.step_checks.count(check.id) != 0) {
          // 1000x worse, and at least 3x past atol so that the pass rate drops too.
          check = make_check(inputs[i], k_targets[t],
                             std::max(max_abs * 1000.0, 3.0 * k_atol * max_abs / levels[i * k_targets.size() + t]));
          check.localization = make_localization(1e-6 * static_cast<double>(c + 1 - options.step_at));
        }
        run.checks.push_back(std::move(check));
      }
    }
    run.summary = driftgate::summarize(run.header, run.checks);
    store.save(run);
  }
  return 0;
}

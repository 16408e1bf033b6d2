// make_run: writes a synthetic but valid run file through the real record writer.
//
// Two users: 1) bench/diff_bench.sh generates 1,000,000-record runs and baselines
// to time `driftgate diff` against the cost of reading the files; 2) the
// end-to-end tests in tests/e2e build runs for commits of temporary git
// repositories without LibTorch. Going through write_run keeps the files in step
// with the record format as it grows (hand-written JSONL would silently drift).
//
//   make_run --out FILE --sha SHA [--inputs N] [--targets K] [--experiments E]
//            [--threads T] [--onednn V] [--fail GLOB]... [--fail-every M]
//            [--scale F] [--output-scale F] [--shard I/N] [--branch B] [--dirty] [--tasks] [--atol A]
// Check ids are e<j>/in<i>/cpu_fp32~t<k>/out. A check matching a --fail glob, or
// every M-th check, is fail_numeric; --scale multiplies every max_abs (drift); --output-scale
// multiplies the outputs themselves (rescaled logits): max_abs and the reference's values alike.
// --tasks adds a tier-3 check e<j>/in<i>/cpu_fp32~t<k>/task:classification per numeric one
// (fail_task where a --fail glob matches it); --atol sets every check's and experiment's atol
// (and changes the config hash, as an edited config would).
#include <fnmatch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/record.h"

namespace {

struct Options {
  std::string out;
  std::string sha;
  std::string branch = "main";
  bool dirty = false;
  int inputs = 2;
  int targets = 2;
  int experiments = 1;
  std::string threads = "1";
  std::string onednn = "3.1";
  std::vector<std::string> fail;
  long fail_every = 0;
  double scale = 1.0;
  double output_scale = 1.0;
  int shard_index = 0;
  int shard_count = 1;
  bool tasks = false;
  double atol = 1e-5;
};

[[noreturn]] void usage(const std::string& what) {
  std::cerr << "make_run: " << what
            << "\nusage: make_run --out FILE --sha SHA [--inputs N] [--targets K] [--experiments E] [--threads T] "
               "[--onednn V] [--fail GLOB]... [--fail-every M] [--scale F] [--output-scale F] [--shard I/N] "
               "[--branch B] [--dirty] [--tasks] [--atol A]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--dirty") {
      options.dirty = true;
      continue;
    }
    if (flag == "--tasks") {
      options.tasks = true;
      continue;
    }
    if (i + 1 >= argc) {
      usage("missing value after " + flag);
    }
    std::string value = argv[++i];
    if (flag == "--out") {
      options.out = value;
    } else if (flag == "--sha") {
      options.sha = value;
    } else if (flag == "--branch") {
      options.branch = value;
    } else if (flag == "--inputs") {
      options.inputs = std::stoi(value);
    } else if (flag == "--targets") {
      options.targets = std::stoi(value);
    } else if (flag == "--experiments") {
      options.experiments = std::stoi(value);
    } else if (flag == "--threads") {
      options.threads = value;
    } else if (flag == "--onednn") {
      options.onednn = value;
    } else if (flag == "--fail") {
      options.fail.push_back(value);
    } else if (flag == "--fail-every") {
      options.fail_every = std::stol(value);
    } else if (flag == "--scale") {
      options.scale = std::stod(value);
    } else if (flag == "--output-scale") {
      options.output_scale = std::stod(value);
    } else if (flag == "--atol") {
      options.atol = std::stod(value);
    } else if (flag == "--shard") {
      if (std::sscanf(value.c_str(), "%d/%d", &options.shard_index, &options.shard_count) != 2) {
        usage("--shard expects I/N");
      }
    } else {
      usage("unknown option " + flag);
    }
  }
  if (options.out.empty() || options.sha.empty()) {
    usage("--out and --sha are required");
  }
  return options;
}

driftgate::CheckRecord make_check(const Options& options, int experiment, int input, int target, long ordinal) {
  using driftgate::CheckStatus;
  driftgate::CheckRecord check;
  check.experiment = "e" + std::to_string(experiment);
  check.input = "in" + std::to_string(input);
  check.reference = "cpu_fp32";
  check.target = "t" + std::to_string(target);
  check.output = "out";
  check.id = driftgate::make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
  bool fails = options.fail_every > 0 && ordinal % options.fail_every == options.fail_every - 1;
  for (const auto& glob : options.fail) {
    fails = fails || ::fnmatch(glob.c_str(), check.id.c_str(), 0) == 0;
  }
  check.status = fails ? CheckStatus::k_fail_numeric : CheckStatus::k_pass;
  check.message = fails ? "3 of 1000 elements outside atol" : "";
  driftgate::Tier1Stats stats;
  stats.numel = 1000;
  stats.mismatches = fails ? 3 : 0;
  stats.mismatch_fraction = fails ? 0.003 : 0.0;
  stats.max_abs = (fails ? 1e-3 : 1e-7 * (1 + ordinal % 7)) * options.scale * options.output_scale;
  stats.max_abs_index = {0, static_cast<int64_t>(ordinal % 10)};
  stats.max_abs_reference = 0.5 * options.output_scale;
  stats.max_abs_target = stats.max_abs_reference + stats.max_abs;
  stats.max_rel = stats.max_abs * 2;
  stats.max_rel_index = stats.max_abs_index;
  stats.rel_floor = 1e-6;
  stats.max_abs_reference_value = 3.0 * options.output_scale;
  stats.min_atol = stats.max_abs;
  stats.reference_repeat_max_abs = 0.0;
  stats.target_repeat_max_abs = 0.0;
  check.stats = stats;
  check.tolerance.atol = options.atol;
  check.observed_reference = driftgate::ObservedTensor{"cpu", "float32", "contiguous", {1, 1000}};
  check.observed_target = check.observed_reference;
  check.reference_ms = 1.5;
  check.target_ms = 1.75;
  return check;
}

// The tier-3 companion of a numeric check: a classification answer, no tier-1 statistics.
driftgate::CheckRecord make_task_check(const Options& options, const driftgate::CheckRecord& numeric) {
  driftgate::CheckRecord check = numeric;
  check.output = "task:classification";
  check.id = driftgate::make_check_id(check.experiment, check.input, check.reference, check.target, check.output);
  bool fails = false;
  for (const auto& glob : options.fail) {
    fails = fails || ::fnmatch(glob.c_str(), check.id.c_str(), 0) == 0;
  }
  check.status = fails ? driftgate::CheckStatus::k_fail_task : driftgate::CheckStatus::k_pass;
  check.message = fails ? "top-1 class changed on 1 of 8 images" : "";
  check.stats.reset();
  check.observed_reference.reset();
  check.observed_target.reset();
  check.task = driftgate::TaskResult{
      "classification", "top1+top5", {{"top1_agreement", fails ? 0.875 : 1.0}, {"flips", fails ? 1.0 : 0.0}}, {}};
  return check;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  driftgate::RunFile run;
  run.header.tool_version = "0.1.0";
  run.header.commit = {options.sha, options.branch, options.dirty};
  run.header.shard = {options.shard_index, options.shard_count};
  run.header.environment.keyed = {
      {"libtorch", "2.1.0"}, {"onednn", options.onednn}, {"threads", options.threads}, {"schema", "1"}};
  run.header.environment.info = {{"cpu_model", "make_run"}};
  long ordinal = 0;
  for (int e = 0; e < options.experiments; ++e) {
    driftgate::ExperimentHeader experiment;
    experiment.name = "e" + std::to_string(e);
    experiment.config_path = "configs/" + experiment.name + ".yaml";
    experiment.config_hash = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    experiment.model_path = "models/" + experiment.name + ".pt";
    experiment.model_hash = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for (int i = 0; i < options.inputs; ++i) {
      experiment.inputs.push_back("in" + std::to_string(i));
    }
    experiment.reference = "cpu_fp32";
    for (int t = 0; t < options.targets; ++t) {
      experiment.targets.push_back("t" + std::to_string(t));
    }
    experiment.tolerance.atol = options.atol;
    if (options.atol != 1e-5) {
      experiment.config_hash = "3333333ccccccccccccccccccccccccccccccccc";
    }
    experiment.tolerance_origin = "default";
    run.header.experiments.push_back(experiment);
    for (int i = 0; i < options.inputs; ++i) {
      for (int t = 0; t < options.targets; ++t, ++ordinal) {
        if (ordinal % options.shard_count == options.shard_index) {
          run.checks.push_back(make_check(options, e, i, t, ordinal));
          if (options.tasks) {
            run.checks.push_back(make_task_check(options, run.checks.back()));
          }
        }
      }
    }
  }
  run.summary = driftgate::summarize(run.header, run.checks);
  std::ofstream out(options.out, std::ios::binary);
  driftgate::write_run(out, run);
  out.close();
  if (!out) {
    std::cerr << "make_run: cannot write " << options.out << "\n";
    return 2;
  }
  return 0;
}

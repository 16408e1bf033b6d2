// Helpers for the differ's tests: temporary directories, throwaway git
// repositories driven through the git CLI, and run files built in memory.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/environment.h"
#include "core/record.h"
#include "differ/baseline_select.h"
#include "tests/support/temp_dir.h"

namespace driftgate::test {

// Runs a shell command; returns its stdout without the trailing newline. Throws on a non-zero exit.
inline std::string shell(const std::string& command) {
  std::string full = command + " 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) {
    throw std::runtime_error("popen failed: " + command);
  }
  std::string output;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), read);
  }
  int status = ::pclose(pipe);
  if (status != 0) {
    throw std::runtime_error("command failed (" + std::to_string(status) + "): " + command + "\n" + output);
  }
  while (!output.empty() && output.back() == '\n') {
    output.pop_back();
  }
  return output;
}

// A git repository in `dir`, driven by the git CLI with a fixed identity and no user config.
class TestRepo {
 public:
  explicit TestRepo(std::string dir, bool init = true) : m_dir(std::move(dir)) {
    std::filesystem::create_directories(m_dir);
    if (init) {
      git("init -q -b main .");
    }
  }

  std::string git(const std::string& args) const {
    return shell("cd '" + m_dir +
                 "' && GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -c user.name=test "
                 "-c user.email=test@example.invalid -c commit.gpgsign=false -c protocol.file.allow=always " +
                 args);
  }

  // Commits a change to `file` and returns the new HEAD's SHA.
  std::string commit(const std::string& message, const std::string& file = "file.txt") {
    ++m_counter;
    shell("echo '" + message + " " + std::to_string(m_counter) + "' >> '" + m_dir + "/" + file + "'");
    git("add -A");
    git("commit -q -m '" + message + "'");
    return git("rev-parse HEAD");
  }

  const std::string& dir() const { return m_dir; }

 private:
  std::string m_dir;
  int m_counter = 0;
};

inline Environment make_environment(const std::string& threads = "1", const std::string& onednn = "3.1") {
  Environment environment;
  environment.keyed["libtorch"] = "2.1.0";
  environment.keyed["onednn"] = onednn;
  environment.keyed["threads"] = threads;
  environment.keyed["schema"] = "1";
  environment.info["cpu_model"] = "test cpu";
  return environment;
}

// A check of experiment "exp" (or `experiment`) whose id is built from its parts.
inline CheckRecord make_check(const std::string& input, CheckStatus status, std::optional<double> max_abs = 0.0,
                              const std::string& message = "", const std::string& experiment = "exp") {
  CheckRecord check;
  check.experiment = experiment;
  check.input = input;
  check.reference = "cpu_fp32";
  check.target = "onednn_off";
  check.output = "out";
  check.id = make_check_id(experiment, input, check.reference, check.target, check.output);
  check.status = status;
  check.message = message;
  if (max_abs) {
    Tier1Stats stats;
    stats.numel = 10;
    stats.max_abs = *max_abs;
    check.stats = stats;
  }
  return check;
}

// A consistent run file (header experiments derived from the checks, summary recomputed).
// A selection that found `baseline` at its own commit, the start of the walk.
inline BaselineSelection found(const RunFile& baseline) {
  BaselineSelection selection;
  selection.found = true;
  selection.sha = baseline.header.commit.sha;
  selection.env_key = baseline.header.environment.key();
  selection.start_sha = baseline.header.commit.sha;
  selection.baseline = baseline;
  return selection;
}

inline RunFile make_run(const std::string& sha, const Environment& environment, std::vector<CheckRecord> checks,
                        const std::string& model_hash = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                        const std::string& config_hash = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb") {
  RunFile run;
  run.header.tool_version = "0.1.0";
  run.header.commit.sha = sha;
  run.header.commit.branch = "main";
  run.header.environment = environment;
  std::set<std::string> experiments;
  for (const auto& check : checks) {
    experiments.insert(check.experiment);
  }
  for (const auto& name : experiments) {
    ExperimentHeader experiment;
    experiment.name = name;
    experiment.config_path = "configs/" + name + ".yaml";
    experiment.config_hash = config_hash;
    experiment.model_path = "models/" + name + ".pt";
    experiment.model_hash = model_hash;
    std::set<std::string> inputs;
    for (const auto& check : checks) {
      if (check.experiment == name) {
        inputs.insert(check.input);
      }
    }
    experiment.inputs.assign(inputs.begin(), inputs.end());
    experiment.reference = "cpu_fp32";
    experiment.targets = {"onednn_off"};
    experiment.tolerance_origin = "default";
    run.header.experiments.push_back(experiment);
  }
  run.checks = std::move(checks);
  run.summary = summarize(run.header, run.checks);
  return run;
}

// Every regular file under `root`, relative, sorted.
inline std::vector<std::string> files_under(const std::string& root) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) {
      files.push_back(std::filesystem::relative(entry.path(), root).string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace driftgate::test

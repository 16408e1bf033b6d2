// driftgate env: what this build and machine are, and the environment key runs get here.
#include <nlohmann/json.hpp>
#include <ostream>

#include "app/cli_util.h"
#include "app/command.h"
#include "core/environment.h"
#include "core/record.h"
#ifdef DRIFTGATE_WITH_TORCH
#include "runner/environment_probe.h"
#endif

namespace driftgate {

int cmd_env(CommandContext& context) {
  po::options_description options;
  int threads = 1;
  bool json = false;
  options.add_options()("threads", po::value<int>(&threads)->default_value(1),
                        "intra-op threads the run would use (enters the key)")("json", po::bool_switch(&json),
                                                                               "print JSON instead of text");
  CommandHelp help{"driftgate env [--threads N] [--json]",
                   "Prints the tool version, the environment a run on this machine records (LibTorch, oneDNN, the\n"
                   "BLAS library actually loaded, compiler, CPU ISA, threads, record schema) and its key: runs\n"
                   "and baselines are only compared when their keys match.",
                   "driftgate env --threads 4   # the key a `driftgate run --threads 4` would record"};
  po::variables_map variables;
  if (!parse_command_line("env", context.args, options, po::positional_options_description(), help, variables,
                          context.out)) {
    return 0;
  }
#ifdef DRIFTGATE_WITH_TORCH
  Environment environment = probe_environment(threads, onnx_worker_setting(context.env));
  const bool has_runner = true;
#else
  Environment environment;
  environment.keyed["schema"] = std::to_string(k_record_schema_version);
  environment.keyed["compiler"] = std::string("GCC ") + __VERSION__;
  const bool has_runner = false;
#endif
  if (json) {
    nlohmann::ordered_json out{{"tool_version", DRIFTGATE_VERSION},
                               {"runner", has_runner},
                               {"env_key", environment.key()},
                               {"keyed", environment.keyed},
                               {"info", environment.info}};
    context.out << out.dump(2) << "\n";
    return 0;
  }
  context.out << "driftgate " << DRIFTGATE_VERSION
              << (has_runner ? "" : " (built without LibTorch: no runner; diff, baseline and post work)") << "\n"
              << "env_key " << environment.key() << "\n";
  for (const auto& [name, value] : environment.keyed) {
    context.out << "  " << name << ": " << value << "\n";
  }
  for (const auto& [name, value] : environment.info) {
    context.out << "  (" << name << ": " << value << ")\n";
  }
  return 0;
}

}  // namespace driftgate

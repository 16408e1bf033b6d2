// driftgate sweep: the pass rate of every target backend at several tolerances,
// answered from the minimum tolerances one run recorded (differ/sweep.h). Torch-free.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "app/cli_util.h"
#include "app/command.h"
#include "core/error.h"
#include "core/record.h"
#include "differ/sweep.h"

namespace driftgate {

namespace {

// Everything `driftgate sweep` was asked to do.
struct SweepOptions {
  std::string run_path;                       // the run file to read
  std::string atols = "1e-6,1e-5,1e-4,1e-3";  // the paper's sweep
  std::string rtol;                           // "": each check's recorded rtol
};

const CommandHelp k_help{
    "driftgate sweep RUN.jsonl [--atol A,B,...] [--rtol R]",
    "Prints, per target backend, the share of checks that pass the assert_close rule\n"
    "|target - reference| <= atol + rtol*|reference| at each atol, from the minimum tolerances the run\n"
    "recorded (min_atol at the recorded rtol, max |a-b| at rtol 0): nothing is re-run, no LibTorch is\n"
    "needed. Crashed, non-finite and structure failures fail at every atol; skipped checks are not\n"
    "counted. Task checks (tier 3) do not depend on atol: they are listed apart with their own pass rate. --rtol other "
    "than the recorded one or 0 is answered where monotonicity decides it, else\n"
    "exit 2 naming the check.",
    "driftgate sweep out/run.jsonl --atol 1e-6,1e-5,1e-4,1e-3 --rtol 0   # the paper's table"};

}  // namespace

int cmd_sweep(CommandContext& context) {
  SweepOptions request;
  po::options_description options;
  options.add_options()("run", po::value<std::string>(&request.run_path), "the run file (positional)")(
      "atol", po::value<std::string>(&request.atols)->default_value(request.atols),
      "comma-separated absolute tolerances, one column each")(
      "rtol", po::value<std::string>(&request.rtol),
      "one relative tolerance for every check (default: the rtol each check was recorded with)");
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map variables;
  if (!parse_command_line("sweep", context.args, options, positional, k_help, variables, context.out)) {
    return 0;
  }
  if (request.run_path.empty()) {
    throw Error("driftgate sweep: no run file given; e.g. driftgate sweep out/run.jsonl --atol 1e-6,1e-5");
  }
  SweepRequest sweep;
  sweep.atols = parse_tolerance_list(request.atols, "--atol");
  if (!request.rtol.empty()) {
    std::vector<double> rtol = parse_tolerance_list(request.rtol, "--rtol");
    if (rtol.size() != 1) {
      throw Error("--rtol '" + request.rtol + "': give one value; sweep one rtol per call");
    }
    sweep.rtol = rtol.front();
  }
  RunFile run = read_run_file(request.run_path);
  render_sweep_text(context.out, sweep_run(run, sweep));
  return 0;
}

}  // namespace driftgate

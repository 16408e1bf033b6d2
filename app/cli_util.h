// Shared plumbing for subcommand option parsing (Boost.Program_options).
#pragma once

#include <boost/program_options.hpp>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace driftgate {

namespace po = boost::program_options;

// How one subcommand presents itself in `driftgate SUBCOMMAND --help`.
struct CommandHelp {
  std::string usage;    // "driftgate diff RUN.jsonl [options]"
  std::string purpose;  // one paragraph
  std::string example;  // one example command line, with a comment
};

// Parses `args` into `variables`. Adds --help itself. Positional options go into
// `positional` names. Returns false when --help was printed to `out` (the command
// then returns 0). Throws driftgate::Error "driftgate NAME: unknown option '--colour';
// did you mean '--color'? ..." (the closest long option of this subcommand, if any is
// close) on an unknown option, "driftgate NAME: <what>; see driftgate NAME --help" on a
// malformed one.
bool parse_command_line(const std::string& name, const std::vector<std::string>& args,
                        const po::options_description& options, const po::positional_options_description& positional,
                        const CommandHelp& help, po::variables_map& variables, std::ostream& out);

// The ONNX Runtime worker program the runner starts for onnxruntime backends:
// DRIFTGATE_ORT_WORKER in the process environment `env`, or "" (driftgate-ort beside
// driftgate) when it is unset or empty. For RunnerOptions::onnx_worker and its kin.
std::string onnx_worker_setting(const std::map<std::string, std::string>& env);

// The exit-code paragraph every --help ends with.
const char* exit_code_help();

}  // namespace driftgate

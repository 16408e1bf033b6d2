#include "app/cli_util.h"

#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/suggest.h"

namespace driftgate {

const char* exit_code_help() {
  return "Exit codes:\n"
         "  0  nothing that the gate fails on\n"
         "  1  drift or regression found\n"
         "  2  usage, input or environment error\n";
}

bool parse_command_line(const std::string& name, const std::vector<std::string>& args,
                        const po::options_description& options, const po::positional_options_description& positional,
                        const CommandHelp& help, po::variables_map& variables, std::ostream& out) {
  po::options_description all("Options");
  all.add_options()("help,h", "show this help");
  all.add(options);
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), variables);
    if (variables.count("help") != 0) {
      out << "Usage: " << help.usage << "\n\n"
          << help.purpose << "\n\n"
          << all << "\nExample:\n  " << help.example << "\n\n"
          << exit_code_help();
      return false;
    }
    po::notify(variables);
  } catch (const po::unknown_option& e) {
    // The closest option of this subcommand: "--colour" → "--color".
    std::string token = e.get_option_name();
    std::string word = token.substr(0, token.find('='));
    std::vector<std::string> names;
    for (const auto& option : all.options()) {
      if (!option->long_name().empty()) {
        names.push_back("--" + option->long_name());
      }
    }
    std::string suggestion = word.rfind("--", 0) == 0 ? did_you_mean(word, names) : "";
    throw Error("driftgate " + name + ": unknown option '" + word + "'" + (suggestion.empty() ? ";" : suggestion) +
                " driftgate " + name + " --help lists the options");
  } catch (const po::error& e) {
    throw Error("driftgate " + name + ": " + e.what() + "; see driftgate " + name + " --help");
  }
  return true;
}

std::string onnx_worker_setting(const std::map<std::string, std::string>& env) {
  auto found = env.find("DRIFTGATE_ORT_WORKER");
  return found == env.end() ? "" : found->second;
}

}  // namespace driftgate

// driftgate: guards deep-learning models against cross-backend drift.
// main() only dispatches a subcommand from the table and maps errors to exit codes.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli_util.h"
#include "app/command.h"
#include "core/error.h"
#include "core/exit_code.h"
#include "core/safe_text.h"
#include "core/suggest.h"

extern char** environ;

namespace {

// The exit code, after a command ran. With DRIFTGATE_FAST_EXIT (builds without
// sanitizers) the process ends here, skipping static destructors: LibTorch's
// unregister every operator (~0.1 s), and a diff leaves its two mapped gigabytes to
// the kernel; results are already written and flushed.
int finish(int code) {
#if defined(DRIFTGATE_FAST_EXIT)
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
#else
  return code;
#endif
}

void print_usage(std::ostream& out) {
  out << "driftgate " DRIFTGATE_VERSION
         " - guards deep-learning models against cross-backend drift\n\n"
         "Usage: driftgate SUBCOMMAND [options]   (driftgate SUBCOMMAND --help for each)\n\n"
         "Subcommands:\n";
  for (const auto& command : driftgate::command_table()) {
    out << "  " << command.name << std::string(12 - std::strlen(command.name), ' ') << command.summary << "\n";
  }
  out << "\nExample (a pull-request gate; run exits 1 when any check fails, known failures included, and 2\n"
         "on bad input, so the gate is diff's exit code):\n"
         "  driftgate run configs/*.yaml -o run.jsonl; [ $? -le 1 ] && driftgate diff run.jsonl\n\n"
      << driftgate::exit_code_help();
}

}  // namespace

int main(int argc, char** argv) {
  using driftgate::ExitCode;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    print_usage(std::cout);
    return argc < 2 ? to_int(ExitCode::k_error) : to_int(ExitCode::k_ok);
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::cout << "driftgate " DRIFTGATE_VERSION "\n";
    return 0;
  }
  driftgate::CommandContext context{{argv + 2, argv + argc}, {}, std::cout, std::cerr};
#if defined(DRIFTGATE_FAST_EXIT)
  context.process_exits_after = true;
#endif
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const char* equals = std::strchr(*entry, '=');
    if (equals != nullptr) {
      context.env.emplace(std::string(static_cast<const char*>(*entry), equals), std::string(equals + 1));
    }
  }
  for (const auto& command : driftgate::command_table()) {
    if (argv[1] != std::string(command.name)) {
      continue;
    }
    try {
      int code = command.run(context);
      // A summary that never reached its reader (a full disk, a closed pipe) is not success.
      std::cout.flush();
      if (!std::cout) {
        std::cerr << "error: cannot write to standard output (" << std::strerror(errno)
                  << "); the output is incomplete\n";
        return finish(to_int(ExitCode::k_error));
      }
      return finish(code);
    } catch (const driftgate::Error& e) {
      // Messages quote inputs (a name, a line of a file): their control and bidi
      // characters and bytes that are not UTF-8 are shown escaped, never sent to the terminal.
      std::cerr << "error: " << driftgate::escape_invisible(e.what(), /*keep_whitespace=*/true) << "\n";
      return finish(to_int(ExitCode::k_error));
    } catch (const std::exception& e) {
      std::cerr << "error: internal: " << driftgate::escape_invisible(e.what(), /*keep_whitespace=*/true) << "\n";
      return finish(to_int(ExitCode::k_error));
    }
  }
  std::vector<std::string> names;
  for (const auto& command : driftgate::command_table()) {
    names.emplace_back(command.name);
  }
  std::string suggestion = driftgate::did_you_mean(argv[1], names);
  std::cerr << "error: unknown command '" << driftgate::escape_invisible(argv[1]) << "'"
            << (suggestion.empty() ? ";" : suggestion) << " driftgate --help lists the commands\n";
  return to_int(ExitCode::k_error);
}

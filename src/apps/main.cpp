// orochi: the command-line entry point. Each subcommand lives in its own cmd_*.cpp; their help
// texts live in help.cpp. `--help`/`-h` is answered here for every command, before its parser runs,
// so it works the same everywhere and never starts any work.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/help.h"
#include "core/check.h"
#include "io/interrupt_cleanup.h"

namespace {

using orochi::apps::command_help;

// `orochi help [CMD [SUB]]`.
int run_help(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fputs(orochi::apps::general_help().c_str(), stdout);
    return 0;
  }
  std::string topic = args[0];
  if (args.size() > 1) topic += " " + args[1];
  const std::string text = command_help(topic);
  if (text.empty() || args.size() > 2) {
    std::fprintf(stderr, "orochi: usage error: no help for '%s'\n%s", topic.c_str(),
                 orochi::apps::general_help().c_str());
    return 2;
  }
  std::fputs(text.c_str(), stdout);
  return 0;
}

int dispatch(const std::string& command, const std::vector<std::string>& args) {
  if (command == "generate") return orochi::apps::run_generate(args);
  if (command == "plan") return orochi::apps::run_plan(args);
  if (command == "inspect") return orochi::apps::run_inspect(args);
  if (command == "forward") return orochi::apps::run_forward(args);
  if (command == "bench") return orochi::apps::run_bench(args);
  if (command == "serve") return orochi::apps::run_serve(args);
  std::fprintf(stderr, "orochi: usage error: unknown command '%s'\n%s", command.c_str(),
               orochi::apps::general_help().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything can create a temporary file: Ctrl-C / SIGTERM remove them and exit 130 / 143.
  orochi::io::install_interrupt_cleanup();
  if (argc < 2) {
    std::fputs(orochi::apps::general_help().c_str(), stderr);
    return 2;
  }
  const std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "help" || command == "--help" || command == "-h") return run_help(args);
  const std::string topic = orochi::apps::help_topic_requested(command, args);
  if (!topic.empty() && !command_help(topic).empty()) {
    std::fputs(command_help(topic).c_str(), stdout);
    return 0;
  }
  orochi::apps::set_current_command(command == "bench" && !args.empty() && (args[0] == "dit" || args[0] == "text")
                                        ? "bench " + args[0]
                                        : command);
  try {
    return dispatch(command, args);
  } catch (const orochi::InternalError& e) {
    std::fprintf(stderr, "orochi: internal error (please report): %s\n", e.what());
    return 70;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "orochi: out of host memory\n");
    return 71;
  }
}

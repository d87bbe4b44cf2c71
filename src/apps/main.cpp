// orochi: the command-line entry point. Each subcommand lives in its own cmd_*.cpp.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "core/check.h"

namespace {

void print_usage() {
  std::fprintf(stderr,
               "usage: orochi <command> [options]\n"
               "commands:\n"
               "  generate [DIR]   text to video with audio: writes an MP4 (built-in tiny demo model without DIR)\n"
               "  inspect PATH     print a checkpoint's config, parameter groups, dtypes and bytes\n"
               "  forward [PATH]   run one MiniMax-H3 denoiser forward (built-in tiny model without PATH)\n"
               "  plan             memory plan per GPU and phase for a request (no weights loaded)\n"
               "  bench dit|text   time the H3 denoiser (dit) or the Qwen3-VL text stack (text) on a GPU with\n"
               "                   random weights of the real shapes\n"
               "  help             this text\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "help") == 0 || std::strcmp(argv[1], "--help") == 0) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "generate") return orochi::apps::run_generate(args);
    if (command == "plan") return orochi::apps::run_plan(args);
    if (command == "inspect") return orochi::apps::run_inspect(args);
    if (command == "forward") return orochi::apps::run_forward(args);
    if (command == "bench") return orochi::apps::run_bench(args);
  } catch (const orochi::InternalError& e) {
    std::fprintf(stderr, "orochi: internal error (please report): %s\n", e.what());
    return 70;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "orochi: out of host memory\n");
    return 71;
  }
  std::fprintf(stderr, "orochi: unknown command '%s'\n", command.c_str());
  print_usage();
  return 2;
}

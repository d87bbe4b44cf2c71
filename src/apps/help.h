// Every command's help in one place: `orochi help [CMD]`, `orochi CMD --help` / `-h`. The texts
// state each option's default and limits and the exit codes; README.md's CLI table lists the same
// options (tests/test_cli_options.cpp compares them).
#pragma once

#include <string>
#include <vector>

namespace orochi::apps {

// The commands that have help, as typed after `orochi`: "generate", "plan", "forward", "inspect",
// "bench", "bench dit", "bench text", "help".
const std::vector<std::string>& help_topics();

// The help of `command` (one of help_topics()), or "" when there is none.
std::string command_help(const std::string& command);

// `orochi help switches`: every run switch, its values and its variable (the engine's table).
std::string switches_help();

// The overview: every command in one line each, and the exit codes.
std::string general_help();

// The exit codes, as every command's help ends.
extern const char* const kExitCodesHelp;

// Finds the help topic of a command line: `bench text --help` -> "bench text", `generate -h` ->
// "generate". Returns "" when `args` (after the command) asks for no help: no `--help` or `-h`
// before a `--`.
std::string help_topic_requested(const std::string& command, const std::vector<std::string>& args);

}  // namespace orochi::apps

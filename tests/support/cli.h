// Runs the orochi binary as a user would (through the shell), for the CLI tests.
#pragma once

#include <string>

namespace orochi::testing {

struct CliResult {
  int code = -1;       // exit code; -1 when the process did not exit normally
  std::string output;  // stdout, and stderr unless left out
};

// `orochi <args>`; stderr is captured with stdout unless `with_stderr` is false (then discarded).
CliResult run_orochi(const std::string& args, bool with_stderr = true);

}  // namespace orochi::testing

// Runs the orochi binary as a user would (through the shell), for the CLI tests.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace orochi::testing {

struct CliResult {
  int code = -1;       // exit code; -1 when the process did not exit normally
  std::string output;  // stdout, and stderr unless left out
};

// `orochi <args>`; stderr is captured with stdout unless `with_stderr` is false (then discarded).
CliResult run_orochi(const std::string& args, bool with_stderr = true);

// Starts `orochi <args...>` without a shell (so a signal reaches orochi itself), its stdout and
// stderr appended to `log_path`. Returns the pid, or -1.
pid_t spawn_orochi(const std::vector<std::string>& args, const std::string& log_path);

// Waits for `pid`: its exit code; minus the signal number when a signal ended it (so a handler's
// exit 130 and a death by SIGINT differ); -1000 on error.
int wait_exit_code(pid_t pid);

}  // namespace orochi::testing

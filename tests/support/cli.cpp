#include "support/cli.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "support/paths.h"

namespace orochi::testing {

CliResult run_orochi(const std::string& args, bool with_stderr) {
  const std::string cmd = orochi_binary() + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace orochi::testing

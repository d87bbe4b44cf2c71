// The orochi subcommands; each returns the process exit code (0 ok, 1 user error, 2 usage).
#pragma once

#include <string>
#include <vector>

namespace orochi::apps {

int run_inspect(const std::vector<std::string>& args);
int run_forward(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_bench_text(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
int run_plan(const std::vector<std::string>& args);
int run_serve(const std::vector<std::string>& args);

}  // namespace orochi::apps

#include "apps/commands.h"
namespace orochi::apps {
int run_inspect(const std::vector<std::string>&) { return 1; }
int run_forward(const std::vector<std::string>&) { return 1; }
}

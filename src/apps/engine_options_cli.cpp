#include "apps/engine_options_cli.h"

#include <cstdio>

namespace orochi::apps {

Expected<engine::EngineOptions> engine_options_from(const EngineCli& cli) {
  engine::EngineOptions o;
  o.device = cli.device;
  o.gpus = static_cast<int>(cli.gpus);
  o.parallel = cli.parallel;
  o.comm_timeout_s = static_cast<int>(cli.comm_timeout_s);
  OROCHI_ASSIGN_OR_RETURN(o.switches, engine::run_switches_from_environment());
  if (!cli.set.empty()) {
    Status s = engine::set_run_switches(o.switches, cli.set);
    if (!s.is_ok()) return usage_error("--set: " + s.message());
  }
  if (!cli.quiet) {
    const std::string who = cli.who;
    o.on_note = [who](const std::string& line) { std::fprintf(stderr, "%s: %s\n", who.c_str(), line.c_str()); };
  }
  return o;
}

}  // namespace orochi::apps

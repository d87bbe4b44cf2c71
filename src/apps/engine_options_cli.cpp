#include "apps/engine_options_cli.h"

#include <cstdio>

#include "apps/request_limits.h"
#include "planner/parallel_choice.h"

namespace orochi::apps {

void add_engine_options(std::set<std::string>& valued) {
  valued.insert({"device", "gpus", "parallel", "comm-timeout", "set", "precision"});
}

Expected<EngineCli> parse_engine_cli(const Args& args, bool quiet, const std::string& who) {
  EngineCli cli;
  // Where it runs, how GPUs share it and the switches are the engine's to check (Engine::open).
  cli.device = args.get("device", "");  // empty: the engine decides (the CPU for the demo)
  OROCHI_ASSIGN_OR_RETURN(cli.gpus, args.get_int("gpus", 1, limits::kGpusMin, limits::kGpusMax));
  OROCHI_ASSIGN_OR_RETURN(cli.comm_timeout_s, args.get_int("comm-timeout", 60, 1, 7 * 24 * 3600));
  cli.parallel = args.get("parallel", planner::kDefaultParallel);
  cli.set = args.get("set", "");
  cli.precision = args.get("precision", "bf16");
  cli.quiet = quiet;
  cli.who = who;
  return cli;
}

Expected<engine::EngineOptions> engine_options_from(const EngineCli& cli) {
  engine::EngineOptions o;
  o.device = cli.device;
  o.gpus = static_cast<int>(cli.gpus);
  o.parallel = cli.parallel;
  o.comm_timeout_s = static_cast<int>(cli.comm_timeout_s);
  Expected<Precision> precision = parse_precision(cli.precision);
  if (!precision) return usage_error(precision.status().message());
  o.precision = *precision;
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

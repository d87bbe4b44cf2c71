// The engine options every command that runs a model takes from its command line: --device,
// --gpus, --parallel, --comm-timeout, --set NAME=VALUE[,NAME=VALUE...] (over the OROCHI_* switch
// variables of the environment), and where the engine's notes go.
#pragma once

#include <set>
#include <string>

#include "apps/args.h"
#include "core/status.h"
#include "engine/engine_options.h"

namespace orochi::apps {

struct EngineCli {
  std::string device;  // empty: the engine's default
  int64_t gpus = 1;
  std::string parallel = "auto";
  int64_t comm_timeout_s = 60;
  std::string set;     // --set's value, empty when not given
  bool quiet = false;  // notes dropped
  std::string who;     // the notes' prefix: "orochi generate"
  std::string precision = "bf16";  // --precision's value
};

// Adds --device, --gpus, --parallel, --comm-timeout, --set and --precision to a command's valued options.
void add_engine_options(std::set<std::string>& valued);

// Those options' values (limits: apps/request_limits.h; the engine checks the rest in open()).
// `quiet` and `who` are the command's.
Expected<EngineCli> parse_engine_cli(const Args& args, bool quiet, const std::string& who);

// Switches from the environment first, then --set over them (the command line wins).
Expected<engine::EngineOptions> engine_options_from(const EngineCli& cli);

}  // namespace orochi::apps

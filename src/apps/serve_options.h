// `orochi serve`'s command line: the server's own options, the model source and the engine
// options as `generate` takes them (apps/model_source_options.h, apps/engine_options_cli.h).
#pragma once

#include <string>
#include <vector>

#include "apps/engine_options_cli.h"
#include "apps/server/server_config.h"
#include "core/status.h"
#include "engine/engine_options.h"

namespace orochi::apps {

struct ServeOptions {
  engine::ModelSource source;
  EngineCli engine;
  server::ServerConfig server;
  bool quiet = false;
};

// Usage errors (exit 2) for the parser's findings and values outside their limits; an unreadable
// --api-key-file is invalid_argument.
Expected<ServeOptions> parse_serve_options(const std::vector<std::string>& argv);

}  // namespace orochi::apps

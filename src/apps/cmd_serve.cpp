// `orochi serve [MODEL_DIR] [options]`: the model opened once and kept loaded, video jobs over HTTP
// (the OpenAI videos API as SGLang and vLLM-Omni serve it), a page to use it from a browser. A
// client of the engine as `generate` is; the server itself is src/apps/server/.
#include <cstdio>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/serve_options.h"
#include "engine/engine.h"
#include "io/mp4.h"
#ifdef OROCHI_WITH_HTTP
#include "apps/server/http/video_server.h"
#endif

namespace orochi::apps {
namespace {

[[maybe_unused]] bool loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

}  // namespace

int run_serve(const std::vector<std::string>& argv) {
  Expected<ServeOptions> opts = parse_serve_options(argv);
  if (!opts) return fail(opts.status());
#ifndef OROCHI_WITH_HTTP
  return fail(unsupported("this build has no HTTP server (it was built without cpp-httplib): run "
                          "scripts/install_deps.sh, then rebuild with scripts/build.sh"));
#else
  if (!io::mp4_supported())
    return fail(unsupported("this build cannot write MP4 (it was built without FFmpeg's libraries); run "
                            "scripts/install_deps.sh, then rebuild with scripts/build.sh"));
  Expected<engine::EngineOptions> options = engine_options_from(opts->engine);
  if (!options) return fail(options.status());
  Expected<std::unique_ptr<engine::Engine>> opened = engine::Engine::open(opts->source, *options);
  if (!opened) return fail(opened.status());
  engine::Engine& engine = **opened;
  Expected<std::unique_ptr<server::VideoServer>> made = server::VideoServer::open(opts->server, engine, opts->source);
  if (!made) return fail(made.status());
  server::VideoServer& srv = **made;
  Expected<int> port = srv.bind();
  if (!port) return fail(port.status());

  for (const std::string& note : srv.recovery_notes()) std::fprintf(stderr, "orochi serve: %s\n", note.c_str());
  const server::ServerConfig& c = opts->server;
  if (!loopback(c.host) && c.api_key.empty())
    std::fprintf(stderr, "orochi serve: warning: listening on %s without --api-key: anyone who reaches this port can "
                 "submit jobs and read every video\n", c.host.c_str());
  std::fprintf(stderr, "orochi serve: %s on %s%s; jobs in %s (%zu found); queue bound %zu\n", engine.model_name().c_str(),
               engine.device().c_str(), engine.demo() ? " (noise-like video by design)" : "", srv.jobs_folder().c_str(),
               srv.jobs_restored(), c.queue_max);
  const std::string shown_host = c.host.find(':') != std::string::npos ? "[" + c.host + "]" : c.host;
  std::printf("orochi serve: listening on http://%s:%d\n", shown_host.c_str(), *port);
  std::fflush(stdout);
  srv.serve();  // until the process is stopped (SIGINT / SIGTERM: the next start marks running jobs failed)
  return 0;
#endif
}

}  // namespace orochi::apps

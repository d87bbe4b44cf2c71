// `orochi serve`'s server: the jobs folder (recovered at start), the queue and its worker on the
// engine the command opened (the model stays loaded for every job), and the HTTP routes (routes.h)
// behind the guards (guards.h), on cpp-httplib.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/server/http/server_context.h"
#include "core/status.h"
#include "engine/engine.h"

namespace httplib {
class Server;
}

namespace orochi::apps::server {

// The name GET /v1/models gives the model (and `model` in a request must match): the model
// folder's name, "minimax-h3-random-weights", "minimax-h3-demo" (or the demo's --transformer file's
// name), else "minimax-h3".
std::string model_id_of(const engine::ModelSource& source);

class VideoServer {
 public:
  // The jobs folder opened and recovered (JobStore::recover), the media root checked, the routes made.
  static Expected<std::unique_ptr<VideoServer>> open(const ServerConfig& config, engine::Engine& engine,
                                                     const engine::ModelSource& source);
  ~VideoServer();

  // Binds config.host:config.port (port 0: a free one); returns the port.
  Expected<int> bind();
  // Serves until stop() (from another thread or a signal handler's thread); returns when stopped.
  void serve();
  void stop();

  const std::vector<std::string>& recovery_notes() const { return notes_; }
  size_t jobs_restored() const { return restored_; }
  const std::string& jobs_folder() const;

 private:
  VideoServer() = default;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<EventHub> events_;
  std::unique_ptr<JobQueue> queue_;
  std::unique_ptr<ServerContext> ctx_;
  std::unique_ptr<httplib::Server> http_;
  std::vector<std::string> notes_;
  size_t restored_ = 0;
};

}  // namespace orochi::apps::server

// What every route of `orochi serve` shares: the start-up options, the engine (opened once), the
// jobs (store, queue, events) and the request rules. Built by VideoServer, read by the routes.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "apps/server/job_events.h"
#include "apps/server/job_queue.h"
#include "apps/server/job_store.h"
#include "apps/server/media_root.h"
#include "apps/server/request_fields.h"
#include "apps/server/server_config.h"
#include "engine/engine.h"

namespace orochi::apps::server {

struct ServerContext {
  ServerContext(ServerConfig c, engine::Engine& e, engine::ModelSource s, JobStore& st, JobQueue& q, EventHub& ev,
                MediaRoot m)
      : config(std::move(c)), engine(e), source(std::move(s)), store(st), queue(q), events(ev), media(std::move(m)) {}

  ServerConfig config;
  engine::Engine& engine;
  engine::ModelSource source;
  JobStore& store;
  JobQueue& queue;
  EventHub& events;
  MediaRoot media;
  RequestRules rules;
  nlohmann::json model;    // GET /v1/models' entry
  // Engine::plan reads only what open() set, but a plan on several GPUs measures their link: one
  // plan at a time, beside the worker's run.
  std::mutex plan_mutex;
  std::atomic<int> event_streams{0};
  std::atomic<bool> stopping{false};
};

}  // namespace orochi::apps::server

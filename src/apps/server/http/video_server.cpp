#include "apps/server/http/video_server.h"

#include <httplib.h>

#include <filesystem>

#include "apps/server/http/guards.h"
#include "apps/server/http/routes.h"
#include "apps/server/video_object.h"

namespace orochi::apps::server {
namespace {

std::string file_stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

nlohmann::json model_json(const engine::Engine& engine, const RequestRules& rules) {
  nlohmann::json workflows = nlohmann::json::array();
  for (const engine::FamilyWorkflow& w : engine.family().workflows())
    workflows.push_back({{"name", w.name}, {"built", w.built}, {"about", w.about}});
  nlohmann::json loras = nlohmann::json::array();  // what a request's `loras` may name
  for (const OfferedLora& l : rules.loras)
    loras.push_back({{"name", l.name}, {"strength", l.strength}, {"default", l.at_start}});
  return {{"id", rules.model_id},
          {"object", "model"},
          {"created", unix_now()},
          {"owned_by", "orochi"},
          {"name", engine.model_name()},
          {"family", engine.family().name()},
          {"device", engine.device()},
          {"demo", engine.demo()},
          {"prompt_conditions", rules.prompt_conditions},
          {"workflows", workflows},
          {"loras", loras},
          {"media_root", rules.media && rules.media->enabled()}};
}

}  // namespace

std::string model_id_of(const engine::ModelSource& source) {
  if (source.dir) {
    std::filesystem::path dir(*source.dir);
    if (dir.filename().empty()) dir = dir.parent_path();  // "H3/" names the folder H3
    return dir.filename().string();
  }
  if (source.random_weights) return "minimax-h3-random-weights";
  if (source.demo()) return source.transformer_file ? file_stem(*source.transformer_file) : "minimax-h3-demo";
  return "minimax-h3";  // other sources: single files, a ComfyUI models/ folder
}

Expected<std::unique_ptr<VideoServer>> VideoServer::open(const ServerConfig& config, engine::Engine& engine,
                                                         const engine::ModelSource& source) {
  std::unique_ptr<VideoServer> s(new VideoServer());
  OROCHI_ASSIGN_OR_RETURN(std::vector<OfferedLora> offered, offered_loras(source.loras, config.lora_dir));
  OROCHI_ASSIGN_OR_RETURN(JobStore store, JobStore::open(config.jobs_dir));
  s->store_ = std::make_unique<JobStore>(std::move(store));
  MediaRoot media;
  if (config.media_root) {
    OROCHI_ASSIGN_OR_RETURN(media, MediaRoot::open(*config.media_root));
  }
  OROCHI_ASSIGN_OR_RETURN(std::vector<JobStore::Job> jobs, s->store_->recover(unix_now(), s->notes_));
  s->restored_ = jobs.size();

  s->events_ = std::make_unique<EventHub>();
  EventHub& events = *s->events_;
  // The model id is known before the queue reports anything: the context is made right after.
  const std::string model_id = model_id_of(source);
  s->queue_ = std::make_unique<JobQueue>(*s->store_, config.queue_max,
                                         [&events, model_id](const JobSnapshot& job, const std::string& kind) {
                                           const std::string data =
                                               kind == "progress" ? json_text(progress_object(job))
                                                                  : json_text(video_object(job, model_id));
                                           events.publish(job.record.id, kind, data);
                                         });
  s->queue_->restore(std::move(jobs));

  s->ctx_ = std::make_unique<ServerContext>(config, engine, source, *s->store_, *s->queue_, events, std::move(media));
  ServerContext& ctx = *s->ctx_;
  ctx.rules.model_id = model_id;
  // The demo and random weights have no text encoder: their prompt is recorded, not encoded.
  ctx.rules.prompt_conditions = !source.demo() && !source.random_weights;
  ctx.rules.loras = std::move(offered);
  ctx.rules.media = &ctx.media;
  ctx.model = model_json(engine, ctx.rules);

  s->http_ = std::make_unique<httplib::Server>();
  install_guards(*s->http_, ctx);
  add_video_routes(*s->http_, ctx);
  add_info_routes(*s->http_, ctx);
  s->queue_->start();
  return s;
}

VideoServer::~VideoServer() { stop(); }

const std::string& VideoServer::jobs_folder() const { return store_->root(); }

Expected<int> VideoServer::bind() {
  const ServerConfig& c = ctx_->config;
  if (c.port == 0) {
    const int port = http_->bind_to_any_port(c.host);
    if (port <= 0) return io_error("cannot listen on " + c.host + ": check --host");
    return port;
  }
  if (!http_->bind_to_port(c.host, c.port))
    return io_error("cannot listen on " + c.host + ":" + std::to_string(c.port) +
                    ": the port is in use or the address is not this machine's; pick another --port or --host");
  return c.port;
}

void VideoServer::serve() { http_->listen_after_bind(); }

void VideoServer::stop() {
  if (!ctx_) return;
  ctx_->stopping = true;
  events_->wake_all();
  if (http_) http_->stop();
  if (queue_) queue_->stop();
}

}  // namespace orochi::apps::server

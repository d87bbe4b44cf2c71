// A job's work on the engine: its plan (made when the job was accepted) run by the worker, the MP4
// and stage report written into the job's folder as `orochi generate` writes them.
#pragma once

#include <memory>
#include <string>

#include "apps/server/job_queue.h"
#include "engine/engine.h"

namespace orochi::apps::server {

std::unique_ptr<JobWork> make_engine_job(engine::Engine& engine, engine::RunPlan plan, std::string video_path,
                                         int crf);

}  // namespace orochi::apps::server

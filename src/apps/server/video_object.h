// A job as the API shows it: OpenAI's video object (id, object "video", model, status, progress,
// created_at, completed_at, expires_at, size, seconds, prompt, error, remixed_from_video_id) with
// ours beside it (README.md, `orochi serve`'s section, lists every field).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "apps/server/job_queue.h"

namespace orochi::apps::server {

nlohmann::json video_object(const JobSnapshot& job, const std::string& model_id);

// A running job's progress as the events stream sends it.
nlohmann::json progress_object(const JobSnapshot& job);

}  // namespace orochi::apps::server

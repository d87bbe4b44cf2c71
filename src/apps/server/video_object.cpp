#include "apps/server/video_object.h"

namespace orochi::apps::server {
namespace {

nlohmann::json unix_or_null(int64_t t) { return t == 0 ? nlohmann::json(nullptr) : nlohmann::json(t); }

int percent_of(const JobSnapshot& job) {
  switch (job.record.status) {
    case JobStatus::kCompleted: return 100;
    case JobStatus::kInProgress: return job.progress ? job.progress->percent : 0;
    default: return 0;
  }
}

}  // namespace

nlohmann::json progress_object(const JobSnapshot& job) {
  nlohmann::json j{{"id", job.record.id}, {"status", status_name(job.record.status)}, {"progress", percent_of(job)}};
  if (job.progress) {
    const LiveProgress& p = *job.progress;
    j["stage"] = p.stage;
    j["done"] = p.done;
    j["total"] = p.total;
    j["seconds_per_unit"] = p.last_seconds;
    j["mean_seconds_per_unit"] = p.mean_seconds;
    j["eta_seconds"] = p.eta_seconds;
  }
  return j;
}

nlohmann::json video_object(const JobSnapshot& job, const std::string& model_id) {
  const JobRecord& r = job.record;
  const nlohmann::json& q = job.request;
  auto request_field = [&](const char* name) { return q.contains(name) ? q[name] : nlohmann::json(nullptr); };
  nlohmann::json j{{"id", r.id},
                   {"object", "video"},
                   {"model", model_id},
                   {"status", status_name(r.status)},
                   {"progress", percent_of(job)},
                   {"created_at", r.created_at},
                   {"started_at", unix_or_null(r.started_at)},
                   {"completed_at", unix_or_null(r.completed_at)},
                   {"expires_at", nullptr},
                   {"size", request_field("size")},
                   {"seconds", request_field("seconds")},
                   {"prompt", request_field("prompt")},
                   {"remixed_from_video_id", nullptr},
                   {"error", r.error ? nlohmann::json{{"code", r.error->code}, {"message", r.error->message}}
                                     : nlohmann::json(nullptr)},
                   // Ours:
                   {"frames", request_field("frames")},
                   {"steps", request_field("steps")},
                   {"seed", request_field("seed")},
                   {"video_shift", request_field("video_shift")},
                   {"audio_shift", request_field("audio_shift")},
                   {"workflow", request_field("workflow")},
                   {"references", request_field("references")},
                   {"loras", request_field("loras")},
                   {"prompt_conditions", request_field("prompt_conditions")},
                   {"cancel_requested", job.cancel_requested}};
  for (const char* optional : {"preset", "sigmas", "audio_sigmas", "ref_size"})
    if (q.contains(optional)) j[optional] = q[optional];
  if (r.status == JobStatus::kQueued) j["queue_position"] = job.queue_position;
  if (job.progress) j["progress_detail"] = progress_object(job);
  if (r.status == JobStatus::kCompleted) {
    j["url"] = "/v1/videos/" + r.id + "/content";
    j["timings"] = r.timings;
  }
  return j;
}

}  // namespace orochi::apps::server

// A video job's durable state: what `status.json` in the job's folder holds (the accepted request
// is `request.json` beside it, the outputs `video.mp4` and `video.json`). Written whole, atomically,
// at every change of status (job_store.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"

namespace orochi::apps::server {

// The OpenAI videos API's statuses, and `cancelled` (a DELETE on a queued or running job).
enum class JobStatus { kQueued, kInProgress, kCompleted, kFailed, kCancelled };
const char* status_name(JobStatus status);  // "queued", "in_progress", ...
std::optional<JobStatus> parse_status(const std::string& name);
// completed, failed or cancelled: nothing will change but a deletion.
bool is_finished(JobStatus status);

struct JobError {
  std::string code, message;
};

struct JobRecord {
  std::string id;
  uint64_t sequence = 0;  // creation order across restarts (created_at has 1 s resolution)
  JobStatus status = JobStatus::kQueued;
  int64_t created_at = 0, started_at = 0, completed_at = 0;  // Unix seconds; 0: not yet
  std::optional<JobError> error;
  nlohmann::json timings;  // a completed job's stage times (from the run report); null before
};

nlohmann::json record_json(const JobRecord& record);
// `file` names the source in errors (a status.json that was edited by hand, or is from elsewhere).
Expected<JobRecord> record_from_json(const nlohmann::json& j, const std::string& file);

}  // namespace orochi::apps::server

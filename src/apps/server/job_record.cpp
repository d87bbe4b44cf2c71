#include "apps/server/job_record.h"

namespace orochi::apps::server {
namespace {

constexpr std::pair<JobStatus, const char*> kNames[] = {{JobStatus::kQueued, "queued"},
                                                       {JobStatus::kInProgress, "in_progress"},
                                                       {JobStatus::kCompleted, "completed"},
                                                       {JobStatus::kFailed, "failed"},
                                                       {JobStatus::kCancelled, "cancelled"}};

}  // namespace

const char* status_name(JobStatus status) {
  for (const auto& [s, name] : kNames)
    if (s == status) return name;
  return "unknown";
}

std::optional<JobStatus> parse_status(const std::string& name) {
  for (const auto& [s, n] : kNames)
    if (name == n) return s;
  return std::nullopt;
}

bool is_finished(JobStatus status) {
  return status == JobStatus::kCompleted || status == JobStatus::kFailed || status == JobStatus::kCancelled;
}

nlohmann::json record_json(const JobRecord& r) {
  nlohmann::json j{{"id", r.id},
                   {"sequence", r.sequence},
                   {"status", status_name(r.status)},
                   {"created_at", r.created_at},
                   {"started_at", r.started_at},
                   {"completed_at", r.completed_at},
                   {"timings", r.timings}};
  j["error"] = r.error ? nlohmann::json{{"code", r.error->code}, {"message", r.error->message}} : nlohmann::json(nullptr);
  return j;
}

Expected<JobRecord> record_from_json(const nlohmann::json& j, const std::string& file) {
  auto bad = [&](const std::string& what) { return corrupt_file(file + ": " + what); };
  if (!j.is_object()) return bad("not a JSON object");
  JobRecord r;
  auto field = [&](const char* name) -> const nlohmann::json* {
    auto it = j.find(name);
    return it == j.end() ? nullptr : &*it;
  };
  const nlohmann::json* id = field("id");
  const nlohmann::json* status = field("status");
  if (!id || !id->is_string()) return bad("no string 'id'");
  if (!status || !status->is_string()) return bad("no string 'status'");
  r.id = id->get<std::string>();
  const std::optional<JobStatus> s = parse_status(status->get<std::string>());
  if (!s) return bad("unknown status '" + status->get<std::string>() + "'");
  r.status = *s;
  const nlohmann::json* sequence = field("sequence");
  if (!sequence || !sequence->is_number_unsigned()) return bad("no unsigned 'sequence'");
  r.sequence = sequence->get<uint64_t>();
  for (auto [name, out] : {std::pair{"created_at", &r.created_at}, std::pair{"started_at", &r.started_at},
                           std::pair{"completed_at", &r.completed_at}}) {
    const nlohmann::json* v = field(name);
    if (!v || !v->is_number_integer()) return bad(std::string("no integer '") + name + "'");
    *out = v->get<int64_t>();
  }
  if (const nlohmann::json* e = field("error"); e && !e->is_null()) {
    if (!e->is_object() || !e->contains("code") || !e->contains("message") || !(*e)["code"].is_string() ||
        !(*e)["message"].is_string())
      return bad("'error' is not {code, message}");
    r.error = JobError{(*e)["code"].get<std::string>(), (*e)["message"].get<std::string>()};
  }
  if (const nlohmann::json* t = field("timings")) r.timings = *t;
  return r;
}

}  // namespace orochi::apps::server

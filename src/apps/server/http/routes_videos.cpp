#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

#include "apps/server/engine_job.h"
#include "apps/server/http/http_util.h"
#include "apps/server/job_id.h"
#include "apps/server/http/routes.h"
#include "apps/server/http/upload_receiver.h"
#include "apps/server/video_object.h"

namespace orochi::apps::server {
namespace {

using Json = nlohmann::json;

// A job folder made for a request that is not (yet) accepted: removed unless kept.
class PendingFolder {
 public:
  PendingFolder(const JobStore& store, std::string id) : store_(store), id_(std::move(id)) {}
  ~PendingFolder() {
    if (!kept_) store_.discard(id_);
  }
  void keep() { kept_ = true; }

 private:
  const JobStore& store_;
  std::string id_;
  bool kept_ = false;
};

ApiResult<Json> read_json_body(const httplib::ContentReader& reader) {
  std::string text;
  bool too_big = false;
  const bool read = reader([&](const char* data, size_t size) {
    if (text.size() + size > kJsonBodyMaxBytes) return !(too_big = true);
    text.append(data, size);
    return true;
  });
  if (too_big) return ApiError{413, "body_too_large", "a JSON body is at most 1 MiB", ""};
  if (!read) return bad_request("the body was cut short: send all of Content-Length's bytes");
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    return bad_request(std::string("the body is not valid JSON: ") + e.what());
  }
}

// POST /v1/videos: the request read and checked as the command line is (the fields' limits, the
// conditioning, Engine::plan) before the job is queued; nothing is queued that the engine refuses.
ApiResult<Json> create_video(ServerContext& ctx, const httplib::Request& req, const httplib::ContentReader& reader) {
  const std::string type = req.get_header_value("Content-Type");
  const bool multipart = req.is_multipart_form_data();
  if (!multipart && type.rfind("application/json", 0) != 0)
    return ApiError{415, "unsupported_media_type",
                    "send the request as application/json, or as multipart/form-data with reference files (got '" +
                        type.substr(0, 60) + "')",
                    ""};
  if (ctx.queue.full()) return queue_full_error(ctx.queue.max_queued());
  Expected<std::string> id = ctx.store.create();
  if (!id) return from_status(id.status());
  PendingFolder pending(ctx.store, *id);

  Json body;
  std::vector<UploadedFile> uploads;
  if (multipart) {
    UploadReceiver receiver(ctx.store.inputs_folder(*id));
    const bool read = reader([&](const httplib::MultipartFormData& part) { return receiver.begin(part); },
                             [&](const char* data, size_t size) { return receiver.append(data, size); });
    receiver.finish();
    if (receiver.error()) return *receiver.error();
    if (!read) return bad_request("the multipart body could not be read: check its boundary, its parts and Content-Length");
    body = receiver.fields();
    uploads = receiver.uploads();
  } else {
    ApiResult<Json> parsed = read_json_body(reader);
    if (!parsed) return parsed.error();
    body = std::move(*parsed);
  }

  ApiResult<VideoRequest> asked = parse_video_request(body, uploads, ctx.rules);
  if (!asked) return asked.error();
  if (Status s = engine::Engine::check_conditioning(ctx.source, asked->request); !s.is_ok()) return from_status(s);
  Expected<engine::RunPlan> plan = [&] {
    std::lock_guard<std::mutex> lock(ctx.plan_mutex);
    return ctx.engine.plan(asked->request);
  }();
  if (!plan) return from_status(plan.status());
  const Json accepted = accepted_request_json(*asked, plan->request, plan->workflow, ctx.rules.prompt_conditions);
  if (Status s = ctx.store.write_request(*id, accepted); !s.is_ok()) return from_status(s);
  ApiResult<JobSnapshot> queued =
      ctx.queue.submit(*id, accepted, make_engine_job(ctx.engine, std::move(plan).value(), ctx.store.video_path(*id),
                                                      ctx.config.crf));
  if (!queued) return queued.error();
  pending.keep();
  return video_object(*queued, ctx.rules.model_id);
}

ApiResult<Json> list_videos(const ServerContext& ctx, const httplib::Request& req) {
  int64_t limit = 20;
  if (req.has_param("limit")) {
    const std::string text = req.get_param_value("limit");
    try {
      size_t used = 0;
      limit = std::stoll(text, &used);
      if (used != text.size()) limit = 0;
    } catch (const std::exception&) {
      limit = 0;
    }
    if (limit < 1 || limit > 100) return bad_request("limit must be 1 to 100, got '" + text.substr(0, 20) + "'", "limit");
  }
  const std::string order = req.has_param("order") ? req.get_param_value("order") : "desc";
  if (order != "asc" && order != "desc") return bad_request("order must be asc or desc", "order");
  std::vector<JobSnapshot> jobs = ctx.queue.list();  // oldest first
  if (order == "desc") std::reverse(jobs.begin(), jobs.end());
  size_t begin = 0;
  if (req.has_param("after")) {
    const std::string after = req.get_param_value("after");
    auto it = std::find_if(jobs.begin(), jobs.end(), [&](const JobSnapshot& j) { return j.record.id == after; });
    if (it == jobs.end()) return bad_request("after names no video on this server: pass the last id of the previous page", "after");
    begin = static_cast<size_t>(it - jobs.begin()) + 1;
  }
  const size_t end = std::min(jobs.size(), begin + static_cast<size_t>(limit));
  Json data = Json::array();
  for (size_t i = begin; i < end; ++i) data.push_back(video_object(jobs[i], ctx.rules.model_id));
  Json out{{"object", "list"}, {"data", data}, {"has_more", end < jobs.size()}};
  out["first_id"] = data.empty() ? Json(nullptr) : data.front()["id"];
  out["last_id"] = data.empty() ? Json(nullptr) : data.back()["id"];
  return out;
}

ApiResult<JobSnapshot> find(const ServerContext& ctx, const std::string& id) {
  if (!is_valid_job_id(id)) return unknown_video(id);
  std::optional<JobSnapshot> job = ctx.queue.get(id);
  if (!job) return unknown_video(id);
  return *job;
}

// GET /v1/videos/{id}/content: the MP4, whole or one byte range (206), with Accept-Ranges.
void send_content(const ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
                  const httplib::Ranges& ranges) {
  ApiResult<JobSnapshot> job = find(ctx, req.matches[1]);
  if (!job) return send_error(res, job.error());
  if (req.has_param("variant") && req.get_param_value("variant") != "video")
    return send_error(res, bad_request("variant: this server has the video only (variant=video)", "variant"));
  if (job->record.status != JobStatus::kCompleted)
    return send_error(res, {409, "video_not_ready",
                            std::string("the video is ") + status_name(job->record.status) +
                                "; its content exists once its status is completed (GET /v1/videos/" + job->record.id +
                                " or its /events)",
                            ""});
  const std::string path = ctx.store.video_path(job->record.id);
  auto file = std::make_shared<std::ifstream>(path, std::ios::binary);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (!*file || ec) return send_error(res, {410, "video_gone", "the video file of this job is gone from the jobs folder", ""});
  bool unsatisfiable = false;
  const std::optional<std::pair<uint64_t, uint64_t>> range = byte_range(ranges, size, unsatisfiable);
  res.set_header("Accept-Ranges", "bytes");
  res.set_header("Content-Disposition", "inline; filename=\"" + job->record.id + ".mp4\"");
  if (unsatisfiable) {
    res.set_header("Content-Range", "bytes */" + std::to_string(size));
    return send_error(res, {416, "range_not_satisfiable",
                            "the range is outside the video's " + std::to_string(size) + " bytes", ""});
  }
  const uint64_t first = range ? range->first : 0, length = range ? range->second - range->first + 1 : size;
  if (range) {
    res.status = 206;
    res.set_header("Content-Range", "bytes " + std::to_string(range->first) + "-" + std::to_string(range->second) + "/" +
                                        std::to_string(size));
  } else {
    res.status = 200;
  }
  res.set_content_provider(length, "video/mp4", [file, first](size_t offset, size_t want, httplib::DataSink& sink) {
    char buffer[64 * 1024];
    file->seekg(static_cast<std::streamoff>(first + offset));
    const size_t n = std::min(want, sizeof buffer);
    file->read(buffer, static_cast<std::streamsize>(n));
    const std::streamsize got = file->gcount();
    return got > 0 && sink.write(buffer, static_cast<size_t>(got));
  });
}

std::string sse(const std::string& type, const std::string& data, uint64_t sequence) {
  std::string out;
  if (sequence) out += "id: " + std::to_string(sequence) + "\n";
  return out + "event: " + type + "\ndata: " + data + "\n\n";
}

// GET /v1/videos/{id}/events: the job's status now, then its events as they come, until it finishes.
void stream_events(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  ApiResult<JobSnapshot> job = find(ctx, req.matches[1]);
  if (!job) return send_error(res, job.error());
  if (ctx.event_streams.fetch_add(1) >= kEventStreamsMax) {
    ctx.event_streams.fetch_sub(1);
    return send_error(res, {429, "too_many_streams",
                            "this server has " + std::to_string(kEventStreamsMax) +
                                " event streams open; poll GET /v1/videos/{id} instead, or retry later",
                            ""});
  }
  struct Stream {
    std::string id;
    uint64_t after = 0;
    bool started = false, ended = false;
  };
  auto stream = std::make_shared<Stream>();
  stream->id = job->record.id;
  stream->after = ctx.events.latest();  // before the snapshot: nothing between them is missed
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [&ctx, stream](size_t, httplib::DataSink& sink) {
        if (stream->ended || ctx.stopping) {
          sink.done();
          return true;
        }
        std::string out;
        if (!stream->started) {
          stream->started = true;
          std::optional<JobSnapshot> now = ctx.queue.get(stream->id);
          if (!now) {
            sink.done();
            return true;
          }
          const bool finished = is_finished(now->record.status);
          out = sse(finished ? "done" : "status", json_text(video_object(*now, ctx.rules.model_id)), 0);
          if (now->progress) out += sse("progress", json_text(progress_object(*now)), 0);
          stream->ended = finished;
        } else {
          const std::vector<JobEvent> events = ctx.events.wait(stream->id, stream->after, std::chrono::seconds(10));
          for (const JobEvent& e : events) {
            out += sse(e.type, e.data, e.sequence);
            stream->after = e.sequence;
            if (e.type == "done" || e.type == "deleted") stream->ended = true;
          }
          if (events.empty()) {
            std::optional<JobSnapshot> now = ctx.queue.get(stream->id);
            if (!now || is_finished(now->record.status)) {  // finished while no event was kept for it
              if (now) out = sse("done", json_text(video_object(*now, ctx.rules.model_id)), 0);
              stream->ended = true;
            } else {
              out = ": keep-alive\n\n";
            }
          }
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;  // the client left
        if (stream->ended) sink.done();
        return true;
      },
      [&ctx](bool) { ctx.event_streams.fetch_sub(1); });
}

}  // namespace

void add_video_routes(httplib::Server& http, ServerContext& ctx) {
  http.Post("/v1/videos", [&ctx](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    take_ranges(req);
    ApiResult<Json> created = create_video(ctx, req, reader);
    if (!created) return send_error(res, created.error());
    send_json(res, 200, *created);
  });
  http.Get("/v1/videos", [&ctx](const httplib::Request& req, httplib::Response& res) {
    take_ranges(req);
    ApiResult<Json> listed = list_videos(ctx, req);
    if (!listed) return send_error(res, listed.error());
    send_json(res, 200, *listed);
  });
  http.Get(R"(/v1/videos/([^/]+))", [&ctx](const httplib::Request& req, httplib::Response& res) {
    take_ranges(req);
    ApiResult<JobSnapshot> job = find(ctx, req.matches[1]);
    if (!job) return send_error(res, job.error());
    send_json(res, 200, video_object(*job, ctx.rules.model_id));
  });
  http.Get(R"(/v1/videos/([^/]+)/content)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    const httplib::Ranges ranges = take_ranges(req);
    send_content(ctx, req, res, ranges);
  });
  http.Get(R"(/v1/videos/([^/]+)/events)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    take_ranges(req);
    stream_events(ctx, req, res);
  });
  // The content-reader form, so that a DELETE's body (it has none) is never waited for.
  http.Delete(R"(/v1/videos/([^/]+))",
              [&ctx](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader&) {
                take_ranges(req);
                const std::string id = req.matches[1];
                if (!is_valid_job_id(id)) return send_error(res, unknown_video(id));
                ApiResult<JobQueue::Removal> removed = ctx.queue.cancel_or_delete(id);
                if (!removed) return send_error(res, removed.error());
                if (removed->deleted) return send_json(res, 200, {{"id", id}, {"object", "video.deleted"}, {"deleted", true}});
                send_json(res, 200, video_object(removed->snapshot, ctx.rules.model_id));
              });
}

}  // namespace orochi::apps::server

#include "apps/server/job_queue.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace orochi::apps::server {
namespace {

// The job's share done when a stage has done `done` of `total`: the denoiser's steps are most of the
// time; the conditioning encodes (fl2va keyframes, ref2va references) come before them, the decodes
// and the MP4 share the last tenth.
int percent_of(const std::string& stage, int64_t done, int64_t total, int before) {
  struct Span {
    const char* stage;
    double from, to;
  };
  static constexpr Span kSpans[] = {{"keyframe encode", 0, 2},
                                    {"reference encode", 0, 2},
                                    {"denoise", 2, 90},
                                    {"video decode", 90, 97},
                                    {"audio decode", 97, 98},
                                    {"mp4 encode", 98, 99}};
  for (const Span& s : kSpans)
    if (stage == s.stage) {
      const double f = total > 0 ? static_cast<double>(std::clamp<int64_t>(done, 0, total)) / static_cast<double>(total) : 0;
      return std::max(before, static_cast<int>(s.from + (s.to - s.from) * f));
    }
  return before;
}

}  // namespace

ApiError queue_full_error(size_t max_queued) {
  return ApiError{429, "queue_full",
                  "the queue holds " + std::to_string(max_queued) + " waiting jobs, its bound (--queue-max " +
                      std::to_string(max_queued) + "); retry once one has started (GET /v1/videos shows the queue)",
                  ""};
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

JobQueue::JobQueue(const JobStore& store, size_t max_queued, OnChange on_change)
    : store_(store), max_queued_(max_queued), on_change_(std::move(on_change)) {}

JobQueue::~JobQueue() { stop(); }

void JobQueue::restore(std::vector<JobStore::Job> jobs) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (JobStore::Job& j : jobs) {
    auto job = std::make_unique<Job>();
    job->record = std::move(j.record);
    job->request = std::move(j.request);
    next_sequence_ = std::max(next_sequence_, job->record.sequence + 1);
    const std::string id = job->record.id;
    jobs_[id] = std::move(job);
  }
}

void JobQueue::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!worker_.joinable() && !stopping_) worker_ = std::thread([this] { worker(); });
}

void JobQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    if (running_) jobs_.at(*running_)->cancel = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

bool JobQueue::full() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_.size() >= max_queued_;
}

ApiResult<JobSnapshot> JobQueue::submit(const std::string& id, nlohmann::json request, std::unique_ptr<JobWork> work) {
  JobSnapshot snap;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return ApiError{503, "server_stopping", "the server is stopping; submit the job again after it restarts", ""};
    if (queued_.size() >= max_queued_) return queue_full_error(max_queued_);
    auto job = std::make_unique<Job>();
    job->record.id = id;
    job->record.sequence = next_sequence_++;
    job->record.status = JobStatus::kQueued;
    job->record.created_at = unix_now();
    job->request = std::move(request);
    job->work = std::move(work);
    if (Status s = persist_locked(*job); !s.is_ok()) return from_status(s);
    snap = snapshot_locked(*job);
    jobs_[id] = std::move(job);
    queued_.push_back(id);
    snap.queue_position = queued_.size();
    notify(snap, "status");
  }
  wake_.notify_all();
  return snap;
}

std::optional<JobSnapshot> JobQueue::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return snapshot_locked(*it->second);
}

std::vector<JobSnapshot> JobQueue::list() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<JobSnapshot> out;
  out.reserve(jobs_.size());
  for (const auto& [id, job] : jobs_) out.push_back(snapshot_locked(*job));
  std::sort(out.begin(), out.end(),
            [](const JobSnapshot& a, const JobSnapshot& b) { return a.record.sequence < b.record.sequence; });
  return out;
}

JobQueue::Counts JobQueue::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Counts c;
  c.queued = queued_.size();
  c.running = running_ ? 1 : 0;
  c.finished = jobs_.size() - c.queued - c.running;
  return c;
}

ApiResult<JobQueue::Removal> JobQueue::cancel_or_delete(const std::string& id) {
  Removal out;
  std::string kind;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return unknown_video(id);
    Job& job = *it->second;
    if (job.record.status == JobStatus::kQueued) {
      queued_.erase(std::find(queued_.begin(), queued_.end(), id));
      job.work.reset();
      finish_locked(job, JobStatus::kCancelled, JobError{"cancelled", "cancelled while queued (DELETE /v1/videos/" + id + ")"},
                    nullptr);
      kind = "done";
    } else if (job.record.status == JobStatus::kInProgress) {
      job.cancel = true;  // the engine stops at its next step or stage; the worker finishes the job
      kind = "status";
    } else {
      if (Status s = store_.remove(id); !s.is_ok()) return from_status(s);
      out.deleted = true;
      kind = "deleted";
    }
    out.snapshot = snapshot_locked(job);
    if (out.deleted) jobs_.erase(it);
    notify(out.snapshot, kind);
  }
  return out;
}

void JobQueue::worker() {
  while (true) {
    std::string id;
    Job* job = nullptr;
    std::unique_ptr<JobWork> work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
      if (stopping_) return;
      id = queued_.front();
      queued_.pop_front();
      running_ = id;
      job = jobs_.at(id).get();
      work = std::move(job->work);
      job->record.status = JobStatus::kInProgress;
      job->record.started_at = unix_now();
      job->progress = LiveProgress{};
      job->progress->stage = "preparing";
      if (Status s = persist_locked(*job); !s.is_ok())
        std::fprintf(stderr, "orochi serve: %s: %s\n", id.c_str(), s.to_string().c_str());
      notify(snapshot_locked(*job), "status");
    }
    Expected<nlohmann::json> ran = work->run([&](const StageProgress& p) { on_progress(id, p); }, job->cancel);
    work.reset();  // the plan, its buffers and references go before the next job
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (ran) {
        finish_locked(*job, JobStatus::kCompleted, std::nullopt, std::move(ran).value());
      } else if (stopping_) {
        finish_locked(*job, JobStatus::kFailed,
                      JobError{"interrupted", "the server stopped while this job was in progress: submit it again"}, nullptr);
      } else if (ran.status().code() == ErrorCode::kCancelled || job->cancel) {
        finish_locked(*job, JobStatus::kCancelled,
                      JobError{"cancelled", "cancelled while in progress (DELETE /v1/videos/" + id + "): " +
                                                ran.status().message()},
                      nullptr);
      } else {
        const ApiError e = from_status(ran.status());
        finish_locked(*job, JobStatus::kFailed, JobError{e.code, e.message}, nullptr);
      }
      running_.reset();
      notify(snapshot_locked(*job), "done");
    }
  }
}

void JobQueue::on_progress(const std::string& id, const StageProgress& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  {
    Job& job = *jobs_.at(id);
    if (!job.progress) job.progress = LiveProgress{};
    LiveProgress& live = *job.progress;
    if (live.stage != p.stage) {
      const int percent = live.percent;
      live = LiveProgress{};
      live.stage = p.stage;
      live.percent = percent;
      job.stage_seconds = 0;
    }
    if (p.done > live.done) {
      job.stage_seconds += p.seconds;
      live.last_seconds = p.seconds;
    }
    live.done = p.done;
    live.total = p.total;
    live.mean_seconds = live.done > 0 ? job.stage_seconds / static_cast<double>(live.done) : 0;
    live.eta_seconds = live.mean_seconds * static_cast<double>(std::max<int64_t>(0, live.total - live.done));
    live.percent = percent_of(live.stage, live.done, live.total, live.percent);
    notify(snapshot_locked(job), "progress");
  }
}

JobSnapshot JobQueue::snapshot_locked(const Job& job) const {
  JobSnapshot s;
  s.record = job.record;
  s.request = job.request;
  s.progress = job.record.status == JobStatus::kInProgress ? job.progress : std::nullopt;
  s.cancel_requested = job.cancel.load();
  if (job.record.status == JobStatus::kQueued) {
    auto it = std::find(queued_.begin(), queued_.end(), job.record.id);
    if (it != queued_.end()) s.queue_position = static_cast<size_t>(it - queued_.begin()) + 1;
  }
  return s;
}

Status JobQueue::persist_locked(const Job& job) const { return store_.write_status(job.record); }

void JobQueue::finish_locked(Job& job, JobStatus status, std::optional<JobError> error, nlohmann::json timings) {
  job.record.status = status;
  job.record.completed_at = unix_now();
  job.record.error = std::move(error);
  job.record.timings = std::move(timings);
  job.progress.reset();
  // A record that cannot be written stays right in memory; the next start would mark the job
  // interrupted. Said on the server's log, where its operator looks.
  if (Status s = persist_locked(job); !s.is_ok())
    std::fprintf(stderr, "orochi serve: %s: %s\n", job.record.id.c_str(), s.to_string().c_str());
}

void JobQueue::notify(const JobSnapshot& snapshot, const std::string& kind) const {
  if (on_change_) on_change_(snapshot, kind);
}

}  // namespace orochi::apps::server

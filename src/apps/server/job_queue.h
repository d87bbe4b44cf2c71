// The jobs of a server: a table of every job (finished ones included), a bounded queue of those
// waiting, and one worker thread that runs them one at a time on the one engine. One at a time:
// a video request fills the GPU by itself (tens of thousands of packed rows per step), so running
// two side by side or batching them only splits the same GPU time and adds the memory of both; the
// queue gives each its whole GPU in turn, and the model stays loaded between them.
//
// Every status change is written to the job's status.json (JobStore) before it is shown, and
// reported through on_change (the events stream). Cancelling a queued job takes it off the queue at
// once; a running job gets its cancel flag set, which the engine reads at the next step or stage.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "apps/server/api_error.h"
#include "apps/server/job_record.h"
#include "apps/server/job_store.h"

namespace orochi::apps::server {

// One unit of progress of a running job (the engine's stage callbacks: denoise steps, decode chunks).
struct StageProgress {
  std::string stage;
  int64_t done = 0, total = 0;
  double seconds = 0;  // the last unit's time
};

// What a job's work does on the worker: the engine's run and the outputs written into the job's
// folder. The timings it returns go into the job's record.
class JobWork {
 public:
  virtual ~JobWork() = default;
  virtual Expected<nlohmann::json> run(const std::function<void(const StageProgress&)>& progress,
                                       const std::atomic<bool>& cancel) = 0;
};

// A running job's progress as the API shows it.
struct LiveProgress {
  std::string stage;
  int64_t done = 0, total = 0;
  double last_seconds = 0;  // the last step's (or chunk's) time
  double mean_seconds = 0;  // this stage's mean per unit
  double eta_seconds = 0;   // the rest of this stage at that mean
  int percent = 0;          // the whole job: denoise to 90, the decodes and the MP4 after
};

struct JobSnapshot {
  JobRecord record;
  nlohmann::json request;
  std::optional<LiveProgress> progress;  // while in progress
  bool cancel_requested = false;
  size_t queue_position = 0;  // 1 for the next to run; 0 when not queued
};

class JobQueue {
 public:
  // Called after every change, under the queue's lock so that events keep their order (it must not
  // call back into the queue): "status" (a status change or a cancel request), "progress", "done"
  // (finished; the last), "deleted".
  using OnChange = std::function<void(const JobSnapshot&, const std::string& kind)>;

  JobQueue(const JobStore& store, size_t max_queued, OnChange on_change);
  ~JobQueue();  // stop()
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // The jobs a restart found (all finished: JobStore::recover), before start().
  void restore(std::vector<JobStore::Job> jobs);
  void start();
  // Cancels the running job, drops the queued ones from memory (their folders stay: the next start
  // marks them failed as interrupted) and joins the worker.
  void stop();

  size_t max_queued() const { return max_queued_; }
  bool full() const;
  // Queues a job whose folder, request.json and inputs the caller has written: writes its status
  // (queued) and queues it, or 429 when the queue is full (the caller then discards the folder).
  ApiResult<JobSnapshot> submit(const std::string& id, nlohmann::json request, std::unique_ptr<JobWork> work);

  std::optional<JobSnapshot> get(const std::string& id) const;
  // In creation order.
  std::vector<JobSnapshot> list() const;
  struct Counts {
    size_t queued = 0, running = 0, finished = 0;
  };
  Counts counts() const;

  // DELETE: a queued job is cancelled now; a running one is asked to stop (cancel_requested) and
  // turns cancelled at the engine's next step; a finished one is deleted with its folder
  // (`deleted` set, the snapshot is its last state).
  struct Removal {
    JobSnapshot snapshot;
    bool deleted = false;
  };
  ApiResult<Removal> cancel_or_delete(const std::string& id);

 private:
  struct Job {
    JobRecord record;
    nlohmann::json request;
    std::unique_ptr<JobWork> work;  // until it runs
    std::optional<LiveProgress> progress;
    double stage_seconds = 0;       // the current stage's units' times, summed
    std::atomic<bool> cancel{false};
  };

  void worker();
  void run_one(const std::string& id, Job& job);
  void on_progress(const std::string& id, const StageProgress& p);
  JobSnapshot snapshot_locked(const Job& job) const;
  Status persist_locked(const Job& job) const;  // status.json
  void finish_locked(Job& job, JobStatus status, std::optional<JobError> error, nlohmann::json timings);
  void notify(const JobSnapshot& snapshot, const std::string& kind) const;

  const JobStore& store_;
  const size_t max_queued_;
  OnChange on_change_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, std::unique_ptr<Job>> jobs_;
  std::deque<std::string> queued_;
  std::optional<std::string> running_;
  uint64_t next_sequence_ = 1;
  bool stopping_ = false;
  std::thread worker_;
};

// 429 for a full queue, with its bound and what to do.
ApiError queue_full_error(size_t max_queued);

// Unix seconds now.
int64_t unix_now();

}  // namespace orochi::apps::server

// One worker thread per rank (a GPU of this process, or an in-process CPU rank), started once and
// kept: the fan-out under dist::ParallelContext. A job runs fn(rank) on every worker at once and
// waits for all of them; every worker's error comes back as its Status, never as std::terminate.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"

namespace orochi::dist {

using RankFn = std::function<Status(int rank)>;

// fn(rank), with an escaping exception (a failed OROCHI_CHECK) turned into that rank's kInternal.
Status call_rank(const RankFn& fn, int rank);

class Workers {
 public:
  explicit Workers(int count);
  ~Workers();  // joins the threads (they are idle between jobs)
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }
  // fn(rank) on workers 0..count-1 concurrently; returns when all are done, each rank's Status.
  // One job at a time (a second caller waits). Called from one of these workers it would wait for
  // itself: every rank gets kInternal instead.
  std::vector<Status> run(int count, const RankFn& fn);
  std::vector<Status> run(const RankFn& fn) { return run(size(), fn); }

 private:
  void loop(int rank);

  std::mutex job_mutex_;  // one run() at a time
  std::mutex mu_;         // everything below
  std::condition_variable start_, done_;
  uint64_t generation_ = 0;  // one per job
  int count_ = 0, pending_ = 0;
  const RankFn* fn_ = nullptr;
  std::vector<Status>* results_ = nullptr;
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

}  // namespace orochi::dist

#include "dist/workers.h"

#include <exception>
#include <string>

namespace orochi::dist {
namespace {

// The pool whose worker this thread is (null elsewhere): a job started from inside a job of the
// same pool would wait for its own thread.
thread_local const Workers* current_pool = nullptr;

}  // namespace

Status call_rank(const RankFn& fn, int rank) {
  try {
    return fn(rank);
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, "rank " + std::to_string(rank) + ": " + e.what());
  } catch (...) {
    return Status(ErrorCode::kInternal, "rank " + std::to_string(rank) + ": an unknown exception");
  }
}

Workers::Workers(int count) {
  threads_.reserve(count > 0 ? count : 0);
  for (int rank = 0; rank < count; ++rank) threads_.emplace_back([this, rank] { loop(rank); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::vector<Status> Workers::run(int count, const RankFn& fn) {
  if (count < 0 || count > size())
    return std::vector<Status>(count > 0 ? count : 0,
                               Status(ErrorCode::kInternal, "a job for " + std::to_string(count) + " ranks on " +
                                                                std::to_string(size()) + " workers"));
  if (current_pool == this)
    return std::vector<Status>(count, Status(ErrorCode::kInternal, "a job started from inside a job of the same workers"));
  std::vector<Status> results(count);
  if (count == 0) return results;
  std::lock_guard<std::mutex> job(job_mutex_);
  std::unique_lock<std::mutex> lock(mu_);
  fn_ = &fn;
  results_ = &results;
  count_ = pending_ = count;
  ++generation_;
  start_.notify_all();
  done_.wait(lock, [&] { return pending_ == 0; });
  fn_ = nullptr;
  results_ = nullptr;
  return results;
}

void Workers::loop(int rank) {
  current_pool = this;
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    start_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (rank >= count_) continue;  // this job needs fewer workers
    const RankFn* fn = fn_;
    lock.unlock();
    Status s = call_rank(*fn, rank);
    lock.lock();
    (*results_)[rank] = std::move(s);
    if (--pending_ == 0) done_.notify_all();
  }
}

}  // namespace orochi::dist

// The watchdog: every kWatchdogPeriod it drops completed operations and aborts the group when one
// stayed pending past the deadline, when a GPU reports an error, or when NCCL reports an
// asynchronous error (a failed peer or link).
#include <utility>

#include "backends/cuda/cuda_check.h"
#include "dist/deadline_message.h"
#include "dist/nccl/nccl_comm.h"
#include "dist/nccl/nccl_errors.h"

namespace orochi::dist {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kWatchdogPeriod{50};

}  // namespace

void NcclGroup::watchdog_loop() {
  std::unique_lock lock(watchdog_mutex_);
  while (!stop_watchdog_) {
    watchdog_wake_.wait_for(lock, kWatchdogPeriod, [this] { return stop_watchdog_; });
    if (stop_watchdog_ || aborting_.load()) continue;
    lock.unlock();  // the destructor must be able to ask us to stop while we inspect
    Status problem = inspect();
    if (!problem.is_ok()) abort_with(std::move(problem));
    lock.lock();
  }
}

Status NcclGroup::inspect() {
  const auto now = Clock::now();
  int stuck_rank = -1;
  PendingOp stuck;
  milliseconds oldest{-1};
  for (auto& member : members_) {
    Member& m = *member;
    OROCHI_RETURN_IF_ERROR(cuda::cuda_status(cudaSetDevice(m.device), "cudaSetDevice"));
    {
      std::lock_guard lock(m.pending_mutex);
      OROCHI_RETURN_IF_ERROR(reap(m));
      if (!m.pending.empty()) {
        const auto age = std::chrono::duration_cast<milliseconds>(now - m.pending.front().since);
        if (age > oldest) {
          oldest = age;
          stuck = m.pending.front();
          stuck_rank = m.rank;
        }
      }
    }
    std::lock_guard lock(m.nccl_mutex);
    ncclResult_t state = ncclSuccess;
    if (m.comm != nullptr && ncclCommGetAsyncError(m.comm, &state) == ncclSuccess && state != ncclSuccess &&
        state != ncclInProgress)
      return nccl_status(state, prefix() + "the communicator of rank " + std::to_string(m.rank) + " (GPU " +
                                    std::to_string(m.device) + ")");
  }
  if (stuck_rank >= 0 && oldest > options_.deadline)
    return deadline_exceeded(deadline_message(stuck_rank, stuck, oldest));
  return Status::ok();
}

Status NcclGroup::reap(Member& m) {
  while (!m.pending.empty() && m.pending.front().event != nullptr) {
    const PendingOp& front = m.pending.front();
    const cudaError_t query = cudaEventQuery(front.event);
    if (query == cudaErrorNotReady) break;
    if (query != cudaSuccess)
      return cuda::cuda_status(query, "cudaEventQuery")
          .with_context(prefix() + "rank " + std::to_string(m.rank) + " (GPU " + std::to_string(m.device) + ") " +
                        front.op + " call #" + std::to_string(front.call) + "; the GPU may be lost");
    m.free_events.push_back(front.event);
    m.pending.pop_front();
  }
  return Status::ok();
}

std::string NcclGroup::deadline_message(int stuck_rank, const PendingOp& op, milliseconds age) const {
  std::vector<int> missing, present;
  for (const auto& m : members_) (m->arrived.load() <= op.call ? missing : present).push_back(m->rank);
  std::string message = deadline_head(options_, size(), op.op, op.call, " (pending " + std::to_string(age.count()) + " ms)");
  if (!missing.empty()) {
    message += missing_ranks(missing, present) + ". A rank is stalled, crashed or took another code path, or its GPU is lost";
  } else {
    message += "every rank enqueued it, but it is still running on rank " + std::to_string(stuck_rank) + "'s GPU " +
               std::to_string(members_[stuck_rank]->device) + ". A GPU may be lost or hung";
  }
  return message + "; " + kDeadlineAdvice;
}

bool NcclGroup::drain(milliseconds limit) {
  const auto give_up = Clock::now() + limit;
  for (auto& m : members_) {
    if (cudaSetDevice(m->device) != cudaSuccess) return false;
    std::lock_guard lock(m->pending_mutex);
    for (const PendingOp& op : m->pending) {
      if (op.event == nullptr) return false;  // an enqueue that failed midway
      while (true) {
        const cudaError_t query = cudaEventQuery(op.event);
        if (query == cudaSuccess) break;
        if (query != cudaErrorNotReady || Clock::now() > give_up) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    m->pending.clear();
  }
  return true;
}

}  // namespace orochi::dist

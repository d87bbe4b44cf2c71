// How one member operation runs: fault injection, call numbering, the pending record the watchdog
// times, the NCCL call (polled until NCCL has enqueued it), the completion event; and the waits.
#include <utility>

#include "backends/cuda/cuda_check.h"
#include "dist/nccl/nccl_comm.h"
#include "dist/nccl/nccl_errors.h"
#include "dist/nccl/poll_pause.h"

namespace orochi::dist {

Status NcclGroup::usable(const Member& m) {
  if (!m.killed.is_ok()) return m.killed;
  if (aborting_.load()) return abort_error();
  return Status::ok();
}

Status NcclGroup::run_op(int rank, const char* op, const std::function<Status(Member&)>& enqueue) {
  Member& m = *members_[rank];
  OROCHI_RETURN_IF_ERROR(usable(m));
  const int64_t call = m.arrived.load();
  const FaultInjection& fault = options_.fault;
  if (fault.kind != FaultInjection::Kind::kNone && fault.rank == rank && fault.at_call == call) {
    if (fault.kind == FaultInjection::Kind::kKill) {
      m.killed = Status(ErrorCode::kInternal, "rank " + std::to_string(rank) + " of comm group '" + options_.name +
                                                  "' was killed by fault injection at " + op + " call #" +
                                                  std::to_string(call));
      return m.killed;
    }
    // kStall: this rank never arrives; its peers' deadline ends the wait. Its own deadline is the
    // fallback for peers that never call (a group of one).
    const auto since = std::chrono::steady_clock::now();
    while (!aborting_.load()) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since);
      if (waited > options_.deadline)
        abort_with(deadline_exceeded(deadline_message(rank, {op, call, since, nullptr}, waited)));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return abort_error();
  }

  Status status = cuda::cuda_status(cudaSetDevice(m.device), "cudaSetDevice");
  if (status.is_ok()) {
    {
      std::lock_guard lock(m.pending_mutex);
      m.pending.push_back({op, call, std::chrono::steady_clock::now(), nullptr});
    }
    m.arrived.store(call + 1);
    status = enqueue(m);
    if (status.is_ok()) status = record_completion(m);
  }
  if (status.is_ok()) return status;
  if (aborting_.load()) return abort_error();
  // The peers would wait for this rank until the deadline; fail them now with the cause.
  abort_with(
      status.with_context(prefix() + "rank " + std::to_string(rank) + " " + op + " call #" + std::to_string(call)));
  return abort_error();
}

Status NcclGroup::reject(int rank, const char* op, const std::string& why) {
  Member& m = *members_[rank];
  OROCHI_RETURN_IF_ERROR(usable(m));
  abort_with(
      invalid_argument(prefix() + "rank " + std::to_string(rank) + " called " + op + " with bad arguments: " + why));
  return abort_error();
}

Status NcclGroup::call_nccl(Member& m, const char* what, const std::function<ncclResult_t(ncclComm_t)>& call) {
  ncclResult_t state = ncclSuccess;
  bool aborted = false;
  {
    std::lock_guard lock(m.nccl_mutex);
    if (m.comm == nullptr)
      aborted = true;
    else
      state = call(m.comm);
  }
  // Non-blocking communicators return ncclInProgress until NCCL's helper thread has put the work
  // on the stream; anything enqueued on the stream before that would run ahead of it.
  PollPause pause;
  while (!aborted && state == ncclInProgress) {
    pause.wait();
    std::lock_guard lock(m.nccl_mutex);  // released between polls, so the watchdog can abort
    if (m.comm == nullptr || aborting_.load()) {
      aborted = true;
      break;
    }
    const ncclResult_t query = ncclCommGetAsyncError(m.comm, &state);
    if (query != ncclSuccess) state = query;
  }
  if (aborted || aborting_.load()) return abort_error();
  return nccl_status(state, what);
}

Status NcclGroup::record_completion(Member& m) {
  std::lock_guard lock(m.pending_mutex);
  OROCHI_RETURN_IF_ERROR(reap(m));
  if (m.free_events.empty()) {
    cudaEvent_t event = nullptr;
    OROCHI_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    m.all_events.push_back(event);
    m.free_events.push_back(event);
  }
  cudaEvent_t event = m.free_events.back();
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(event, m.stream));
  m.free_events.pop_back();
  m.pending.back().event = event;  // the entry run_op pushed: the watchdog never drops a null event
  return Status::ok();
}

Status NcclGroup::wait_event(Member& m, cudaEvent_t event) {
  PollPause pause;
  while (true) {
    if (aborting_.load()) return abort_error();
    const cudaError_t query = cudaEventQuery(event);
    if (query == cudaSuccess) return Status::ok();
    if (query != cudaErrorNotReady) {
      abort_with(cuda::cuda_status(query, "cudaEventQuery")
                     .with_context(prefix() + "rank " + std::to_string(m.rank) + " (GPU " + std::to_string(m.device) +
                                   ") waiting for its operations; the GPU may be lost"));
      return abort_error();
    }
    pause.wait();
  }
}

Status NcclGroup::synchronize(int rank) {
  Member& m = *members_[rank];
  OROCHI_RETURN_IF_ERROR(usable(m));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(m.device));
  cudaEvent_t last = nullptr;
  {
    std::lock_guard lock(m.pending_mutex);
    if (!m.pending.empty()) last = m.pending.back().event;
  }
  // Only this thread records events, so `last` cannot be reused while it waits, even if the
  // watchdog returns it to the pool meanwhile.
  if (last != nullptr) OROCHI_RETURN_IF_ERROR(wait_event(m, last));
  {
    std::lock_guard lock(m.pending_mutex);
    (void)reap(m);  // `last` completed; a device error would be reported by the next wait
  }
  return usable(m);
}

}  // namespace orochi::dist

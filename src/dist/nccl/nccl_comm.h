// NCCL collectives among the GPUs of this process (DESIGN.md: one process per host, one worker
// thread per GPU). A group holds one communicator per GPU; member(rank) is the Comm that GPU's
// worker thread uses. Operations enqueue on the member's stream and return.
//
// Deadlines: every enqueued operation is timed by a CUDA event. A watchdog thread (one per group)
// aborts every communicator of the group (ncclCommAbort) once an operation stays pending longer
// than CommOptions::deadline; from then on every member call fails with the one recorded error,
// which names the group, the operation, its call number and the ranks that never enqueued it.
// The deadline counts from the enqueue, so it includes time queued behind earlier work on the
// stream. A rank's bad arguments or a failed NCCL or CUDA call abort the group at once with that
// error (the peers would only time out); a rank killed by fault injection returns kInternal.
//
// The communicators are non-blocking (ncclConfig_t::blocking = 0): no NCCL call waits for a peer
// on the host, so a member thread never holds a communicator while a peer is missing, and the
// watchdog can always abort. The cost is that NCCL finishes each enqueue on a helper thread; the
// member waits for that (host side only) before returning.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/comm.h"

namespace orochi::dist {

class NcclGroup : public std::enable_shared_from_this<NcclGroup> {
 public:
  // One communicator per device of this process; rank i drives devices[i] and enqueues on
  // streams[i] (the caller owns the streams; the legacy default stream is refused). Fails with
  // advice on a bad device list, and with kDeadline when NCCL initialization hangs (limit: the
  // larger of options.deadline and 120 s, as init on many GPUs takes seconds).
  static Expected<std::shared_ptr<NcclGroup>> create(const std::vector<int>& devices,
                                                     const std::vector<cudaStream_t>& streams,
                                                     CommOptions options = {});
  // Waits (up to the deadline) for enqueued operations, then destroys the communicators; aborts
  // them instead when something is still pending.
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  // The Comm of `rank`, handed out once and used only by the thread that drives that GPU. It keeps
  // the group alive.
  std::unique_ptr<Comm> member(int rank);
  // Aborts every communicator now; pending and later member calls fail with kDeadline quoting
  // `reason` (the first abort wins: a later one keeps the earlier error), as CpuCommGroup does.
  void abort(const std::string& reason);

  int size() const { return static_cast<int>(members_.size()); }
  const CommOptions& options() const { return options_; }
  // ok(), or the error every member call now returns.
  Status health() const;

 private:
  friend class NcclMember;

  // One enqueued operation, timed by the watchdog until its event completes.
  struct PendingOp {
    const char* op = "";
    int64_t call = 0;
    std::chrono::steady_clock::time_point since;
    cudaEvent_t event = nullptr;  // null while NCCL is still enqueuing it on the host
  };

  struct Member {
    int rank = 0, device = 0;
    cudaStream_t stream = nullptr;
    std::mutex nccl_mutex;          // every NCCL call on `comm`: the member thread, the watchdog, abort
    ncclComm_t comm = nullptr;      // null once aborted or destroyed
    std::mutex pending_mutex;       // `pending` and the event pool: the member thread and the watchdog
    std::deque<PendingOp> pending;  // stream order, oldest first
    std::vector<cudaEvent_t> free_events, all_events;
    std::atomic<int64_t> arrived{0};  // operations this rank has started: the laggard has the fewest
    std::atomic<bool> handed_out{false};
    Status killed;  // set once fault injection killed this rank; touched by the member thread only
    int64_t* heartbeat_device = nullptr;  // all_reduce_min's value on the GPU
    int64_t* heartbeat_host = nullptr;    // pinned, so the copy back never blocks the host
  };

  explicit NcclGroup(CommOptions options);
  Status allocate_members(const std::vector<int>& devices, const std::vector<cudaStream_t>& streams);
  Status init_communicators();

  // Runs operation `op` of `rank`: fault injection, call numbering, the pending record the watchdog
  // times, `enqueue` (which reaches NCCL through call_nccl), then the completion event. Any failure
  // aborts the group, so the peers fail now instead of at the deadline.
  Status run_op(int rank, const char* op, const std::function<Status(Member&)>& enqueue);
  // A rank's bad arguments: the group is aborted with them (the peers would only time out), so
  // every rank learns the cause, as with CPU ranks.
  Status reject(int rank, const char* op, const std::string& why);
  // Calls NCCL on the member's communicator, then waits (host side, a communicator lock per poll)
  // until NCCL has put the work on the stream.
  Status call_nccl(Member& m, const char* what, const std::function<ncclResult_t(ncclComm_t)>& call);
  Status record_completion(Member& m);
  // Waits for `event` without bound except the group's abort (the watchdog owns the deadline).
  Status wait_event(Member& m, cudaEvent_t event);
  Status synchronize(int rank);
  // The kill or abort error of this member, ok when it may communicate.
  Status usable(const Member& m);
  std::string prefix() const;  // "comm group 'tp': "

  // Records `error` once and aborts every communicator; later calls return without waiting.
  void abort_with(Status error);
  // The recorded error, once the abort has finished (so no kernel of the group still runs).
  Status abort_error();

  void watchdog_loop();
  // A deadline expiry, device error or NCCL asynchronous error found in the group; ok otherwise.
  Status inspect();
  // Drops completed operations from the front of `m.pending` (pending_mutex held).
  Status reap(Member& m);
  std::string deadline_message(int stuck_rank, const PendingOp& op, std::chrono::milliseconds age) const;
  // Waits up to `limit` for every member's enqueued operations; false when some are still pending.
  bool drain(std::chrono::milliseconds limit);
  void release_communicators(bool abort);

  const CommOptions options_;
  std::vector<std::unique_ptr<Member>> members_;

  mutable std::mutex error_mutex_;
  Status error_;
  std::atomic<bool> aborting_{false}, abort_done_{false};

  std::thread watchdog_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wake_;
  bool stop_watchdog_ = false;
};

}  // namespace orochi::dist

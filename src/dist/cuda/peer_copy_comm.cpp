#include "dist/cuda/peer_copy_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device.h"
#include "dist/cpu_exchange.h"
#include "dist/deadline_message.h"

namespace orochi::dist {
namespace {

using Clock = std::chrono::steady_clock;

void CUDART_CB pause_stream(void* microseconds) {
  std::this_thread::sleep_for(std::chrono::microseconds(reinterpret_cast<intptr_t>(microseconds)));
}

}  // namespace

class PeerCopyMember final : public Comm {
 public:
  PeerCopyMember(std::shared_ptr<PeerCopyGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const std::string& name() const override { return group_->options_.name; }
  void abort(const std::string& reason) override { group_->abort(reason); }

  Status all_reduce_sum(void*, int64_t, DType) override {
    return unsupported("comm group '" + name() + "' moves data with copy engines and cannot sum; use an NCCL group");
  }
  Status all_gather(const void* send, void* recv, int64_t count, DType dtype) override {
    const int n = size();
    std::vector<int64_t> counts(n, count), zeros(n, 0), offsets(n);
    for (int j = 0; j < n; ++j) offsets[j] = j * count;
    return exchange("all_gather", send, counts, zeros, recv, counts, offsets, dtype);
  }
  Status all_to_all(const void* send, const std::vector<int64_t>& send_counts, const std::vector<int64_t>& send_offsets,
                    void* recv, const std::vector<int64_t>& recv_counts, const std::vector<int64_t>& recv_offsets,
                    DType dtype) override {
    return exchange("all_to_all", send, send_counts, send_offsets, recv, recv_counts, recv_offsets, dtype);
  }
  Expected<int64_t> all_reduce_min(int64_t value) override;
  Status synchronize() override;

 private:
  // Fault injection and call numbering; ok() when this rank may take part in call `call`.
  Status begin_call(const char* op, int64_t& call);
  Status exchange(const char* op, const void* send, const std::vector<int64_t>& send_counts,
                  const std::vector<int64_t>& send_offsets, void* recv, const std::vector<int64_t>& recv_counts,
                  const std::vector<int64_t>& recv_offsets, DType dtype);

  std::shared_ptr<PeerCopyGroup> group_;
  int rank_;
  const char* last_op_ = "";
  int64_t last_call_ = -1;
  Clock::time_point last_since_{};
};

Status PeerCopyMember::begin_call(const char* op, int64_t& call) {
  PeerCopyGroup& g = *group_;
  call = g.ranks_[rank_].calls++;
  OROCHI_RETURN_IF_ERROR(g.health());
  const FaultInjection& f = g.options_.fault;
  if (f.kind == FaultInjection::Kind::kNone || f.rank != rank_ || f.at_call != call) return Status::ok();
  if (f.kind == FaultInjection::Kind::kKill)
    return Status(ErrorCode::kInternal, "rank " + std::to_string(rank_) + " of comm group '" + name() +
                                            "' was killed by fault injection at " + op + " call #" + std::to_string(call));
  // kStall: never arrive; return once the peers gave up on this rank (or our own deadline passed).
  std::unique_lock<std::mutex> lock(g.mutex_);
  g.changed_.wait_for(lock, g.options_.deadline * 2, [&] { return !g.error_.is_ok(); });
  return g.error_.is_ok() ? deadline_exceeded("rank " + std::to_string(rank_) + " stalled by fault injection") : g.error_;
}

Status PeerCopyMember::exchange(const char* op, const void* send, const std::vector<int64_t>& send_counts,
                                const std::vector<int64_t>& send_offsets, void* recv, const std::vector<int64_t>& recv_counts,
                                const std::vector<int64_t>& recv_offsets, DType dtype) {
  PeerCopyGroup& g = *group_;
  const int n = size();
  const std::string bad = check_all_to_all_arguments(n, send, send_counts, send_offsets, recv, recv_counts, recv_offsets);
  if (!bad.empty())
    return g.fail(invalid_argument("comm group '" + name() + "': rank " + std::to_string(rank_) + " called " + op +
                                   " with bad arguments: " + bad));
  int64_t call = 0;
  OROCHI_RETURN_IF_ERROR(begin_call(op, call));
  PeerCopyGroup::Rank& me = g.ranks_[rank_];
  {
    std::lock_guard<std::mutex> lock(g.mutex_);
    me.recv = static_cast<char*>(recv);
    me.recv_counts = recv_counts;
    me.recv_offsets = recv_offsets;
  }
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(me.device));
  // Everything queued on this stream before the call has finished with `recv`: peers may write it.
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.ready, me.stream));
  OROCHI_RETURN_IF_ERROR(g.rendezvous(rank_, 2 * call + 1, op, call));
  for (int j = 0; j < n; ++j)
    if (send_counts[j] != g.ranks_[j].recv_counts[rank_])
      return g.fail(invalid_argument("comm group '" + name() + "' " + op + " call #" + std::to_string(call) + ": rank " +
                                     std::to_string(rank_) + " sends " + std::to_string(send_counts[j]) +
                                     " elements to rank " + std::to_string(j) + ", which expects " +
                                     std::to_string(g.ranks_[j].recv_counts[rank_])));
  // Push this rank's pieces into every peer's buffer (copy engines), then wait for theirs.
  const size_t elt = dtype_size(dtype);
  const char* src = static_cast<const char*>(send);
  for (int j = 0; j < n; ++j) {
    if (send_counts[j] == 0) continue;
    const PeerCopyGroup::Rank& peer = g.ranks_[j];
    char* dst = peer.recv + peer.recv_offsets[rank_] * elt;
    const size_t bytes = static_cast<size_t>(send_counts[j]) * elt;
    if (j == rank_) {
      OROCHI_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src + send_offsets[j] * elt, bytes, cudaMemcpyDeviceToDevice, me.stream));
      continue;
    }
    OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(me.stream, peer.ready, 0));
    const size_t piece = g.pace_.piece_bytes > 0 ? g.pace_.piece_bytes : bytes;
    for (size_t at = 0; at < bytes; at += piece) {
      if (at > 0 && g.pace_.gap_us > 0)
        OROCHI_CUDA_RETURN_IF_ERROR(cudaLaunchHostFunc(me.stream, pause_stream,
                                                       reinterpret_cast<void*>(static_cast<intptr_t>(g.pace_.gap_us))));
      OROCHI_CUDA_RETURN_IF_ERROR(cudaMemcpyPeerAsync(dst + at, peer.device, src + send_offsets[j] * elt + at, me.device,
                                                      std::min(piece, bytes - at), me.stream));
    }
  }
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.pushed, me.stream));
  OROCHI_RETURN_IF_ERROR(g.rendezvous(rank_, 2 * call + 2, op, call));
  for (int j = 0; j < n; ++j)
    if (j != rank_ && recv_counts[j] > 0) OROCHI_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(me.stream, g.ranks_[j].pushed, 0));
  OROCHI_CUDA_RETURN_IF_ERROR(cudaEventRecord(me.done, me.stream));
  last_op_ = op, last_call_ = call, last_since_ = Clock::now();
  return Status::ok();
}

Expected<int64_t> PeerCopyMember::all_reduce_min(int64_t value) {
  PeerCopyGroup& g = *group_;
  int64_t call = 0;
  OROCHI_RETURN_IF_ERROR(begin_call("all_reduce_min", call));
  {
    std::lock_guard<std::mutex> lock(g.mutex_);
    g.ranks_[rank_].value = value;
  }
  OROCHI_RETURN_IF_ERROR(g.rendezvous(rank_, 2 * call + 1, "all_reduce_min", call));
  int64_t low = value;
  {
    std::lock_guard<std::mutex> lock(g.mutex_);
    for (const PeerCopyGroup::Rank& r : g.ranks_) low = std::min(low, r.value);
  }
  // Nobody posts the next value before every rank has read this one.
  OROCHI_RETURN_IF_ERROR(g.rendezvous(rank_, 2 * call + 2, "all_reduce_min", call));
  return low;
}

Status PeerCopyMember::synchronize() {
  PeerCopyGroup& g = *group_;
  const PeerCopyGroup::Rank& me = g.ranks_[rank_];
  if (last_call_ < 0) return g.health();
  OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(me.device));
  for (int spins = 0;; ++spins) {
    OROCHI_RETURN_IF_ERROR(g.health());
    const cudaError_t q = cudaEventQuery(me.done);
    if (q == cudaSuccess) return Status::ok();
    if (q != cudaErrorNotReady) return g.fail(cuda::cuda_status(q, (std::string("comm group '") + name() + "' " + last_op_).c_str()));
    if (Clock::now() - last_since_ > g.options_.deadline)
      return g.fail(deadline_exceeded("comm group '" + name() + "': " + last_op_ + " call #" + std::to_string(last_call_) +
                                      " did not finish on rank " + std::to_string(rank_) + "'s GPU within " +
                                      std::to_string(g.options_.deadline.count()) +
                                      " ms; a GPU may be lost or a peer's copies never started (raise --comm-timeout "
                                      "if it is just slow)"));
    if (spins < 100) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

bool PeerCopyGroup::supported(const std::vector<int>& devices) {
  for (int a : devices)
    for (int b : devices) {
      int can = 0;
      if (a != b && (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can)) return false;
    }
  return true;
}

Expected<std::shared_ptr<PeerCopyGroup>> PeerCopyGroup::create(const std::vector<int>& devices,
                                                               const std::vector<cudaStream_t>& streams,
                                                               CommOptions options, PeerCopyPace pace) {
  if (devices.empty() || devices.size() != streams.size())
    return invalid_argument("a copy-engine group needs one stream per device (" + std::to_string(devices.size()) +
                            " devices, " + std::to_string(streams.size()) + " streams)");
  if (options.deadline.count() <= 0) return invalid_argument("the communication deadline must be positive");
  if (!supported(devices))
    return unsupported("these GPUs cannot access each other's memory (no NVLink or PCIe peer access): use NCCL");
  std::shared_ptr<PeerCopyGroup> g(new PeerCopyGroup(std::move(options)));
  g->pace_ = pace;
  g->ranks_.resize(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    Rank& r = g->ranks_[i];
    r.device = devices[i];
    r.stream = streams[i];
    OROCHI_CUDA_RETURN_IF_ERROR(cudaSetDevice(r.device));
    for (int other : devices)
      if (other != r.device) OROCHI_RETURN_IF_ERROR(cuda::enable_peer_access(r.device, other));
    for (cudaEvent_t* e : {&r.ready, &r.pushed, &r.done})
      OROCHI_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  }
  return g;
}

PeerCopyGroup::~PeerCopyGroup() {
  for (Rank& r : ranks_) {
    cudaSetDevice(r.device);
    for (cudaEvent_t e : {r.ready, r.pushed, r.done})
      if (e) cudaEventDestroy(e);
  }
}

std::unique_ptr<Comm> PeerCopyGroup::member(int rank) {
  return std::make_unique<PeerCopyMember>(shared_from_this(), rank);
}

void PeerCopyGroup::abort(const std::string& reason) {
  (void)fail(deadline_exceeded("comm group '" + options_.name + "' was aborted: " + reason));
}

Status PeerCopyGroup::health() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

Status PeerCopyGroup::fail(Status error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.is_ok()) error_ = std::move(error);
  changed_.notify_all();
  return error_;
}

Status PeerCopyGroup::rendezvous(int rank, int64_t gen, const char* op, int64_t call) {
  std::unique_lock<std::mutex> lock(mutex_);
  ranks_[rank].arrived = gen;
  changed_.notify_all();
  auto everyone_here = [&] {
    return std::all_of(ranks_.begin(), ranks_.end(), [&](const Rank& r) { return r.arrived >= gen; });
  };
  const auto deadline = Clock::now() + options_.deadline;
  while (error_.is_ok() && !everyone_here()) {
    if (changed_.wait_until(lock, deadline) != std::cv_status::timeout) continue;
    if (!error_.is_ok() || everyone_here()) break;
    std::vector<int> missing, present;
    for (size_t j = 0; j < ranks_.size(); ++j) (ranks_[j].arrived < gen ? missing : present).push_back(static_cast<int>(j));
    error_ = deadline_exceeded(deadline_head(options_, size(), op, call) + missing_ranks(missing, present) +
                               ". A rank is stalled, crashed or took another code path; " + kDeadlineAdvice);
    changed_.notify_all();
  }
  return error_;
}

}  // namespace orochi::dist

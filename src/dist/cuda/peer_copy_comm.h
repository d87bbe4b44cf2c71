// Collectives among the GPUs of this process that move data with the GPUs' copy engines
// (cudaMemcpyPeerAsync over NVLink/P2P) instead of NCCL's kernels. NCCL's kernels need SMs, so
// while a GEMM or attention kernel holds them an overlapped all_to_all crawls (measured on the
// H200 pair: a 117 MB exchange under attention took 21 ms instead of 0.4 ms); copy engines run
// beside any kernel. For the Ulysses exchanges of sequence parallelism, which only move data.
//
// Each operation is a host rendezvous of the member threads (posting receive buffers and "ready"
// events), then every rank pushes its pieces straight into the peers' buffers on its stream and
// waits for the peers' pushes into its own. Deadlines as dist::Comm says: a rank that does not
// arrive ends every member's call with kDeadline naming it; the GPU side is watched by
// synchronize(). all_reduce_sum is not offered (it needs arithmetic: use NCCL for TP).
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dist/comm.h"
#include "dist/parallel_options.h"

namespace orochi::dist {

// A group's pushes to a peer may go out in pieces (PeerCopyPace, dist/parallel_options.h: the
// peer-pace switch), so an exchange spreads over the compute it hides under instead of one burst at
// full link speed: for timing whether the burst, rather than the bytes, lowers the power-capped
// GPUs' clock in SP2 (bench/RESULTS.md, session 10). A host pause is at least ~50-100 us whatever
// the gap says (sleep and host-function dispatch), at most 10 ms.

class PeerCopyGroup : public std::enable_shared_from_this<PeerCopyGroup> {
 public:
  // True when every pair of `devices` can access each other's memory (NVLink or PCIe P2P).
  static bool supported(const std::vector<int>& devices);
  // Enables peer access between every pair; streams[i] is rank i's stream (caller owns it).
  static Expected<std::shared_ptr<PeerCopyGroup>> create(const std::vector<int>& devices,
                                                         const std::vector<cudaStream_t>& streams,
                                                         CommOptions options = {}, PeerCopyPace pace = {});
  ~PeerCopyGroup();
  std::unique_ptr<Comm> member(int rank);
  void abort(const std::string& reason);
  int size() const { return static_cast<int>(ranks_.size()); }
  Status health() const;

 private:
  friend class PeerCopyMember;
  struct Rank {
    int device = 0;
    cudaStream_t stream = nullptr;
    cudaEvent_t ready = nullptr, pushed = nullptr, done = nullptr;  // reused every operation
    // What this rank posted for the current operation.
    char* recv = nullptr;
    std::vector<int64_t> recv_counts, recv_offsets;
    int64_t value = 0;  // all_reduce_min
    int64_t arrived = 0;  // rendezvous generations reached
    int64_t calls = 0;
  };
  explicit PeerCopyGroup(CommOptions options) : options_(std::move(options)) {}
  // Waits until every rank reached generation `gen` (or the deadline / an abort).
  Status rendezvous(int rank, int64_t gen, const char* op, int64_t call);
  Status fail(Status error);  // records the first error and wakes every waiter

  CommOptions options_;
  PeerCopyPace pace_;
  std::vector<Rank> ranks_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Status error_;
};

}  // namespace orochi::dist

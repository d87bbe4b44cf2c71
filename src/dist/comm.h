// Collective communication among the ranks of one group (tensor-parallel, sequence-parallel or the
// whole world). Groups are created explicitly and handed to the code that uses them; a rank may be
// a member of several groups (TP x SP: one TP group and one SP group per rank).
//
// Two implementations share this interface so the same parallel code runs in CI and on GPUs:
//   - CPU ranks in one process (dist/cpu_comm.h): threads, host memory, blocking calls.
//   - NCCL (dist/nccl/nccl_comm.h): one worker thread per GPU, device memory, calls enqueue on the
//     member's stream and return; synchronize() waits.
//
// Every operation has a deadline (CommOptions::deadline). When a peer does not arrive in time the
// group is aborted and every member's pending and later calls fail with a kDeadline-style message
// that names the group, the operation, its call number and the ranks that did not arrive.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace orochi::dist {

// Proof for the deadline machinery: make one rank misbehave at its `at_call`-th operation
// (counted from 0 over all operations of the group on that rank).
struct FaultInjection {
  enum class Kind { kNone, kStall, kKill };
  Kind kind = Kind::kNone;
  int rank = -1;        // rank within the group
  int64_t at_call = 0;
};

struct CommOptions {
  std::string name = "world";                             // in error messages: "tp", "sp", "world"
  std::chrono::milliseconds deadline{60'000};             // per operation (--comm-timeout)
  FaultInjection fault;
};

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const std::string& name() const = 0;

  // In-place sum over the group's ranks of `count` elements at `data`.
  virtual Status all_reduce_sum(void* data, int64_t count, DType dtype) = 0;
  // recv holds size() * count elements: rank r's `send` at r * count.
  virtual Status all_gather(const void* send, void* recv, int64_t count, DType dtype) = 0;
  // Variable all-to-all: rank j receives send_counts[j] elements read at send + send_offsets[j];
  // this rank receives recv_counts[j] elements from rank j at recv + recv_offsets[j]. Counts and
  // offsets are in elements; every vector has size() entries and the counts must agree pairwise.
  virtual Status all_to_all(const void* send, const std::vector<int64_t>& send_counts,
                            const std::vector<int64_t>& send_offsets, void* recv,
                            const std::vector<int64_t>& recv_counts, const std::vector<int64_t>& recv_offsets,
                            DType dtype) = 0;
  // Heartbeat: the minimum of `value` over the ranks, returned to every rank once all arrived.
  // Always blocking on the host, so ranks can agree on optional paths before taking them.
  virtual Expected<int64_t> all_reduce_min(int64_t value) = 0;
  // Waits for this rank's enqueued operations (a no-op for blocking implementations); reports a
  // deadline expiry or an aborted group.
  virtual Status synchronize() = 0;
  // Ends the whole group now: every member's pending and later calls fail with kDeadline and
  // `reason` (the first abort wins). For code that holds only its member and hit an error of its
  // own, so the peers stop waiting instead of running into the deadline.
  virtual void abort(const std::string& reason) = 0;
};

// [begin, end) of `index`'s share when `n` items are split over `parts` as evenly as possible:
// the first n % parts shares hold one more item.
struct Range {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
inline Range even_share(int64_t n, int parts, int index) {
  const int64_t base = n / parts, extra = n % parts;
  const int64_t begin = index * base + (index < extra ? index : extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

// `index`'s share when `n` items are split in proportion to `weights` (one positive weight per
// part): contiguous and in order, each boundary n * (weights before it) / (all weights), rounded.
inline Range weighted_share(int64_t n, const std::vector<double>& weights, int index) {
  double total = 0, before = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    total += weights[i];
    if (static_cast<int>(i) < index) before += weights[i];
  }
  const auto boundary = [&](double w) { return static_cast<int64_t>(std::llround(static_cast<double>(n) * w / total)); };
  return {boundary(before), boundary(before + weights[static_cast<size_t>(index)])};
}

}  // namespace orochi::dist

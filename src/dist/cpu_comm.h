// In-process CPU ranks: dist::Comm over threads and host memory, for tests and CPU runs of the
// parallel code. One CpuCommGroup per process group (world, tp, sp); each rank's thread takes its
// member and calls the collectives in the same order as its peers. Calls block until every rank
// of the group arrived, or the group's deadline expires, or the group is aborted.
//
// Every failed collective (a peer late, stalled or gone, or a group aborted by a rank's own error)
// returns ErrorCode::kDeadline: the communication did not complete. A rank killed by fault
// injection returns kInternal from the call it died in and from every later call.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dist/comm.h"
#include "dist/cpu_exchange.h"

namespace orochi::dist {

namespace detail {
class CpuCommMember;  // cpu_comm.cpp
}

class CpuCommGroup : public std::enable_shared_from_this<CpuCommGroup> {
 public:
  // `size` >= 1 ranks with options.name in every error message.
  static std::shared_ptr<CpuCommGroup> create(int size, CommOptions options = {});
  // Rank `rank`'s endpoint, handed out once per rank and used only by that rank's thread.
  std::unique_ptr<Comm> member(int rank);
  // Fails every pending and later call of every member with kDeadline and `reason` (the first
  // abort wins). A rank whose own code failed calls this so its peers do not wait a full deadline.
  void abort(std::string reason);

  int size() const { return size_; }
  const CommOptions& options() const { return options_; }
  // ok(), or the error every call now returns.
  Status health() const;

 private:
  friend class detail::CpuCommMember;
  CpuCommGroup(int size, CommOptions options);
  // For the members (cpu_comm.cpp): register `mine` as `rank`'s part of collective number `call`
  // and wait until all ranks arrived; the result stays valid until this rank calls depart(call).
  Expected<const Exchange*> arrive(int rank, int64_t call, Arrival mine);
  void depart(int64_t call);
  // Fault injection kStall: never arrive, wait until the group is aborted.
  Status stall(int64_t call, const std::string& op);

  // Requires mu_ held. Aborts with the deadline message for `call`.
  void expire_locked(const Exchange& exchange, int64_t call);
  void abort_locked(Status status);

  const int size_;
  const CommOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Exchange> exchanges_;  // by call number; erased once every rank departed
  std::optional<Status> aborted_;
  std::vector<bool> handed_out_;
};

}  // namespace orochi::dist

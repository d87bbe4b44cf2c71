// The parallel context of a run: one worker per device (dist/workers.h) and the process groups of
// its tp x sp layout (dist/rank_grid.h), made once and passed to the models that use them. Models
// take their rank's members (tp(rank), sp(rank)) and fan work out only through run(): a rank that
// fails aborts every group, so its peers stop waiting in a collective, and the error comes back as
// a Status naming the rank.
//
// What the workers drive is a RankDevices: GPUs with NCCL and copy-engine groups
// (dist/cuda/gpu_parallel_context.h), or in-process CPU ranks (dist/cpu_parallel_context.h).
//
//   auto ctx = dist::make_gpu_context({0, 1}, {.tp = 1, .sp = 2});
//   model = Model::create(config, *ctx);   // model keeps ctx->sp(rank) for its rank's runner
//   ctx->run([&](int rank) { return runner[rank]->forward(); });
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/comm.h"
#include "dist/rank_grid.h"
#include "dist/workers.h"

namespace orochi::dist {

enum class GroupKind { kTp, kSp };

// A group made by RankDevices: every member's Comm in group rank order, and how to end the group
// (Comm::abort for everyone). The members keep the group alive; `abort` may too.
struct MadeGroup {
  std::vector<std::unique_ptr<Comm>> members;
  std::function<void(const std::string& reason)> abort;
};

class RankDevices {
 public:
  virtual ~RankDevices() = default;
  virtual int count() const = 0;
  // How errors name worker `w`'s device ("cuda:1"); empty for CPU ranks.
  virtual std::string name(int w) const = 0;
  // On worker `w`'s thread before each job (a GPU makes its device current).
  virtual Status enter(int w) = 0;
  // The group of `workers` (their index in the list is their group rank).
  virtual Expected<MadeGroup> make_group(GroupKind kind, const std::vector<int>& workers, const CommOptions& options) = 0;
  // Where worker `w`'s collectives enqueue (a cudaStream_t on a GPU); null for blocking CPU ranks.
  virtual void* comm_stream(int) const { return nullptr; }
  // Worker `w`'s GPU ordinal; -1 for CPU ranks.
  virtual int device(int) const { return -1; }
};

// The groups' settings (dist::CommOptions without the name, which the context gives).
struct GroupSettings {
  std::chrono::milliseconds deadline{60'000};  // --comm-timeout
  FaultInjection fault = {};                    // tests only: applied to the first TP or SP group
};

class ParallelContext {
 public:
  // grid.world() <= devices->count(): the layout's ranks are the first workers; the others (the
  // decode's extra GPUs) have no groups.
  static Expected<std::shared_ptr<ParallelContext>> create(std::unique_ptr<RankDevices> devices, RankGrid grid,
                                                           GroupSettings settings = {});
  // Members before their groups, the devices (streams) last; the idle workers are joined.
  ~ParallelContext();
  ParallelContext(const ParallelContext&) = delete;
  ParallelContext& operator=(const ParallelContext&) = delete;

  int workers() const { return devices_->count(); }
  const RankGrid& grid() const { return grid_; }
  // World rank `rank`'s member of its TP / SP group; null when that group has one rank.
  Comm* tp(int rank) const { return rank < static_cast<int>(tp_.size()) ? tp_[rank].get() : nullptr; }
  Comm* sp(int rank) const { return rank < static_cast<int>(sp_.size()) ? sp_[rank].get() : nullptr; }
  void* comm_stream(int rank) const { return devices_->comm_stream(rank); }
  int device(int rank) const { return devices_->device(rank); }  // -1 for CPU ranks
  // "rank 1 (cuda:1)", or "rank 1" for CPU ranks.
  std::string rank_name(int rank) const;

  // fn(rank) on workers 0..count-1 (all of them by default), each on its own thread with its
  // device current. The first failure in rank order, with the rank's name; a failing rank aborts
  // every group first, so that ranks waiting in a collective (of this group or another) return now
  // instead of at the deadline.
  Status run(int count, const RankFn& fn);
  Status run(const RankFn& fn) { return run(workers(), fn); }
  // Ends every group now (their members' pending and later calls fail with `reason`).
  void abort(const std::string& reason);

 private:
  ParallelContext() = default;
  Status make_groups(const GroupSettings& settings);

  std::unique_ptr<Workers> workers_;
  std::unique_ptr<RankDevices> devices_;
  RankGrid grid_;
  std::vector<std::function<void(const std::string&)>> aborts_;  // one per group
  std::vector<std::unique_ptr<Comm>> tp_, sp_;                     // by world rank
};

}  // namespace orochi::dist

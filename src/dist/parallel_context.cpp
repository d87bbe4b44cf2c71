#include "dist/parallel_context.h"

#include <string>
#include <utility>

namespace orochi::dist {

Expected<std::shared_ptr<ParallelContext>> ParallelContext::create(std::unique_ptr<RankDevices> devices, RankGrid grid,
                                                                   GroupSettings settings) {
  if (!devices || devices->count() < 1) return invalid_argument("a parallel context needs at least one device");
  if (grid.tp < 1 || grid.sp < 1)
    return invalid_argument("tp " + std::to_string(grid.tp) + " x sp " + std::to_string(grid.sp) +
                            ": both degrees must be at least 1");
  if (grid.world() > devices->count())
    return invalid_argument("tp " + std::to_string(grid.tp) + " x sp " + std::to_string(grid.sp) + " needs " +
                            std::to_string(grid.world()) + " GPUs, " + std::to_string(devices->count()) +
                            " were given");
  std::shared_ptr<ParallelContext> c(new ParallelContext());
  c->grid_ = grid;
  c->devices_ = std::move(devices);
  OROCHI_RETURN_IF_ERROR(c->make_groups(settings));
  c->workers_ = std::make_unique<Workers>(c->devices_->count());
  return c;
}

// TP among the ranks of one SP index, then SP among the ranks of one TP index; "tp0", "tp1", ...
// when there are several. The fault (tests) goes to the first group made.
Status ParallelContext::make_groups(const GroupSettings& settings) {
  const int world = grid_.world();
  tp_.resize(world);
  sp_.resize(world);
  bool fault_placed = false;
  auto make = [&](GroupKind kind, int count, auto ranks_of,
                  std::vector<std::unique_ptr<Comm>>& out) -> Status {
    for (int g = 0; g < count; ++g) {
      const std::vector<int> ranks = ranks_of(g);
      if (ranks.size() == 1) return Status::ok();
      CommOptions options;
      options.name = std::string(kind == GroupKind::kTp ? "tp" : "sp") + (count > 1 ? std::to_string(g) : "");
      options.deadline = settings.deadline;
      if (!fault_placed) options.fault = settings.fault;
      fault_placed = true;
      OROCHI_ASSIGN_OR_RETURN(MadeGroup group, devices_->make_group(kind, ranks, options));
      if (group.members.size() != ranks.size())
        return Status(ErrorCode::kInternal, "group " + options.name + ": " + std::to_string(group.members.size()) +
                                                " members for " + std::to_string(ranks.size()) + " ranks");
      for (size_t m = 0; m < ranks.size(); ++m) out[ranks[m]] = std::move(group.members[m]);
      aborts_.push_back(std::move(group.abort));
    }
    return Status::ok();
  };
  OROCHI_RETURN_IF_ERROR(make(GroupKind::kTp, grid_.sp, [&](int g) { return grid_.tp_group(g); }, tp_));
  return make(GroupKind::kSp, grid_.tp, [&](int g) { return grid_.sp_group(g); }, sp_);
}

ParallelContext::~ParallelContext() {
  workers_.reset();
  tp_.clear();
  sp_.clear();
  aborts_.clear();
  devices_.reset();
}

std::string ParallelContext::rank_name(int rank) const {
  const std::string device = rank >= 0 && rank < workers() ? devices_->name(rank) : "";
  return "rank " + std::to_string(rank) + (device.empty() ? "" : " (" + device + ")");
}

Status ParallelContext::run(int count, const RankFn& fn) {
  if (count < 0 || count > workers())
    return Status(ErrorCode::kInternal, "a job for " + std::to_string(count) + " ranks on a context of " +
                                            std::to_string(workers()) + " workers");
  const std::vector<Status> results = workers_->run(count, [&](int rank) -> Status {
    Status s = devices_->enter(rank);
    if (s.is_ok()) s = call_rank(fn, rank);
    if (!s.is_ok()) abort("rank " + std::to_string(rank) + " failed: " + s.message());
    return s;
  });
  // A deadline error names the rank that stalled; report it before the ranks that saw it second hand.
  for (size_t r = 0; r < results.size(); ++r)
    if (!results[r].is_ok()) return results[r].with_context(rank_name(static_cast<int>(r)));
  return Status::ok();
}

void ParallelContext::abort(const std::string& reason) {
  for (const auto& abort_group : aborts_)
    if (abort_group) abort_group(reason);
}

}  // namespace orochi::dist

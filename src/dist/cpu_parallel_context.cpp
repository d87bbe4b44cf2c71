#include "dist/cpu_parallel_context.h"

#include "dist/cpu_comm.h"

namespace orochi::dist {
namespace {

class CpuRanks final : public RankDevices {
 public:
  explicit CpuRanks(int count) : count_(count) {}
  int count() const override { return count_; }
  std::string name(int) const override { return ""; }
  Status enter(int) override { return Status::ok(); }
  Expected<MadeGroup> make_group(GroupKind, const std::vector<int>& workers, const CommOptions& options) override {
    std::shared_ptr<CpuCommGroup> group = CpuCommGroup::create(static_cast<int>(workers.size()), options);
    MadeGroup made;
    for (int m = 0; m < group->size(); ++m) made.members.push_back(group->member(m));
    made.abort = [group](const std::string& reason) { group->abort(reason); };
    return made;
  }

 private:
  int count_;
};

}  // namespace

Expected<std::shared_ptr<ParallelContext>> make_cpu_context(int ranks, RankGrid grid, GroupSettings settings) {
  return ParallelContext::create(std::make_unique<CpuRanks>(ranks), grid, std::move(settings));
}

}  // namespace orochi::dist

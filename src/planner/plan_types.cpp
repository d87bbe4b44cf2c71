#include "planner/plan_types.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace orochi::planner {

double to_gib(uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(kGiB); }
uint64_t from_gib(double gib) { return static_cast<uint64_t>(std::llround(gib * static_cast<double>(kGiB))); }

const char* pool_name(PoolKind kind) {
  switch (kind) {
    case PoolKind::kWeights: return "weights";
    case PoolKind::kStaging: return "staging";
    case PoolKind::kActivations: return "activations";
    case PoolKind::kRequestState: return "request state";
    case PoolKind::kComm: return "comm";
    case PoolKind::kScratch: return "scratch";
    case PoolKind::kMargin: return "margin";
  }
  return "?";
}

const char* tier_name(Tier tier) {
  switch (tier) {
    case Tier::kResident: return "resident";
    case Tier::kPeer: return "peer";
    case Tier::kHost: return "host";
    case Tier::kStreamedOnce: return "streamed once";
  }
  return "?";
}

uint64_t Pool::bytes() const {
  uint64_t sum = 0;
  for (const PoolItem& i : items) sum += i.bytes;
  return sum;
}

uint64_t GpuPlan::total() const {
  uint64_t sum = 0;
  for (const Pool& p : pools) sum += p.bytes();
  return sum;
}

uint64_t GpuPlan::pool_bytes(PoolKind kind) const {
  for (const Pool& p : pools)
    if (p.kind == kind) return p.bytes();
  return 0;
}

void GpuPlan::add(PoolKind kind, const std::string& name, uint64_t bytes) {
  if (pools.empty())
    for (PoolKind k : kAllPoolKinds) pools.push_back({k, {}});
  for (Pool& p : pools)
    if (p.kind == kind) {
      p.items.push_back({name, bytes});
      return;
    }
  OROCHI_CHECK(false, "pool kind missing from GpuPlan");
}

uint64_t PhasePlan::shortfall(uint64_t cap) const {
  uint64_t most = 0;
  for (const GpuPlan& g : gpus) most = std::max(most, g.total() > cap ? g.total() - cap : 0);
  return most;
}

int PhasePlan::fullest_gpu() const {
  int best = 0;
  for (size_t i = 0; i < gpus.size(); ++i)
    if (gpus[i].total() > gpus[best].total()) best = static_cast<int>(i);
  return best;
}

}  // namespace orochi::planner

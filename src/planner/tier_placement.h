// Places a phase's weight groups in tiers for one computing GPU: resident while the VRAM budget
// lasts (cap minus the phase's other pools and K staging slots), then on a store GPU with room
// (copied over NVLink/P2P just in time), then in pinned host RAM (copied over PCIe just in time).
// Every computing GPU of a layout places alike, so one placement serves them all.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/plan_request.h"
#include "planner/plan_types.h"

namespace orochi::planner {

struct StoreGpu {
  int gpu = 0;
  uint64_t room = 0;  // bytes free for other GPUs' weights
};

struct PlacementInput {
  uint64_t cap = 0;          // bytes per GPU
  uint64_t other_pools = 0;  // the computing GPU's pools besides weights and weight staging
  int computing_gpus = 1;
  // true under tensor parallelism: each computing GPU's groups are different shards, so a store
  // GPU holds one copy per computing GPU; otherwise one copy serves all.
  bool distinct_shards = false;
  std::vector<StoreGpu> stores;
  TierPolicy policy;
};

struct Placement {
  std::vector<WeightGroup> groups;  // with tiers set
  uint64_t resident = 0;            // bytes per computing GPU
  uint64_t staging = 0;             // K slots of the largest streamed group, per computing GPU
  uint64_t peer = 0, host = 0;      // bytes of one computing GPU's groups in each tier
  std::vector<uint64_t> stored;     // bytes put on each of input.stores (all computing GPUs)
};

// Groups keep their order (execution order): the first blocks stay resident, the later ones
// stream. Non-streamable groups are always resident; kStreamedOnce groups keep their tier. When
// nothing fits even with streaming, the overflow stays resident (the plan then shows a shortfall).
Placement place_weights(std::vector<WeightGroup> groups, const PlacementInput& input);

}  // namespace orochi::planner

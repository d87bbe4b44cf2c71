#include "planner/tier_placement.h"

#include <algorithm>

namespace orochi::planner {

Placement place_weights(std::vector<WeightGroup> groups, const PlacementInput& in) {
  Placement p;
  p.stored.assign(in.stores.size(), 0);
  uint64_t pinned = 0, streamable = 0, largest = 0;
  for (WeightGroup& g : groups) {
    if (g.tier == Tier::kStreamedOnce) continue;
    g.tier = Tier::kResident;
    if (g.streamable) {
      streamable += g.bytes;
      largest = std::max(largest, g.bytes);
    } else {
      pinned += g.bytes;
    }
  }
  p.resident = pinned + streamable;
  const bool may_stream = (in.policy.peer && !in.stores.empty()) || in.policy.host;
  if (in.other_pools + p.resident <= in.cap || !may_stream || largest == 0) {
    p.groups = std::move(groups);
    return p;
  }
  // Streaming: K slots (at least one) of the largest group; the rest of the budget keeps groups.
  p.staging = static_cast<uint64_t>(std::max(in.policy.staging_slots, 1)) * largest;
  const uint64_t used = in.other_pools + p.staging + pinned;
  uint64_t budget = used < in.cap ? in.cap - used : 0;
  p.resident = pinned;
  std::vector<uint64_t> room;
  for (const StoreGpu& s : in.stores) room.push_back(s.room);
  const uint64_t copies = in.distinct_shards ? static_cast<uint64_t>(in.computing_gpus) : 1;
  for (WeightGroup& g : groups) {
    if (g.tier == Tier::kStreamedOnce || !g.streamable) continue;
    if (g.bytes <= budget) {
      budget -= g.bytes;
      p.resident += g.bytes;
      continue;
    }
    bool placed = false;
    for (size_t s = 0; in.policy.peer && s < room.size() && !placed; ++s)
      if (g.bytes * copies <= room[s]) {
        room[s] -= g.bytes * copies;
        p.stored[s] += g.bytes * copies;
        g.tier = Tier::kPeer;
        g.peer_gpu = in.stores[s].gpu;
        p.peer += g.bytes;
        placed = true;
      }
    if (!placed && in.policy.host) {
      g.tier = Tier::kHost;
      p.host += g.bytes;
      placed = true;
    }
    if (!placed) p.resident += g.bytes;  // overflow: shows as a shortfall
  }
  p.groups = std::move(groups);
  return p;
}

}  // namespace orochi::planner

#include "planner/phase_builder.h"

#include <algorithm>
#include <cstdio>

#include "planner/plan_memory.h"
#include "planner/tier_placement.h"

namespace orochi::planner {
namespace {

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", to_gib(bytes));
  return buf;
}

// "block 12" -> ("block", 12); names without a trailing number -> (name, -1).
std::pair<std::string, long long> split_number(const std::string& name) {
  const size_t space = name.find_last_of(' ');
  if (space == std::string::npos || space + 1 == name.size()) return {name, -1};
  for (size_t i = space + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return {name, -1};
  return {name.substr(0, space), std::stoll(name.substr(space + 1))};
}

}  // namespace

std::string describe_groups(const std::vector<WeightGroup>& groups, Tier tier) {
  std::string out;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].tier != tier) continue;
    const auto [stem, first] = split_number(groups[i].name);
    long long last = first;
    size_t j = i;
    while (first >= 0 && j + 1 < groups.size() && groups[j + 1].tier == tier) {
      const auto [next_stem, next] = split_number(groups[j + 1].name);
      if (next_stem != stem || next != last + 1) break;
      last = next;
      ++j;
    }
    out += out.empty() ? "" : ", ";
    out += last > first ? stem + " " + std::to_string(first) + "-" + std::to_string(last) : groups[i].name;
    i = j;
  }
  return out;
}

PhasePlan build_phase(const PhaseSpec& spec, const GpuSet& gpus) {
  const TierPolicy& policy = spec.tiers;
  PhasePlan phase;
  phase.name = spec.name;
  phase.about = spec.about;
  phase.notes = spec.notes;
  phase.passes = spec.passes;
  const int computing = spec.layout.degree;
  phase.layout = !spec.layout_text.empty()                         ? spec.layout_text
                 : spec.layout.kind == ParallelLayout::Kind::kNone ? "one GPU"
                                                                   : spec.layout.name();
  const uint64_t margin = margin_bytes(gpus.vram_bytes);

  uint64_t other = margin;
  for (const BufferBytes& b : spec.buffers)
    if (b.pool != PoolKind::kWeights) other += b.bytes;
  PlacementInput in;
  in.cap = gpus.vram_bytes;
  in.other_pools = other;
  in.computing_gpus = computing;
  in.distinct_shards = spec.layout.tp() > 1;
  in.policy = policy;
  for (int g = 0; g < gpus.count; ++g)
    if (g < spec.first_gpu || g >= spec.first_gpu + computing)
      in.stores.push_back({g, gpus.vram_bytes > margin ? gpus.vram_bytes - margin : 0});
  const Placement placed = place_weights(spec.groups, in);
  phase.groups = placed.groups;

  for (int g = spec.first_gpu; g < spec.first_gpu + computing; ++g) {
    GpuPlan gpu;
    gpu.gpu = g;
    gpu.role = "compute";
    gpu.add(PoolKind::kWeights, describe_groups(placed.groups, Tier::kResident), placed.resident);
    if (placed.staging > 0)
      gpu.add(PoolKind::kStaging,
              std::to_string(std::max(policy.staging_slots, 1)) + " slots of " +
                  gib(placed.staging / static_cast<uint64_t>(std::max(policy.staging_slots, 1))) +
                  " for streamed groups",
              placed.staging);
    for (const BufferBytes& b : spec.buffers) gpu.add(b.pool, b.name, b.bytes);
    gpu.add(PoolKind::kMargin, "CUDA context, handles, fragmentation", margin);
    phase.gpus.push_back(std::move(gpu));
  }
  for (size_t s = 0; s < in.stores.size(); ++s) {
    GpuPlan gpu;
    gpu.gpu = in.stores[s].gpu;
    gpu.role = placed.stored[s] > 0 ? "store" : "idle";
    if (placed.stored[s] > 0) {
      gpu.add(PoolKind::kWeights, "for the computing GPUs: " + describe_groups(placed.groups, Tier::kPeer),
              placed.stored[s]);
      gpu.add(PoolKind::kMargin, "CUDA context, handles, fragmentation", margin);
    } else {
      gpu.add(PoolKind::kMargin, "unused in this phase", 0);
    }
    phase.gpus.push_back(std::move(gpu));
  }
  std::stable_sort(phase.gpus.begin(), phase.gpus.end(), [](const GpuPlan& a, const GpuPlan& b) { return a.gpu < b.gpu; });
  for (const WeightGroup& g : placed.groups) {
    if (g.tier == Tier::kPeer) phase.peer_read_bytes += g.bytes;
    if (g.tier == Tier::kHost) phase.host_read_bytes += g.bytes;
    if (g.tier == Tier::kStreamedOnce) phase.streamed_once_bytes += g.bytes;
  }
  // Host RAM holds one copy of every host-tier group (a shard per computing GPU under tp).
  const uint64_t shards = in.distinct_shards ? static_cast<uint64_t>(computing) : 1;
  phase.host_bytes = phase.host_read_bytes * shards;
  for (const WeightGroup& g : placed.groups)
    if (g.tier == Tier::kStreamedOnce) phase.host_bytes += g.bytes;  // full size, not per shard
  return phase;
}

}  // namespace orochi::planner

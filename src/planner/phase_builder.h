// Turns one phase's weight groups and buffers into per-GPU pools: places the weights in tiers,
// then lays out the computing GPUs (first_gpu.. first_gpu + N - 1, usually 0..N-1) and the store
// GPUs (the others, in order).
#pragma once

#include <string>
#include <vector>

#include "planner/h3_denoiser_memory.h"
#include "planner/plan_request.h"
#include "planner/plan_types.h"

namespace orochi::planner {

struct PhaseSpec {
  std::string name, about;
  ParallelLayout layout;  // of this phase (may be narrower than the request's)
  int first_gpu = 0;      // its computing GPUs are first_gpu .. first_gpu + degree - 1; the others store or idle
  std::string layout_text;  // shown instead of the layout's name when set (a phase that splits work, not weights)
  std::vector<std::string> notes;
  std::vector<WeightGroup> groups;
  std::vector<BufferBytes> buffers;  // per computing GPU
  int64_t passes = 1;                // passes over the weights per request
  TierPolicy tiers;                  // where this phase's weights may live
};

PhasePlan build_phase(const PhaseSpec& spec, const GpuSet& gpus);

// "embedders, refiner, block 0-29" for the groups in `tier` (consecutive numbered names joined).
std::string describe_groups(const std::vector<WeightGroup>& groups, Tier tier);

}  // namespace orochi::planner

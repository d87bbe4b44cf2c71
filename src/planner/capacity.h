// What more GPUs buy for one request: the equivalent single-GPU capacity of 1..N GPUs under each
// layout, and, for a request that does not fit, the changes that make it fit (each one re-planned).
#pragma once

#include <string>
#include <vector>

#include "planner/plan_memory.h"

namespace orochi::planner {

// plan_memory without the capacity table and suggestions (they re-plan through this). `known`: the
// request's shape when it is already computed (the same request), else null.
// at_once_allowed: the reference encode and the text encoder may run at once on two GPUs or more
// (MemoryPlan::pre_overlap; only where the pair fits).
Expected<MemoryPlan> plan_memory_impl(const PlanInput& input, const RequestShape* known, bool with_extras,
                                      bool at_once_allowed = true);

// Rows for n = 1..input.gpus.count: "none" for one GPU, then tp n and sp n where n divides the
// heads. Every weight of the denoiser and decode phases resident (the capacity a layout gives,
// without streaming); the text encoder, on GPU 0 alone in every layout, is not counted.
Expected<std::vector<CapacityRow>> capacity_table(const PlanInput& input, const RequestShape& shape);

// Re-plans with: weights allowed in host RAM / on peers; more GPUs of the same size under tp or sp
// (up to 8); a smaller canvas; fewer frames. Returns the ones that fit, as advice with the flags.
std::vector<std::string> suggest_fixes(const PlanInput& input, const RequestShape& shape);

}  // namespace orochi::planner

// The plan as users read it: tables per phase and GPU (pool | GiB | what is in it), the weight
// tiers, a summary line ("fits with X GiB to spare" / "does not fit by X GiB; to fit: ..."), the
// per-step time estimate and the equivalent single-GPU capacity table; and the same data as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "planner/plan_memory.h"

namespace orochi::planner {

std::string plan_text(const MemoryPlan& plan);
nlohmann::json plan_json(const MemoryPlan& plan);

// "fits with 88.31 GiB to spare (tightest: GPU 0, denoiser phase)" or "does not fit by ...".
std::string plan_summary_line(const MemoryPlan& plan);

}  // namespace orochi::planner

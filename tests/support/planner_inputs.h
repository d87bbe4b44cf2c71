// A planner request for the released H3 (and its text encoder) at 832x480, as the planner tests
// build it, and its plan with the error reported as a test failure.
#pragma once

#include <gtest/gtest.h>

#include "planner/plan_memory.h"

namespace orochi::testing {

inline planner::PlanInput h3_plan_input(double vram_gib, int gpus = 1, const char* layout = "none") {
  planner::PlanInput in;
  in.models = *planner::load_model_configs("h3");
  in.request.width = 832;
  in.request.height = 480;
  in.gpus.count = gpus;
  in.gpus.vram_bytes = planner::from_gib(vram_gib);
  in.layout = *planner::parse_parallel_layout(layout);
  return in;
}

inline planner::MemoryPlan plan_or_fail(const planner::PlanInput& in) {
  Expected<planner::MemoryPlan> plan = planner::plan_memory(in);
  EXPECT_TRUE(plan.has_value()) << plan.status().to_string();
  return plan.has_value() ? *plan : planner::MemoryPlan{};
}

}  // namespace orochi::testing

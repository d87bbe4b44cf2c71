// One list of buffers: the request arena the planner adds up for the denoiser phase is the list the
// GPU runner allocates (h3::gpu::RequestBuffers::specs binds h3::gpu::arena_buffers to its
// tensors), for t2va at 480p, 768p and odd canvases, on one GPU, tp2, sp2, tp2xsp2, and with weights
// streamed from host RAM. CPU only: the runner's allocation list is host code.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "dist/parallel_options.h"
#include "models/h3/request_buffers.h"
#include "models/h3/tensor_parallel.h"
#include "planner/h3_denoiser_memory.h"
#include "planner/plan_memory.h"
#include "support/planner_inputs.h"

namespace orochi {
namespace {

struct Case {
  int64_t width, height;
  const char* layout;
  int gpus;
  double vram_gib;  // 24: the one-GPU plans stream blocks from host RAM
};

// The planner's denoiser-phase items on GPU 0 outside the weights and margin pools, by name, with
// their pool.
struct PlannedItem {
  uint64_t bytes = 0;
  planner::PoolKind pool = planner::PoolKind::kWeights;
};
std::map<std::string, PlannedItem> planned_arena_items(const planner::MemoryPlan& plan) {
  std::map<std::string, PlannedItem> items;
  for (const planner::PhasePlan& phase : plan.phases) {
    if (phase.name != "denoiser") continue;
    for (const planner::Pool& pool : phase.gpus.at(0).pools) {
      if (pool.kind == planner::PoolKind::kWeights || pool.kind == planner::PoolKind::kMargin) continue;
      for (const planner::PoolItem& item : pool.items) {
        items[item.name].bytes += item.bytes;
        items[item.name].pool = pool.kind;
      }
    }
  }
  return items;
}

TEST(PlannerRunnerBuffers, TheDenoiserArenaIsOneListForEveryLayoutAndCanvas) {
  const Case cases[] = {{832, 480, "none", 1, 139},  {1344, 768, "none", 1, 139}, {608, 352, "none", 1, 139},
                        {832, 480, "none", 1, 24},   {1344, 768, "tp2", 2, 139},  {832, 480, "sp2", 2, 139},
                        {1344, 768, "tp2xsp2", 4, 139}, {608, 352, "sp2", 2, 139}, {1344, 768, "sp2", 2, 24}};
  for (const Case& k : cases) {
    for (dist::SpQkv qkv : {dist::SpQkv::kAuto, dist::SpQkv::kHeads, dist::SpQkv::kGather}) {
      planner::PlanInput in = testing::h3_plan_input(k.vram_gib, k.gpus, k.layout);
      in.request.width = k.width;
      in.request.height = k.height;
      in.sp.qkv = qkv;
      const std::string what = std::to_string(k.width) + "x" + std::to_string(k.height) + " " + k.layout + " at " +
                               std::to_string(static_cast<int>(k.vram_gib)) + " GiB, sp-qkv " +
                               std::to_string(static_cast<int>(qkv));
      const planner::MemoryPlan plan = testing::plan_or_fail(in);
      const std::map<std::string, PlannedItem> planned = planned_arena_items(plan);

      // What the runner of GPU 0 allocates for this request (gpu_runner.cpp: request_arena_bytes
      // over RequestBuffers::specs, the same arena_buffers list).
      const h3::H3Config& c = in.models.transformer;
      const h3::gpu::RequestSize size{plan.shape.rows, plan.shape.text_rows, plan.shape.video_rows,
                                      plan.shape.audio_rows, plan.shape.timesteps};
      const h3::ParallelRank rank{0, in.layout.tp(), 0, in.layout.sp()};
      const bool gathers = h3::sp_gathers_rows(c, rank.tp_size, rank.sp_size, qkv);
      h3::gpu::RequestBuffers buffers;
      const std::vector<h3::gpu::BufferSpec> allocated = buffers.specs(c, size, rank, gathers);
      const std::vector<h3::gpu::ArenaBuffer> listed = h3::gpu::arena_buffers(c, size, rank, gathers);
      ASSERT_EQ(allocated.size(), listed.size()) << what;
      uint64_t runner_bytes = 0, matched = 0;
      for (size_t i = 0; i < listed.size(); ++i) {
        EXPECT_EQ(allocated[i].shape, listed[i].shape) << what << ": " << listed[i].name;
        EXPECT_EQ(allocated[i].dtype, listed[i].dtype) << what << ": " << listed[i].name;
        const std::string name =
            listed[i].name + " " + dtype_name(listed[i].dtype) + " " + shape_to_string(listed[i].shape);
        const auto it = planned.find(name);
        ASSERT_NE(it, planned.end()) << what << ": the plan lacks the runner's buffer " << name;
        EXPECT_EQ(it->second.bytes, listed[i].bytes()) << what << ": " << name;
        runner_bytes += listed[i].bytes();
        matched += it->second.bytes;
      }
      EXPECT_EQ(runner_bytes, matched) << what;
      // Beyond the list, the plan holds only what the libraries size on the GPU, and the staging
      // slots streamed blocks rotate through.
      for (const auto& [name, item] : planned) {
        bool in_list = false;
        for (const h3::gpu::ArenaBuffer& b : listed)
          in_list |= name == b.name + " " + dtype_name(b.dtype) + " " + shape_to_string(b.shape);
        const bool outside = name == "attention workspace (estimate)" || name == "cuBLASLt workspace" ||
                             name == "NCCL channel buffers (estimate)";
        const bool block_slots = item.pool == planner::PoolKind::kStaging && k.vram_gib < 139;
        EXPECT_TRUE(in_list || outside || block_slots) << what << ": unexpected plan item '" << name << "'";
      }
    }
  }
}

// Weighted SP rows (the sp-weights switch) size the arena by the largest share, as the runner does.
TEST(PlannerRunnerBuffers, WeightedSpRowsPlanTheLargestShare) {
  planner::PlanInput in = testing::h3_plan_input(139, 2, "sp2");
  const planner::MemoryPlan even = testing::plan_or_fail(in);
  in.sp.row_weights = {1.3, 0.7};
  const planner::MemoryPlan weighted = testing::plan_or_fail(in);
  const uint64_t even_act = even.phases[1].gpus[0].pool_bytes(planner::PoolKind::kActivations);
  const uint64_t weighted_act = weighted.phases[1].gpus[0].pool_bytes(planner::PoolKind::kActivations);
  // The largest share holds 0.65 of the rows instead of 0.5: the per-row activations grow with it.
  EXPECT_GT(weighted_act, even_act * 5 / 4) << even_act << " vs " << weighted_act;
  EXPECT_LT(weighted_act, even_act * 3 / 2) << even_act << " vs " << weighted_act;
}

}  // namespace
}  // namespace orochi

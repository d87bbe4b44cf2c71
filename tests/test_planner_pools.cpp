// The planner's memory models against what the GPU code allocates (calibration measured on an
// H200, bench/RESULTS.md) and the plan's bookkeeping: pools sum to each GPU's total.
#include <gtest/gtest.h>

#include "planner/decode_memory.h"
#include "planner/h3_denoiser_memory.h"
#include "planner/plan_memory.h"
#include "planner/request_shape.h"

namespace orochi::planner {
namespace {

ModelConfigs released() { return *load_model_configs("h3"); }

RequestShape shape_for(int64_t width, int64_t height) {
  PlanRequest r;
  r.width = width;
  r.height = height;
  Expected<RequestShape> s = request_shape(released(), r);
  EXPECT_TRUE(s.has_value()) << s.status().to_string();
  return *s;
}

void expect_within(double actual, double expected, double relative, const char* what) {
  EXPECT_NEAR(actual, expected, expected * relative) << what << ": " << actual << " vs " << expected;
}

TEST(PlannerShape, PackedRowsAndTablesMatchThePipeline) {
  const RequestShape s480 = shape_for(832, 480), s768 = shape_for(1344, 768);
  EXPECT_EQ(s480.rows, 15100);  // MODELS_H3.md §8
  EXPECT_EQ(s768.rows, 37966);
  EXPECT_EQ(s768.video_rows, 37296);
  EXPECT_EQ(s768.audio_rows, 414);
  EXPECT_EQ(s768.timesteps, 15);  // 8 video + 8 audio timesteps sharing t = 0
  EXPECT_EQ(s480.vae_tiles_per_chunk, 12);
  EXPECT_EQ(s768.vae_tiles_per_chunk, 28);
  EXPECT_EQ(s768.vae_chunks, 7);
  EXPECT_EQ(s768.vae_tile_tokens, 7 * 16 * 16);
}

TEST(PlannerCalibration, ResidentDenoiserWeightsAre37_44GiB) {
  uint64_t resident = 0, adaln = 0;
  for (const WeightGroup& g : h3_weight_groups(released().transformer, ParallelLayout{}))
    (g.tier == Tier::kStreamedOnce ? adaln : resident) += g.bytes;
  expect_within(to_gib(resident), 37.44, 0.005, "resident weights GiB (gpu_weights.cpp, measured)");
  expect_within(static_cast<double>(adaln) / 2, 13.04e9, 0.01, "AdaLN parameters");  // bf16
}

TEST(PlannerCalibration, RequestArenaMatchesTheMeasuredH200Runs) {
  // bench dit measured 3.28 GiB (480p) and 7.5 GiB (768p) with its 2 distinct timesteps.
  RequestShape s480 = shape_for(832, 480), s768 = shape_for(1344, 768);
  const h3::H3Config c = released().transformer;
  s480.timesteps = s768.timesteps = 2;
  expect_within(to_gib(h3_request_arena_bytes(c, s480)), 3.28, 0.05, "480p arena");
  expect_within(to_gib(h3_request_arena_bytes(c, s768)), 7.5, 0.05, "768p arena");
  // A generate run tables all 15 timesteps: 13 more tables of 50 x 3 x 6H bf16.
  RequestShape full = shape_for(832, 480);
  const double more = static_cast<double>(h3_request_arena_bytes(c, full) - h3_request_arena_bytes(c, s480));
  const double tables = 50.0 * 13 * 3 * 6 * 5376 * 2 + 13.0 * 2 * 5376 * 2;
  const double time_embedding = 13.0 * (256 * 4 + 5376 * 4 + 2688 * 4 + 2688 * 2);
  EXPECT_NEAR(more, tables + time_embedding, 4 * 256.0);  // up to one alignment per buffer
}

TEST(PlannerCalibration, VideoVaeWeightsAndTileActivations) {
  const ModelConfigs m = released();
  uint64_t video = 0;
  for (const WeightGroup& g : decode_weight_groups(m))
    if (g.name != "audio VAE") video += g.bytes;
  expect_within(static_cast<double>(video), 4.85e9, 0.05, "video VAE f16 weights (gpu_vae_weights.cpp)");
  expect_within(static_cast<double>(video_vae_tile_bytes(m.video_vae, 1792)), 180.8e6, 0.05,
                "activations of a 1797-token tile");
}

void expect_pools_sum(const MemoryPlan& plan) {
  for (const PhasePlan& phase : plan.phases)
    for (const GpuPlan& g : phase.gpus) {
      uint64_t pools = 0, items = 0;
      for (const Pool& p : g.pools) {
        pools += p.bytes();
        for (const PoolItem& i : p.items) items += i.bytes;
      }
      EXPECT_EQ(pools, g.total()) << phase.name << " GPU " << g.gpu;
      EXPECT_EQ(items, g.total()) << phase.name << " GPU " << g.gpu;
      EXPECT_EQ(g.pools.size(), std::size(kAllPoolKinds));
    }
}

TEST(PlannerPools, PoolsSumToEachGpusTotal) {
  PlanInput in;
  in.models = released();
  for (const char* layout : {"none", "tp2", "sp4"})
    for (double vram : {139.0, 24.0}) {
      in.layout = *parse_parallel_layout(layout);
      in.gpus.count = 4;
      in.gpus.vram_bytes = from_gib(vram);
      Expected<MemoryPlan> plan = plan_memory(in);
      ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
      ASSERT_EQ(plan->phases.size(), 3u);
      expect_pools_sum(*plan);
      // The resident weights pool is exactly the resident groups of the placement.
      const PhasePlan& d = plan->phases[1];
      uint64_t resident = 0;
      for (const WeightGroup& g : d.groups)
        if (g.tier == Tier::kResident) resident += g.bytes;
      EXPECT_EQ(d.gpus[0].pool_bytes(PoolKind::kWeights), resident) << layout << " " << vram;
    }
}

TEST(PlannerPools, SingleH200PlanReproducesTheMeasuredRun) {
  PlanInput in;
  in.models = released();
  in.request.width = 832;
  in.request.height = 480;
  Expected<MemoryPlan> plan = plan_memory(in);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_TRUE(plan->fits);
  const GpuPlan& g = plan->phases[1].gpus[0];
  expect_within(to_gib(g.pool_bytes(PoolKind::kWeights)), 37.44, 0.005, "denoiser weights pool");
  // Everything the request arena holds, in its pools (15 tables here, 2 in the benchmark).
  const uint64_t arena = g.pool_bytes(PoolKind::kActivations) + g.pool_bytes(PoolKind::kRequestState) +
                         g.pool_bytes(PoolKind::kStaging) + g.pool_bytes(PoolKind::kScratch) - 32 * kMiB;
  expect_within(to_gib(arena), 3.28, 0.05, "480p request arena");
  EXPECT_EQ(g.pool_bytes(PoolKind::kComm), 0u);
  EXPECT_NEAR(plan->step_compute_s, 909e12 / 580e12, 0.05);  // MODELS_H3.md §8: 909 TFLOP
}

// Ulysses' buffers (models/h3/request_buffers.cpp): q, k, v, o of all rows of this GPU's heads
// (qa..oa), and at SP2 the peers' rows of the attention input (xa, the rows-gathering scheme); SP4
// exchanges q/k/v chunks.
TEST(PlannerPools, SequenceParallelCommBuffersFollowTheQkvScheme) {
  PlanInput in;
  in.models = released();
  in.request.width = 1344;
  in.request.height = 768;
  for (const char* layout : {"sp2", "sp4"}) {
    in.layout = *parse_parallel_layout(layout);
    in.gpus.count = in.layout.sp();
    Expected<MemoryPlan> plan = plan_memory(in);
    ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
    bool gathered = false;
    for (const Pool& p : plan->phases[1].gpus[0].pools)
      for (const PoolItem& i : p.items)
        gathered = gathered || (p.kind == PoolKind::kComm && i.name.rfind("xa ", 0) == 0);
    EXPECT_EQ(gathered, std::string(layout) == "sp2") << layout;
  }
}

}  // namespace
}  // namespace orochi::planner

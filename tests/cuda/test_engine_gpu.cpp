// The engine on a GPU keeps its model loaded: two requests on one engine (the released shapes with
// random weights, a short 480p clip), the second one's load under 1% of the first's, its outputs
// equal to the first's for the same seed, and memory between requests back to the resident weights.
// A request cancelled after its first step leaves the model loaded: the next one loads nothing and
// gives the frames an uncancelled request gives.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "engine/engine.h"

namespace orochi::engine {
namespace {

// The released shapes with random weights on GPU 0 (made at the first run, not here).
Expected<std::unique_ptr<Engine>> open_random_engine() {
  ModelSource source;
  source.random_weights = true;
  EngineOptions options;
  options.device = "cuda:0";
  return Engine::open(source, options);
}

// A short 480p clip: enough to run every stage, quick at the real shapes.
GenerateRequest short_request(int64_t steps, uint64_t seed) {
  GenerateRequest request;
  request.width = 832;
  request.height = 480;
  request.frames = 22;
  request.steps = steps;
  request.seed = seed;
  return request;
}

TEST(EngineGpu, TheSecondRequestLoadsNothing) {
  if (gpu_backend().device_count() == 0) GTEST_SKIP() << "no GPU";
  Expected<std::unique_ptr<Engine>> engine = open_random_engine();
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  Expected<RunPlan> plan = (*engine)->plan(short_request(2, 5));
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  ASSERT_TRUE(plan->memory.has_value());
  EXPECT_TRUE(plan->keep_denoiser_weights);  // an H200 holds the denoiser and the decode together

  Expected<RunResult> first = (*engine)->run(*plan);
  ASSERT_TRUE(first.has_value()) << first.status().to_string();
  const uint64_t between = gpu_backend().memory_used(0);
  Expected<RunResult> second = (*engine)->run(*plan);
  ASSERT_TRUE(second.has_value()) << second.status().to_string();
  std::printf(
      "[engine-gpu] load: first request %.3f s, second %.6f s (its request memory %.3f s); GPU in use between "
      "requests %.2f GiB\n",
      first->report.load_s, second->report.load_s, second->report.request_memory_s,
      static_cast<double>(between) / (1 << 30));
  EXPECT_GT(first->report.load_s, 0.0);
  EXPECT_LT(second->report.load_s, 0.01 * first->report.load_s);
  // Between requests the GPU holds the resident weights (37.44 GiB planned) and little else.
  uint64_t planned_weights = 0;
  for (const planner::PhasePlan& phase : plan->memory->phases)
    if (phase.name == "denoiser") planned_weights = phase.gpus[0].pool_bytes(planner::PoolKind::kWeights);
  EXPECT_LT(between, planned_weights + (uint64_t{4} << 30)) << "more than the weights and 4 GiB stay allocated";
  ASSERT_EQ(first->result.frames.nbytes(), second->result.frames.nbytes());
  EXPECT_EQ(0, std::memcmp(first->result.frames.raw_data(), second->result.frames.raw_data(),
                           first->result.frames.nbytes()));
  EXPECT_EQ(0, std::memcmp(first->result.waveform.raw_data(), second->result.waveform.raw_data(),
                           first->result.waveform.nbytes()));
}

TEST(EngineGpu, ACancelledRequestKeepsTheModelLoaded) {
  if (gpu_backend().device_count() == 0) GTEST_SKIP() << "no GPU";
  Expected<std::unique_ptr<Engine>> engine = open_random_engine();
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  const GenerateRequest request = short_request(3, 9);
  Expected<RunPlan> plan = (*engine)->plan(request);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  ASSERT_TRUE(plan->keep_denoiser_weights);

  std::atomic<bool> cancel{false};
  int steps_seen = 0;
  auto cancel_after_first_step = [&](const ProgressCallback::argument_type& p) {
    if (p.stage == "denoise" && ++steps_seen == 1) cancel = true;
  };
  Expected<RunResult> cancelled = (*engine)->run(*plan, cancel_after_first_step, &cancel);
  ASSERT_FALSE(cancelled.has_value());
  EXPECT_EQ(cancelled.status().code(), ErrorCode::kCancelled) << cancelled.status().to_string();
  EXPECT_LT(steps_seen, 3) << "the cancel was not seen between steps";
  cancel = false;
  Expected<RunResult> next = (*engine)->run(*plan);
  ASSERT_TRUE(next.has_value()) << next.status().to_string();
  std::printf("[engine-gpu] after a cancel after step 1 of 3: next request's load %.6f s, request memory %.3f s\n",
              next->report.load_s, next->report.request_memory_s);
  EXPECT_LT(next->report.load_s, 0.01) << "the cancel dropped the model";
  // The same frames as an uncancelled request on a fresh engine.
  engine->reset();  // one model at a time on the GPU
  Expected<std::unique_ptr<Engine>> fresh = open_random_engine();
  ASSERT_TRUE(fresh.has_value()) << fresh.status().to_string();
  Expected<RunPlan> fresh_plan = (*fresh)->plan(request);
  ASSERT_TRUE(fresh_plan.has_value()) << fresh_plan.status().to_string();
  Expected<RunResult> reference = (*fresh)->run(*fresh_plan);
  ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
  ASSERT_EQ(next->result.frames.nbytes(), reference->result.frames.nbytes());
  EXPECT_EQ(0, std::memcmp(next->result.frames.raw_data(), reference->result.frames.raw_data(),
                           next->result.frames.nbytes()));
}

}  // namespace
}  // namespace orochi::engine

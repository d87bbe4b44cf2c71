// On the device (issue 28): the planner's reference-encode phase is what the GPU encoders reserve.
// For REF2VA.md's mix at the released configs, each visual input's GPU video encoder created as the
// plan says (its own max_tile_shape, device tiles) and the audio encoder (2 x the longest sound's
// samples) reserve, at their largest, exactly the phase's weights + activations; and the driver's
// free memory drops by at least that much (their arenas are real allocations). Skips without a GPU.
#include <algorithm>

#include "models/h3_audio_vae/cuda/gpu_audio_encoder.h"
#include "models/h3_video_vae/cuda/gpu_encoder.h"
#include "planner/encode_memory.h"
#include "planner/plan_memory.h"
#include "support/planner_inputs.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;
using pipeline::ReferenceGeometry;

class PlannerEncodeGpu : public GpuTest {
 protected:
  PlannerEncodeGpu() : GpuTest(size_t{1} << 20) {}
};

TEST_F(PlannerEncodeGpu, PlannedBytesAreReservedBytes) {
  planner::PlanInput in = testing::h3_plan_input(139);
  in.request.references = {ReferenceGeometry::image(128, 228), ReferenceGeometry::video(32, 48, 84, 200),
                           ReferenceGeometry::audio(207)};
  const planner::MemoryPlan plan = testing::plan_or_fail(in);
  const planner::PhasePlan* encode = plan.phase("reference encode");
  ASSERT_NE(encode, nullptr);
  const uint64_t planned = encode->gpus[0].pool_bytes(planner::PoolKind::kWeights) +
                           encode->gpus[0].pool_bytes(planner::PoolKind::kActivations);
  Expected<planner::EncodeWork> work = planner::encode_work(in.models, in.request, plan.shape.geometry);
  ASSERT_TRUE(work.has_value()) << work.status().to_string();

  auto audio = h3_audio::gpu::GpuAudioEncoder::create(in.models.audio_vae, 0, planner::audio_encoder_samples(*work), 2);
  ASSERT_TRUE(audio.has_value()) << audio.status().to_string();
  size_t video_most = 0;
  for (const planner::VisualEncode& e : work->visuals) {
    Expected<h3vae::EncoderTileShape> tile = planner::video_encoder_tile(in.models, e);
    ASSERT_TRUE(tile.has_value()) << tile.status().to_string();
    h3vae::gpu::GpuEncoderOptions options;
    options.device_tiles = planner::kEncoderDeviceTiles;
    size_t free_before = 0, free_after = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
    auto video = h3vae::gpu::GpuVideoEncoder::create(in.models.video_vae, 0, *tile, options);
    ASSERT_TRUE(video.has_value()) << e.what << ": " << video.status().to_string();
    ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
    const size_t reserved = (*video)->reserved_bytes();
    EXPECT_GE(free_before - free_after, reserved) << e.what;
    std::printf("PLANNER_ENCODE %s: tile %lldx%lldx%lld clip %lldx%lld, reserved %.3f GiB, driver %.3f GiB\n",
                e.what.c_str(), static_cast<long long>(tile->frames), static_cast<long long>(tile->height),
                static_cast<long long>(tile->width), static_cast<long long>(tile->clip_height),
                static_cast<long long>(tile->clip_width), reserved / 1073741824.0,
                (free_before - free_after) / 1073741824.0);
    video_most = std::max(video_most, reserved);
  }
  const size_t reserved = video_most + (*audio)->reserved_bytes();
  std::printf("PLANNER_ENCODE planned %.3f GiB, reserved %.3f GiB (audio %.3f GiB)\n", planned / 1073741824.0,
              reserved / 1073741824.0, (*audio)->reserved_bytes() / 1073741824.0);
  EXPECT_EQ(planned, reserved);
}

}  // namespace
}  // namespace orochi

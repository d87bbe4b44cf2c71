// Weight streaming on the GPU: the same model with some transformer blocks streamed through
// staging slots (from pinned host RAM, or from a second GPU) gives outputs bit-identical to the
// all-resident run, over several forwards (the slots wrap around between passes), for random
// weights generated on the GPU and for host weights uploaded.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/cuda/device.h"
#include "h3_narrow_model.h"
#include "models/h3/cuda/gpu_runner.h"
#include "support/checkpoint_copy.h"
#include "support/golden.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

using h3::gpu::H3GpuRunner;
using h3::gpu::WeightStreaming;
using h3::gpu::WeightTier;

int gpu_count() {
  auto devices = cuda::list_devices();
  return devices.has_value() ? static_cast<int>(devices->size()) : 0;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// Three forwards of the same request; the outputs of each.
std::vector<h3::H3Outputs> run(const h3::H3Config& c, const testing::Request& r, const WeightStreaming& streaming,
                               const h3::H3Weights* host) {
  std::vector<h3::H3Outputs> outs;
  auto runner = H3GpuRunner::create(c, 0, r.size, {}, streaming);
  EXPECT_TRUE(runner.has_value()) << runner.status().to_string();
  if (!runner) return outs;
  Status s = host ? (*runner)->upload_weights(*host) : (*runner)->init_random_weights(9);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_TRUE((*runner)->set_request(r.timesteps, r.in).is_ok());
  for (int pass = 0; pass < 3; ++pass) {
    s = (*runner)->forward();
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    Expected<h3::H3Outputs> out = (*runner)->outputs();
    EXPECT_TRUE(out.has_value()) << out.status().to_string();
    if (out) outs.push_back(std::move(out).value());
  }
  if (streaming.any()) {
    const weights::StreamStats* st = (*runner)->stream_stats();
    EXPECT_NE(st, nullptr);
    int count = 0;
    for (bool b : streaming.streamed) count += b ? 1 : 0;
    if (st) {
      EXPECT_GE(st->copies(), count);  // every streamed block came in at least once
    }
    EXPECT_GT((*runner)->tier_bytes(), 0u);
  }
  return outs;
}

void expect_identical(const std::vector<h3::H3Outputs>& got, const std::vector<h3::H3Outputs>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(same_bytes(got[i].video, want[i].video)) << what << ", forward " << i << ": video differs";
    EXPECT_TRUE(same_bytes(got[i].audio, want[i].audio)) << what << ", forward " << i << ": audio differs";
  }
}

TEST(H3GpuStreaming, StreamedBlocksGiveTheResidentOutputsBitForBit) {
  if (gpu_count() < 1) GTEST_SKIP() << "no GPU";
  h3::H3Config c = testing::narrow_config();
  c.num_layers = 5;
  const testing::Request r = testing::narrow_request(c);
  const auto resident = run(c, r, {}, nullptr);
  // The planner's shape (the last blocks stream), every other block, and every block through one slot.
  const std::vector<std::vector<bool>> plans = {{false, false, true, true, true}, {true, false, true, false, true},
                                                {true, true, true, true, true}};
  for (const auto& streamed : plans)
    for (int slots : {1, 2}) {
      expect_identical(run(c, r, {streamed, slots, WeightTier::kHost, -1}, nullptr), resident, "pinned host tier");
      if (gpu_count() >= 2)
        expect_identical(run(c, r, {streamed, slots, WeightTier::kPeer, 1}, nullptr), resident, "peer tier");
    }
}

// The tiny golden's request (inputs and timesteps) into `r`.
void tiny_golden_request(testing::Request* r) {
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(testing::h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  r->in = testing::golden_inputs(*golden);
  r->timesteps = testing::golden_tensor(*golden, "in.timestep");
  r->size = {r->in.rows(), r->in.text.dim(0), r->in.video.dim(0), r->in.audio.dim(0), r->timesteps.numel()};
}

TEST(H3GpuStreaming, UploadedHostWeightsStreamToo) {
  if (gpu_count() < 1) GTEST_SKIP() << "no GPU";
  Expected<h3::H3Weights> w = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  testing::Request r;
  ASSERT_NO_FATAL_FAILURE(tiny_golden_request(&r));
  const auto resident = run(w->config, r, {}, &*w);
  std::vector<bool> streamed(static_cast<size_t>(w->config.num_layers), true);
  streamed[0] = false;
  expect_identical(run(w->config, r, {streamed, 2, WeightTier::kHost, -1}, &*w), resident, "uploaded, host tier");
}

// A GPU run loads the checkpoint's bf16 tensors as stored (h3::load_weights(..., as_stored)) and
// converts on upload: the same forward, bit for bit, as uploading the f32 reading of those tensors.
TEST(H3GpuStreaming, Bf16WeightsUploadedAsStoredGiveTheF32ReadingsOutputs) {
  if (gpu_count() < 1) GTEST_SKIP() << "no GPU";
  testing::TempDir dir("h3_gpu_bf16");
  testing::write_converted_copy(testing::h3_tiny_dir() + "/transformer", dir.path, DType::kBF16);
  Expected<h3::H3Weights> as_stored = h3::load_weights(dir.path.string(), /*as_stored=*/true);
  Expected<h3::H3Weights> as_f32 = h3::load_weights(dir.path.string());
  ASSERT_TRUE(as_stored.has_value() && as_f32.has_value());
  ASSERT_EQ(as_stored->blocks.at(0).attn.to_q.weight.dtype(), DType::kBF16);
  testing::Request r;
  ASSERT_NO_FATAL_FAILURE(tiny_golden_request(&r));
  expect_identical(run(as_stored->config, r, {}, &*as_stored), run(as_f32->config, r, {}, &*as_f32),
                   "bf16 as stored vs its f32 reading");
}

TEST(H3GpuStreaming, BadStreamingPlansAreRefused) {
  if (gpu_count() < 1) GTEST_SKIP() << "no GPU";
  const h3::H3Config c = testing::narrow_config();  // 3 blocks
  const testing::Request r = testing::narrow_request(c);
  auto wrong_count = H3GpuRunner::create(c, 0, r.size, {}, {{true, true}, 2, WeightTier::kHost, -1});
  ASSERT_FALSE(wrong_count.has_value());
  EXPECT_NE(wrong_count.status().message().find("covers 2 blocks"), std::string::npos) << wrong_count.status().message();
  auto no_slots = H3GpuRunner::create(c, 0, r.size, {}, {{true, true, true}, 0, WeightTier::kHost, -1});
  EXPECT_FALSE(no_slots.has_value());
  auto same_gpu = H3GpuRunner::create(c, 0, r.size, {}, {{true, true, true}, 2, WeightTier::kPeer, 0});
  ASSERT_FALSE(same_gpu.has_value());
  EXPECT_NE(same_gpu.status().message().find("another GPU"), std::string::npos) << same_gpu.status().message();
}

}  // namespace
}  // namespace orochi

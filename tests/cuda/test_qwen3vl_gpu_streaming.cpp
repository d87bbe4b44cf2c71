// The Qwen3-VL text stack on the GPU with streamed layers (pinned host RAM, or another GPU's
// memory, through staging slots) gives bit-identical outputs to the all-resident stack; a
// checkpoint written from the GPU's weights loads back (staged upload) to the same outputs; and
// the misuses a caller can make are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "backends/cuda/device.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#include "support/compare.h"
#include "support/paths.h"

namespace orochi {
namespace {

using qwen3vl::gpu::GpuTextEncoder;
using qwen3vl::gpu::TextStreaming;
using weights::WeightTier;

#define REQUIRE_GPU() \
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU"

constexpr int64_t kLayers = 3;  // the tiny golden model's

qwen3vl::TextConfig tiny_config() {
  Expected<qwen3vl::TextWeights> w =
      qwen3vl::load_text_weights(testing::test_data_dir() + "/qwen3vl_text/text_encoder", kLayers);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return w->config;
}

Tensor prompt(int64_t L, int64_t vocab) {
  Tensor ids = Tensor::empty({L}, DType::kI64);
  for (int64_t i = 0; i < L; ++i) ids.data<int64_t>()[i] = (i * 7919 + 3) % vocab;
  return ids;
}

int gpu_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

// Random weights (seed 11) through `streaming`, on 24 prompt tokens, into `result`.
void run_random(const qwen3vl::TextConfig& c, const TextStreaming& streaming, Tensor* result) {
  auto enc = GpuTextEncoder::create(c, kLayers, 0, 32, streaming);
  OROCHI_CHECK(enc.has_value(), enc.status().to_string());
  Status s = (*enc)->init_random(11);
  OROCHI_CHECK(s.is_ok(), s.to_string());
  Tensor out;
  for (int pass = 0; pass < 2; ++pass) {  // the second pass reuses the slots
    Expected<Tensor> o = (*enc)->encode_text(prompt(24, c.vocab_size));
    OROCHI_CHECK(o.has_value(), o.status().to_string());
    if (pass == 1) EXPECT_TENSOR_CLOSE(*o, out, 0.0);
    out = *o;
  }
  if (streaming.any()) {
    const weights::StreamStats* st = (*enc)->stream_stats();
    EXPECT_NE(st, nullptr);
    if (st) {
      EXPECT_GT(st->copies(), 0);
    }
    EXPECT_GT((*enc)->tier_bytes(), 0u);
  }
  *result = out;
}

TEST(Qwen3VLGpuStreaming, StreamedLayersGiveTheResidentOutputsBitForBit) {
  REQUIRE_GPU();
  const qwen3vl::TextConfig c = tiny_config();
  Tensor resident, streamed;
  run_random(c, {}, &resident);
  const std::vector<std::vector<bool>> masks = {{false, true, true}, {true, true, true}, {true, false, true}};
  for (const auto& mask : masks)
    for (int slots : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << "slots " << slots << ", first layer streamed " << mask[0]);
      run_random(c, {mask, slots, WeightTier::kHost, -1}, &streamed);
      EXPECT_TENSOR_CLOSE(streamed, resident, 0.0);
      if (gpu_count() < 2) continue;
      run_random(c, {mask, slots, WeightTier::kPeer, 1}, &streamed);
      EXPECT_TENSOR_CLOSE(streamed, resident, 0.0);
    }
}

TEST(Qwen3VLGpuStreaming, AWrittenCheckpointLoadsBackToTheSameOutputs) {
  REQUIRE_GPU();
  const qwen3vl::TextConfig c = tiny_config();
  const std::string dir = ::testing::TempDir() + "/orochi_qwen3vl_written";
  std::filesystem::remove_all(dir);
  auto writer = GpuTextEncoder::create(c, kLayers, 0, 32);
  ASSERT_TRUE(writer.has_value());
  ASSERT_TRUE((*writer)->init_random(11).is_ok());
  ASSERT_TRUE((*writer)->write_checkpoint(dir).is_ok());
  const Tensor ids = prompt(24, c.vocab_size);
  Expected<Tensor> expected = (*writer)->encode_text(ids);
  ASSERT_TRUE(expected.has_value());

  Expected<qwen3vl::TextWeights> host = qwen3vl::load_text_weights(dir, kLayers);
  ASSERT_TRUE(host.has_value()) << host.status().to_string();
  EXPECT_EQ(host->prefix, "");
  for (const TextStreaming& streaming : {TextStreaming{}, TextStreaming{{false, true, true}, 1, WeightTier::kHost, -1}}) {
    auto reader = GpuTextEncoder::create(host->config, kLayers, 0, 32, streaming);
    ASSERT_TRUE(reader.has_value());
    ASSERT_TRUE((*reader)->upload(*host).is_ok());
    EXPECT_GT((*reader)->upload_stats().bytes, 0u);
    Expected<Tensor> out = (*reader)->encode_text(ids);
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    EXPECT_TENSOR_CLOSE(*out, *expected, 0.0);
  }
  std::filesystem::remove_all(dir);
}

TEST(Qwen3VLGpuStreaming, RefusesInconsistentStreaming) {
  REQUIRE_GPU();
  const qwen3vl::TextConfig c = tiny_config();
  EXPECT_EQ(GpuTextEncoder::create(c, kLayers, 0, 8, {{true, false}, 2, WeightTier::kHost, -1}).status().code(),
            ErrorCode::kInvalidArgument);  // 2 entries for 3 layers
  EXPECT_EQ(GpuTextEncoder::create(c, kLayers, 0, 8, {{true, true, true}, 0, WeightTier::kHost, -1}).status().code(),
            ErrorCode::kInvalidArgument);  // no slot
  EXPECT_FALSE(GpuTextEncoder::create(c, kLayers, 0, 8, {{true, true, true}, 2, WeightTier::kPeer, 0}).has_value());
  auto streamed = GpuTextEncoder::create(c, kLayers, 0, 8, {{false, true, true}, 2, WeightTier::kHost, -1});
  ASSERT_TRUE(streamed.has_value());
  ASSERT_TRUE((*streamed)->init_random(1).is_ok());
  EXPECT_EQ((*streamed)->write_checkpoint(::testing::TempDir() + "/orochi_never").code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace orochi

// Our GPU audio VAE encoder against diffusers' at full size, on the random weights and the 5.167 s
// stereo clip scripts/device/compare_h3_audio_vae_encoder.py writes (run both with
// compare_h3_audio_vae_encoder.sh): normalized rows within rel L2 1e-3 of diffusers' plain-fp32
// encode (ours is f32 without TF32), the distance to diffusers' default TF32 encode printed, and the
// encode time and memory. Skips unless OROCHI_H3_AUDIO_VAE_ENCODER_FULL names that folder.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "models/h3_audio_vae/cuda/gpu_audio_encoder.h"
#include "models/h3_audio_vae/encoder.h"
#include "test_cuda_ops_support.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

using namespace cuda_test;

TEST(AudioGpuEncoderFull, MatchesDiffusersOnTheSameWeights) {
  const char* dir = std::getenv("OROCHI_H3_AUDIO_VAE_ENCODER_FULL");
  if (!dir || !*dir) GTEST_SKIP() << "set OROCHI_H3_AUDIO_VAE_ENCODER_FULL (compare_h3_audio_vae_encoder.sh does)";
  auto devices = cuda::list_devices();
  if (!devices) GTEST_SKIP() << devices.status().to_string();

  auto w = h3_audio::load_encoder(std::string(dir) + "/audio_vae");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  auto ref = weights::Checkpoint::open(std::string(dir) + "/reference.safetensors");
  ASSERT_TRUE(ref.has_value()) << ref.status().to_string();
  const Tensor waveform = ref->get("in.waveform")->to(DType::kF32);  // [2, N]
  const Tensor fp32 = ref->get("normalized.fp32")->to(DType::kF32);  // [2, A, 32]
  const Tensor tf32 = ref->get("normalized.tf32")->to(DType::kF32);

  auto created = h3_audio::gpu::GpuAudioEncoder::create(w->config, 0, waveform.dim(1));
  ASSERT_TRUE(created.has_value()) << created.status().to_string();
  h3_audio::gpu::GpuAudioEncoder& enc = **created;
  ASSERT_STATUS_OK(enc.upload(*w));
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto first = enc.encode_reference_audio(waveform);
  const auto t1 = Clock::now();
  ASSERT_TRUE(first.has_value()) << first.status().to_string();
  auto rows = enc.encode_reference_audio(waveform);
  const auto t2 = Clock::now();
  ASSERT_TRUE(rows.has_value()) << rows.status().to_string();
  ASSERT_EQ(rows->shape(), fp32.shape());

  const testing::Comparison vs_fp32 = testing::compare(*rows, fp32), vs_tf32 = testing::compare(*rows, tf32);
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("[audio-encoder-full] ours (f32, no TF32) vs diffusers fp32: %s\n", vs_fp32.summary().c_str());
  std::printf("[audio-encoder-full] ours vs diffusers default (TF32 convolutions): %s\n", vs_tf32.summary().c_str());
  std::printf(
      "[audio-encoder-full] encode [2, %lld] -> [2, %lld, 32] (host to host, normalized): first %.1f ms, "
      "warm %.1f ms; weights %.1f MiB, activations %.1f MiB\n",
      static_cast<long long>(waveform.dim(1)), static_cast<long long>(rows->dim(1)), ms(t1 - t0), ms(t2 - t1),
      enc.weight_bytes() / 1048576.0, enc.activation_bytes_used() / 1048576.0);
  std::fflush(stdout);
  EXPECT_TRUE(vs_fp32.same_nonfinite && vs_fp32.rel_l2 <= 1e-3) << vs_fp32.summary();
}

}  // namespace
}  // namespace orochi

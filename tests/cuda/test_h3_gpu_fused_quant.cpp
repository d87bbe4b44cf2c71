// The quantized H3 forward with the activations' per-token quantization fused into the kernels
// that produce them (fused-quant=on: the AdaLN norms and SwiGLU write the codes, issue 25) against
// the separate quantize pass before each linear (off): bit-identical outputs, in fp8 and int8, all
// blocks resident (each block's pre-attention norm fused into the previous block's last residual)
// and with block 1 streamed (its pre-attention norm a kernel of its own). The stage timer shows
// which path ran, so a fused path that silently fell back to the separate pass would fail here.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "backends/cuda/device.h"
#include "h3_narrow_model.h"
#include "models/h3/cuda/gpu_runner.h"

namespace orochi {
namespace {

using h3::gpu::H3GpuRunner;

struct FusedRun {
  h3::H3Outputs out;
  std::map<std::string, double> stages;  // of the second forward
};

FusedRun run(const h3::H3Config& c, const testing::Request& r, const h3::H3Weights& w, Precision precision, bool fused,
             const h3::gpu::WeightStreaming& streaming = {}) {
  FusedRun result;
  h3::gpu::RunnerOptions options;
  options.precision = precision;
  options.kernels.fused_quantization = fused;
  auto runner = H3GpuRunner::create(c, 0, r.size, {}, streaming, options);
  EXPECT_TRUE(runner.has_value()) << runner.status().to_string();
  if (!runner) return result;
  Status s = (*runner)->upload_weights(w);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  s = (*runner)->set_request(r.timesteps, r.in);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  for (int pass = 0; pass < 2; ++pass) {  // the second reuses every plan and buffer
    if (pass == 1) (*runner)->timer().enable((*runner)->stream());
    s = (*runner)->forward();
    EXPECT_TRUE(s.is_ok()) << precision_name(precision) << (fused ? " fused: " : " unfused: ") << s.to_string();
  }
  result.stages = (*runner)->timer().collect();
  Expected<h3::H3Outputs> out = (*runner)->outputs();
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  if (out) result.out = std::move(out).value();
  return result;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.defined() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(H3GpuFusedQuant, FusedQuantizationGivesTheUnfusedBits) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  const h3::H3Config c = testing::quantizable_narrow_config();
  const testing::Request r = testing::narrow_request(c);
  const h3::H3Weights w = testing::scaled_host_weights(c);
  const h3::gpu::WeightStreaming block1_streamed{{false, true, false}, 1, h3::gpu::WeightTier::kHost, -1};
  for (Precision precision : {Precision::kFp8, Precision::kInt8})
    for (bool streamed : {false, true}) {
      const std::string name = std::string(precision_name(precision)) + (streamed ? ", block 1 streamed" : ", resident");
      const h3::gpu::WeightStreaming streaming = streamed ? block1_streamed : h3::gpu::WeightStreaming{};
      const FusedRun unfused = run(c, r, w, precision, false, streaming);
      const FusedRun fused = run(c, r, w, precision, true, streaming);
      ASSERT_FALSE(HasFailure()) << name;
      EXPECT_TRUE(same_bytes(fused.out.video, unfused.out.video)) << name << ": video differs";
      EXPECT_TRUE(same_bytes(fused.out.audio, unfused.out.audio)) << name << ": audio differs";
      // Which path ran: the separate q/k/v-input pass only unfused, SwiGLU's codes only fused.
      EXPECT_TRUE(unfused.stages.contains("quantize qkv input") && !unfused.stages.contains("swiglu + quantize")) << name;
      EXPECT_TRUE(fused.stages.contains("swiglu + quantize") && !fused.stages.contains("quantize qkv input")) << name;
      std::printf("H3_FUSED_QUANT %-28s video and audio %s\n", name.c_str(),
                  same_bytes(fused.out.video, unfused.out.video) && same_bytes(fused.out.audio, unfused.out.audio)
                      ? "bit-identical"
                      : "DIFFER");
    }
}

}  // namespace
}  // namespace orochi

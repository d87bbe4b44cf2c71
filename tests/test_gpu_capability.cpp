// engine/gpu_capability.h: which kernels a run takes on A100 (8.0), RTX 3090 (8.6), RTX 4090 (8.9)
// and H200 (9.0), for the default switches, switches that ask for a Hopper kernel, kernels=generic,
// and each precision.
#include <gtest/gtest.h>

#include "engine/gpu_capability.h"

namespace orochi::engine {
namespace {

RunSwitches given(const char* list) {
  RunSwitches s;
  EXPECT_TRUE(set_run_switches(s, list).is_ok()) << list;
  return s;
}

TEST(GpuCapability, FeaturesByComputeCapability) {
  EXPECT_FALSE(runs_sm90a({8, 0}));
  EXPECT_FALSE(runs_sm90a({8, 9}));
  EXPECT_TRUE(runs_sm90a({9, 0}));
  EXPECT_FALSE(runs_sm90a({10, 0}));  // sm_90a code does not run on Blackwell
  EXPECT_FALSE(has_fp8({8, 0}));
  EXPECT_FALSE(has_fp8({8, 6}));
  EXPECT_TRUE(has_fp8({8, 9}));
  EXPECT_TRUE(has_fp8({9, 0}));
  EXPECT_EQ(ComputeCapability({8, 6}).to_string(), "8.6");
}

TEST(GpuCapability, DefaultsTakeTheHopperKernelsOnlyOn90) {
  for (const ComputeCapability cc : {ComputeCapability{8, 0}, {8, 6}, {8, 9}, {9, 0}}) {
    for (const Precision p : {Precision::kBf16, Precision::kInt8}) {
      Expected<RunSwitches> s = switches_for_gpu(RunSwitches{}, p, cc, "GPU");
      ASSERT_TRUE(s.has_value()) << cc.to_string() << ": " << s.status().to_string();
      EXPECT_EQ(s->kernels.flash_attention, runs_sm90a(cc)) << cc.to_string();
      EXPECT_FALSE(s->kernels.gemm_sm90a) << cc.to_string();  // off by default everywhere
      EXPECT_EQ(run_switches_json(*s)["attention"], cc.major == 9 ? "flash" : "cudnn");
    }
  }
}

TEST(GpuCapability, HopperSwitchesAreRefusedElsewhereWithTheGpuNamed) {
  for (const char* list : {"attention=flash", "gemm=sm90a", "flash-kv-block=176", "flash-rescale=eager",
                           "attention-precision=fp8", "fp8-attention-promote=0"}) {
    for (const ComputeCapability cc : {ComputeCapability{8, 0}, {8, 6}, {8, 9}}) {
      Expected<RunSwitches> s = switches_for_gpu(given(list), Precision::kBf16, cc, "NVIDIA GeForce RTX 3090");
      ASSERT_FALSE(s.has_value()) << list << " on " << cc.to_string();
      EXPECT_EQ(s.status().code(), ErrorCode::kUnsupported);
      const std::string m = s.status().message();
      EXPECT_NE(m.find("RTX 3090 (compute capability " + cc.to_string() + ")"), std::string::npos) << m;
      EXPECT_NE(m.find(std::string("--set ") + list), std::string::npos) << m;
    }
    Expected<RunSwitches> h200 = switches_for_gpu(given(list), Precision::kBf16, {9, 0}, "H200");
    EXPECT_TRUE(h200.has_value()) << list << ": " << h200.status().to_string();
  }
  // Generic choices are fine anywhere.
  Expected<RunSwitches> generic = switches_for_gpu(given("attention=cudnn,gemm=cublas,qk-norm=items"),
                                                   Precision::kInt8, {8, 6}, "A6000");
  ASSERT_TRUE(generic.has_value()) << generic.status().to_string();
  EXPECT_FALSE(generic->kernels.flash_attention);
  EXPECT_TRUE(generic->kernels.qk_norm_items);
}

TEST(GpuCapability, KernelsGenericForcesTheGenericPathOnHopper) {
  Expected<RunSwitches> s = switches_for_gpu(given("kernels=generic"), Precision::kBf16, {9, 0}, "H200");
  ASSERT_TRUE(s.has_value()) << s.status().to_string();
  EXPECT_FALSE(s->kernels.flash_attention);
  EXPECT_FALSE(s->kernels.gemm_sm90a);
  EXPECT_EQ(run_switches_json(*s)["kernels"], "generic");
  Expected<RunSwitches> both = switches_for_gpu(given("kernels=generic,gemm=sm90a"), Precision::kBf16, {9, 0}, "H200");
  ASSERT_FALSE(both.has_value());
  EXPECT_NE(both.status().message().find("kernels=generic"), std::string::npos) << both.status().message();
}

TEST(GpuCapability, Fp8IsRefusedBelow89WithInt8Advised) {
  for (const ComputeCapability cc : {ComputeCapability{8, 0}, {8, 6}}) {
    Expected<RunSwitches> s = switches_for_gpu(RunSwitches{}, Precision::kFp8, cc, "A100");
    ASSERT_FALSE(s.has_value()) << cc.to_string();
    EXPECT_EQ(s.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(s.status().message().find("use --precision int8"), std::string::npos) << s.status().message();
  }
  for (const ComputeCapability cc : {ComputeCapability{8, 9}, {9, 0}}) {
    Expected<RunSwitches> s = switches_for_gpu(RunSwitches{}, Precision::kFp8, cc, "RTX 4090");
    ASSERT_TRUE(s.has_value()) << cc.to_string() << ": " << s.status().to_string();
    EXPECT_EQ(s->kernels.flash_attention, cc.major == 9);
  }
}

// attention-precision=auto takes FP8 attention with fp8 linears on Hopper only; elsewhere (an RTX 4090
// has FP8 GEMMs but not the sm_90a attention kernel) and on kernels=generic attention stays bf16.
TEST(GpuCapability, AttentionPrecisionAutoFollowsTheLinearsOnHopperOnly) {
  for (const Precision p : {Precision::kBf16, Precision::kFp8, Precision::kInt8}) {
    Expected<RunSwitches> h200 = switches_for_gpu(RunSwitches{}, p, {9, 0}, "H200");
    ASSERT_TRUE(h200.has_value()) << h200.status().to_string();
    EXPECT_EQ(h200->kernels.fp8_attention(p), p == Precision::kFp8) << precision_name(p);
    Expected<RunSwitches> ada = switches_for_gpu(RunSwitches{}, p, {8, 9}, "RTX 4090");
    ASSERT_TRUE(ada.has_value()) << ada.status().to_string();
    EXPECT_FALSE(ada->kernels.fp8_attention(p)) << precision_name(p);
    EXPECT_EQ(run_switches_json(*ada)["attention-precision"], "bf16");
    Expected<RunSwitches> generic = switches_for_gpu(given("kernels=generic"), p, {9, 0}, "H200");
    ASSERT_TRUE(generic.has_value()) << generic.status().to_string();
    EXPECT_FALSE(generic->kernels.fp8_attention(p)) << precision_name(p);
  }
  // bf16 keeps attention exact under fp8 linears; fp8 asks for it under bf16 linears too.
  EXPECT_FALSE(given("attention-precision=bf16").kernels.fp8_attention(Precision::kFp8));
  EXPECT_TRUE(given("attention-precision=fp8").kernels.fp8_attention(Precision::kBf16));
  EXPECT_EQ(run_switches_json(RunSwitches{})["attention-precision"], "auto");
  // The measured defaults (session 19): fast FP8 GEMM accumulation, mma row sums, P V promoted every 4 tiles.
  EXPECT_TRUE(RunSwitches{}.kernels.fp8_gemm_fast_accum);
  EXPECT_FALSE(given("fp8-gemm-accum=promoted").kernels.fp8_gemm_fast_accum);
  EXPECT_EQ(run_switches_json(given("fp8-gemm-accum=promoted"))["fp8-gemm-accum"], "promoted");
  EXPECT_EQ(run_switches_json(RunSwitches{})["fp8-attention-sums"], "mma");
  EXPECT_EQ(run_switches_json(RunSwitches{})["fp8-attention-promote"], "4");
  EXPECT_EQ(given("fp8-attention-promote=2").kernels.fp8_attention_promote_every, 2);
  RunSwitches three;
  EXPECT_FALSE(set_run_switches(three, "fp8-attention-promote=3").is_ok());
  // attention=cudnn keeps auto on cuDNN's bf16 attention, and contradicts an explicit fp8.
  EXPECT_FALSE(given("attention=cudnn").kernels.fp8_attention(Precision::kFp8));
  const Expected<RunSwitches> both = switches_for_gpu(given("attention=cudnn,attention-precision=fp8"), Precision::kFp8,
                                                      {9, 0}, "H200");
  ASSERT_FALSE(both.has_value());
  EXPECT_NE(both.status().message().find("drop one of the two"), std::string::npos) << both.status().message();
  // FP8 attention where it can run: a GPU, one of them.
  EXPECT_TRUE(check_attention_precision(RunSwitches{}, Precision::kFp8, true, 1).is_ok());
  EXPECT_FALSE(check_attention_precision(RunSwitches{}, Precision::kFp8, true, 2).is_ok());
  EXPECT_FALSE(check_attention_precision(given("attention-precision=fp8"), Precision::kBf16, false, 1).is_ok());
  EXPECT_TRUE(check_attention_precision(RunSwitches{}, Precision::kBf16, true, 4).is_ok());
  // The mma row sums exist for the ping-pong schedule only: refused with the other schedule.
  const Expected<RunSwitches> plain =
      switches_for_gpu(given("fp8-attention-sums=mma,flash-pingpong=0"), Precision::kFp8, {9, 0}, "H200");
  ASSERT_FALSE(plain.has_value());
  EXPECT_NE(plain.status().message().find("ping-pong"), std::string::npos) << plain.status().message();
  const Expected<RunSwitches> grouped =
      switches_for_gpu(given("fp8-attention-promote=4,flash-pingpong=0"), Precision::kFp8, {9, 0}, "H200");
  ASSERT_FALSE(grouped.has_value());
  EXPECT_NE(grouped.status().message().find("ping-pong"), std::string::npos) << grouped.status().message();
  // flash-pingpong=0 alone: the defaults fall back to what that schedule has (f32 sums, per tile).
  const Expected<RunSwitches> fallback = switches_for_gpu(given("flash-pingpong=0"), Precision::kFp8, {9, 0}, "H200");
  ASSERT_TRUE(fallback.has_value()) << fallback.status().to_string();
  EXPECT_FALSE(fallback->kernels.fp8_attention_mma_sums);
  EXPECT_EQ(fallback->kernels.fp8_attention_promote_every, 1);
  const Expected<RunSwitches> never = switches_for_gpu(given("flash-pingpong=0,fp8-attention-promote=0"), Precision::kFp8,
                                                       {9, 0}, "H200");
  ASSERT_TRUE(never.has_value()) << never.status().to_string();
  EXPECT_EQ(never->kernels.fp8_attention_promote_every, 0);
  RunSwitches bad;
  const Status s = set_run_switches(bad, "attention-precision=int8");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("auto, bf16 or fp8"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace orochi::engine

// --precision through the engine on a GPU (issue 25): the built-in demo model (its widths are
// multiples of 16, as the quantized GEMMs need) opened with fp8 and int8 runs a short t2va request
// end to end (denoiser steps, VAE decodes), records the precision in its report, and gives frames
// and sound near the bf16 engine's on the same seed: PSNR against the bf16 run printed and held to
// 20 dB (the quantization moves the latents by ~1e-2 relative: decoded pixels by a few levels, far
// above 20 dB; unrelated frames of the demo's noise sit near 10 dB), and not identical to it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "engine/engine.h"

namespace orochi::engine {
namespace {

Expected<RunResult> run_demo(Precision precision) {
  ModelSource source;  // the built-in demo model
  EngineOptions options;
  options.device = "cuda:0";
  options.precision = precision;
  OROCHI_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::open(source, options));
  GenerateRequest request;
  request.width = 320;
  request.height = 192;
  request.frames = 22;
  request.steps = 2;
  request.seed = 11;
  OROCHI_ASSIGN_OR_RETURN(RunPlan plan, engine->plan(request));
  return engine->run(plan);
}

// PSNR of `got` against `want` (f32, same shape), for signals of peak-to-peak `range`.
double psnr(const Tensor& got, const Tensor& want, double range) {
  double se = 0;
  const float *a = got.data<float>(), *b = want.data<float>();
  for (int64_t i = 0; i < got.numel(); ++i) se += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  const double mse = se / static_cast<double>(got.numel());
  return mse == 0 ? INFINITY : 10 * std::log10(range * range / mse);
}

TEST(EngineGpuPrecision, QuantizedDemoRunsNearBf16) {
  if (gpu_backend().device_count() == 0) GTEST_SKIP() << "no GPU";
  Expected<RunResult> bf16 = run_demo(Precision::kBf16);
  ASSERT_TRUE(bf16.has_value()) << bf16.status().to_string();
  EXPECT_EQ(bf16->report.precision, "bf16");
  for (Precision p : {Precision::kFp8, Precision::kInt8}) {
    Expected<RunResult> q = run_demo(p);
    ASSERT_TRUE(q.has_value()) << precision_name(p) << ": " << q.status().to_string();
    EXPECT_EQ(q->report.precision, precision_name(p));
    ASSERT_EQ(q->result.frames.shape(), bf16->result.frames.shape());
    ASSERT_EQ(q->result.waveform.shape(), bf16->result.waveform.shape());
    const double frames_db = psnr(q->result.frames, bf16->result.frames, 1.0);
    const double sound_db = psnr(q->result.waveform, bf16->result.waveform, 2.0);
    std::printf("[engine-gpu] demo %s vs bf16, 2 steps: frames PSNR %.2f dB, waveform PSNR %.2f dB\n",
                precision_name(p), frames_db, sound_db);
    EXPECT_GT(frames_db, 20.0) << precision_name(p);
    EXPECT_GT(sound_db, 20.0) << precision_name(p);
    EXPECT_TRUE(std::isfinite(frames_db)) << precision_name(p) << ": the frames are bf16's, nothing was quantized";
  }
}

}  // namespace
}  // namespace orochi::engine

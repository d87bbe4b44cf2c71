// The pruned curve-form AdaLN (models/h3/adaln_curve.h) on the GPU: the runner builds its tables from
// the table's lerp (made on the host) through the same AdaLN GEMMs; its forward against the CPU
// forward of the same curve-form weights within the bf16 band, at timesteps between grid points.
#include <gtest/gtest.h>

#include <cstdio>

#include "backends/cpu/ops.h"
#include "backends/cuda/device.h"
#include "models/h3/cuda/gpu_runner.h"
#include "support/compare.h"
#include "support/golden.h"

namespace orochi {
namespace {

TEST(H3GpuAdalnCurve, ForwardMatchesTheCpuWithinTheBf16Band) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(testing::h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  Expected<h3::H3Weights> loaded = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  // The tiny model's curve form: 9 grid rows SiLU(temb(t_g)), the time MLP dropped.
  constexpr int64_t G = 9;
  std::vector<float> grid;
  for (int64_t g = 0; g < G; ++g) grid.push_back(static_cast<float>(g) / (G - 1));
  h3::H3Weights w = *loaded;
  w.adaln_t_table = cpu::silu(h3::compute_modulation_tables(*loaded, Tensor::from_floats(grid, {G})).temb);
  w.config.adaln_curve_points = G;
  w.time_linear_1 = {};
  w.time_linear_2 = {};

  const h3::H3Inputs in = testing::golden_inputs(*golden);
  const Tensor golden_t = testing::golden_tensor(*golden, "in.timestep").to(DType::kF32).contiguous();
  Tensor timesteps = golden_t.clone();  // moved off the grid
  for (int64_t i = 0; i < timesteps.numel(); ++i) timesteps.data<float>()[i] = 0.9f * golden_t.data<float>()[i] + 0.03f;
  Expected<h3::H3Outputs> cpu_out = h3::forward(w, in, h3::compute_modulation_tables(w, timesteps));
  ASSERT_TRUE(cpu_out.has_value()) << cpu_out.status().to_string();

  const h3::gpu::RequestSize size{in.rows(), in.text.dim(0), in.video.dim(0), in.audio.dim(0), timesteps.numel()};
  auto runner = h3::gpu::H3GpuRunner::create(w.config, 0, size);
  ASSERT_TRUE(runner.has_value()) << runner.status().to_string();
  ASSERT_TRUE((*runner)->upload_weights(w).is_ok());
  ASSERT_TRUE((*runner)->set_request(timesteps, in).is_ok());
  ASSERT_TRUE((*runner)->forward().is_ok());
  Expected<h3::H3Outputs> out = (*runner)->outputs();
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  const auto cv = testing::compare(out->video, cpu_out->video);
  const auto ca = testing::compare(out->audio, cpu_out->audio);
  std::printf("[adaln-curve] GPU vs CPU curve form: video %s\n  audio %s\n", cv.summary().c_str(), ca.summary().c_str());
  EXPECT_TRUE(cv.same_nonfinite && cv.rel_l2 <= 2e-2) << cv.summary();
  EXPECT_TRUE(ca.same_nonfinite && ca.rel_l2 <= 2e-2) << ca.summary();
}

}  // namespace
}  // namespace orochi

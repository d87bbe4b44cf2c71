#include "pipeline/scheduler_h3.h"

#include <cmath>
#include <string>

namespace orochi::pipeline {
namespace {

// Bit-exactness note: every line below is one PyTorch fp32 op, rounded once, in diffusers' order.
// Do not merge lines or build this file with FMA contraction (-march=native needs
// -ffp-contract=off): a fused a·b + c rounds once where PyTorch rounds twice.

// torch.linspace(1, 0, n, dtype=float32) on CPU: start + step·i for the first half, end −
// step·(n − 1 − i) for the second, each rounded once. The single rounding is an FMA: torch's
// AVX2/AVX512 kernels are compiled with contraction (its scalar-only DEFAULT build would round
// twice). Checked equal to torch 2.15 (AVX2) for every n < 5000; MODELS_H3.md section 10's
// two-rounding formula differs from torch at n = 10, 14, 16, 21, ...
std::vector<float> torch_linspace_1_to_0(int64_t n) {
  const float start = 1.0f, end = 0.0f;
  const float step = (end - start) / static_cast<float>(n - 1);
  std::vector<float> base(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (i < n / 2)
      base[i] = std::fma(step, static_cast<float>(i), start);
    else
      base[i] = std::fma(-step, static_cast<float>(n - 1 - i), end);
  }
  return base;
}

void require_same_f32(const Tensor& a, const Tensor& b, const char* what) {
  OROCHI_CHECK(a.defined() && b.defined() && a.dtype() == DType::kF32 && b.dtype() == DType::kF32 &&
                   a.is_contiguous() && b.is_contiguous() && a.shape() == b.shape(),
               what, ": expected two contiguous f32 tensors of one shape, got ",
               a.defined() ? a.describe() : "undefined", " and ", b.defined() ? b.describe() : "undefined");
}

}  // namespace

Expected<H3Schedule> make_h3_schedule(int64_t num_inference_steps, double shift) {
  constexpr int64_t kMaxSteps = int64_t{1} << 20;
  if (num_inference_steps < 2 || num_inference_steps > kMaxSteps)
    return invalid_argument("num_inference_steps must be in [2, " + std::to_string(kMaxSteps) + "], got " +
                            std::to_string(num_inference_steps) +
                            ": it counts sigma grid points including the final 0, so N steps run N - 1 "
                            "denoiser evaluations (use 21 for 20 evaluations)");
  if (!std::isfinite(shift) || shift <= 0)
    return invalid_argument("the sigma shift must be a finite number > 0, got " + std::to_string(shift) +
                            " (the release uses 12 for video and 3 for audio)");

  // Python-float scalars meet an fp32 tensor: PyTorch rounds each scalar to fp32 on its own.
  const float s = static_cast<float>(shift);
  const float s_minus_1 = static_cast<float>(shift - 1.0);
  H3Schedule schedule;
  for (float b : torch_linspace_1_to_0(num_inference_steps)) {
    const float numerator = s * b;
    const float scaled = s_minus_1 * b;
    const float denominator = 1.0f + scaled;
    const float sigma = numerator / denominator;
    // unique_consecutive: the shift can round neighbouring grid points to one fp32 value.
    if (schedule.sigmas.empty() || schedule.sigmas.back() != sigma) schedule.sigmas.push_back(sigma);
  }
  for (size_t i = 0; i + 1 < schedule.sigmas.size(); ++i) schedule.timesteps.push_back(1.0f - schedule.sigmas[i]);
  return schedule;
}

Expected<H3Schedule> make_h3_schedule_from_sigmas(const std::vector<double>& sigmas) {
  H3Schedule schedule;
  for (double s : sigmas) schedule.sigmas.push_back(static_cast<float>(s));  // round to nearest, as torch
  const std::vector<float>& f = schedule.sigmas;
  bool decreasing = f.size() >= 2;
  for (size_t i = 1; i < f.size() && decreasing; ++i) decreasing = f[i] < f[i - 1];
  if (!decreasing || f.back() != 0.0f)
    return invalid_argument("a sigma list must hold at least two strictly decreasing values (as fp32) ending at 0");
  for (size_t i = 0; i + 1 < f.size(); ++i) schedule.timesteps.push_back(1.0f - f[i]);
  return schedule;
}

void h3_euler_step_inplace(const H3Schedule& schedule, int64_t index, Tensor& sample, const Tensor& velocity) {
  require_same_f32(sample, velocity, "h3_euler_step");
  OROCHI_CHECK(index >= 0 && index < schedule.num_evaluations(), "h3_euler_step: step ", index,
               " outside a schedule of ", schedule.num_evaluations(), " evaluations");
  // x0 takes sigma from the timestep (1 − t), the blend ratio from the sigma grid; for sigma < 0.5
  // the fp32 round trip 1 − (1 − sigma) differs from sigma, and the reference keeps them apart.
  const float sigma_from_t = 1.0f - schedule.timesteps[index];
  const float ratio = schedule.sigmas[index + 1] / schedule.sigmas[index];
  const float one_minus_ratio = 1.0f - ratio;
  float* x = sample.data<float>();
  const float* v = velocity.data<float>();
  for (int64_t i = 0; i < sample.numel(); ++i) {
    const float step_to_x0 = sigma_from_t * v[i];
    const float x0 = x[i] + step_to_x0;
    const float kept = ratio * x[i];
    const float moved = one_minus_ratio * x0;
    x[i] = kept + moved;
  }
}

Tensor h3_euler_step(const H3Schedule& schedule, int64_t index, const Tensor& sample, const Tensor& velocity) {
  Tensor out = sample.clone();
  h3_euler_step_inplace(schedule, index, out, velocity);
  return out;
}

Tensor h3_scale_noise(const Tensor& sample, float t, const Tensor& noise) {
  require_same_f32(sample, noise, "h3_scale_noise");
  const float one_minus_t = 1.0f - t;
  Tensor out = Tensor::empty(sample.shape(), DType::kF32);
  const float* x = sample.data<float>();
  const float* n = noise.data<float>();
  float* y = out.data<float>();
  for (int64_t i = 0; i < sample.numel(); ++i) {
    const float clean = t * x[i];
    const float noisy = one_minus_t * n[i];
    y[i] = clean + noisy;
  }
  return out;
}

}  // namespace orochi::pipeline

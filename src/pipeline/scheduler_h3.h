// MiniMax-H3's rectified-flow Euler scheduler (diffusers `MiniMaxH3Scheduler`), reproduced bit for
// bit in fp32. sigma is the noise level (1 = pure noise), t = 1 - sigma the timestep the denoiser
// is conditioned on (t = 1 clean). The video and the audio latents each get their own schedule
// (shifts 12 and 3 in the release) with the same step count, stepped in lockstep.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::pipeline {

struct H3Schedule {
  std::vector<float> sigmas;     // strictly decreasing, sigmas.front() = 1, sigmas.back() = 0
  std::vector<float> timesteps;  // 1 - sigmas[i] for every sigma but the last: one per evaluation
  int64_t num_evaluations() const { return static_cast<int64_t>(timesteps.size()); }
};

// The released shifts (model_index.json `_minimax_h3.sigma_shift_scales`).
inline constexpr double kH3VideoShift = 12.0;
inline constexpr double kH3AudioShift = 3.0;

// diffusers' `set_timesteps(num_inference_steps)`: base = linspace(1, 0, N) in fp32, sigma =
// s·b / (1 + (s−1)·b) in fp32, consecutive duplicates removed, t = 1 − sigma[:-1].
// N counts grid points including the terminal 0, so there are N − 1 model evaluations (fewer only
// when a huge shift collapses neighbouring sigmas). The shift is taken as a double because diffusers
// holds it as a Python float: s and s − 1 are each rounded to fp32 from that value.
// Errors: invalid_argument for N < 2 (or absurdly large) and for a shift that is not finite and > 0.
Expected<H3Schedule> make_h3_schedule(int64_t num_inference_steps, double shift);

// diffusers' `set_timesteps(sigmas=...)`: a full grid used as given (no shift, no deduplication),
// each value rounded to fp32 as torch.as_tensor does, t = 1 − sigma[:-1]. invalid_argument unless
// it holds at least two fp32 values, strictly decreasing, the last 0 (diffusers' own rule).
Expected<H3Schedule> make_h3_schedule_from_sigmas(const std::vector<double>& sigmas);

// One Euler step (eta = 0) from evaluation `index`, as diffusers' `step()` computes it in fp32:
//   x0 = x + (1 − t_i)·v;  r = sigma_{i+1} / sigma_i;  x' = r·x + (1 − r)·x0.
// sample and velocity: same shape, contiguous f32 (for example the target rows of the packed
// sequence, [rows, C]). The in-place form overwrites sample.
void h3_euler_step_inplace(const H3Schedule& schedule, int64_t index, Tensor& sample, const Tensor& velocity);
Tensor h3_euler_step(const H3Schedule& schedule, int64_t index, const Tensor& sample, const Tensor& velocity);

// Noising of conditioning latents (`scale_noise`): t·x + (1 − t)·noise, t in [0, 1] (1 = clean).
Tensor h3_scale_noise(const Tensor& sample, float t, const Tensor& noise);

}  // namespace orochi::pipeline

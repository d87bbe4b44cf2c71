// The MiniMax-H3 denoising loop (diffusers' MiniMaxH3DenoiseLoopWrapper: one forward per step, no
// CFG): the video rows step down the video schedule and the audio rows down the audio schedule, in
// lockstep; conditioning rows (the leading condition_video_rows / condition_audio_rows of the
// layout) are never written. The AdaLN tables are built once, before the first
// step, for every timestep any step uses.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/denoiser.h"
#include "pipeline/packed_layout.h"
#include "pipeline/scheduler_h3.h"

namespace orochi::pipeline {

// Every step's row timesteps against one request-wide table.
struct TimestepPlan {
  Tensor timesteps;                   // f32 [n_t]: the distinct t of all steps, sorted ascending
  std::vector<Tensor> step_indices;   // per step, i64 [S]: row -> index into `timesteps`
  int64_t steps() const { return static_cast<int64_t>(step_indices.size()); }
};
// Steps = the shorter schedule's evaluations (they are equal unless a huge shift merged sigmas).
TimestepPlan plan_timesteps(const PackedLayout& layout, const H3Schedule& video, const H3Schedule& audio);

struct DenoiseRequest {
  const PackedLayout* layout = nullptr;
  const H3Schedule* video_schedule = nullptr;
  const H3Schedule* audio_schedule = nullptr;
  Tensor text;        // f32 [L, text_dim], the conditioner's features
  Tensor video_rows;  // f32 [Nv, video_patch_dim]: conditioning rows, then the target's noise
  Tensor audio_rows;  // f32 [Na, audio_in_channels]: reference audio rows (ref2va), then the target's noise
};

struct StepProgress {
  int64_t step = 0;   // 1-based, the step just finished
  int64_t steps = 0;
  double seconds = 0; // of this step
};
using StepCallback = std::function<void(const StepProgress&)>;

struct DenoiseResult {
  Tensor video_rows, audio_rows;  // the denoised rows, same shapes as the request's
  double prepare_seconds = 0;     // AdaLN tables
  std::vector<double> step_seconds;
  int64_t table_timesteps = 0;
};

// The denoiser's streams are H3's (video patches, audio frames: models/h3/denoiser.h).
// Checks the request's shapes against the denoiser's widths and the layout (shape_mismatch naming
// the tensor), then runs every step. A step whose velocity is not finite ends the loop with
// kNonFinite naming the step; `cancel` set ends it with kCancelled before the next step.
Expected<DenoiseResult> denoise(models::Denoiser& denoiser, const DenoiseRequest& request,
                                const StepCallback& on_step = nullptr, const std::atomic<bool>* cancel = nullptr);

}  // namespace orochi::pipeline

// How a request's two sigma schedules are chosen (MODELS_H3.md §6), decided here and nowhere else:
// the release's shifted grids (steps and the two shifts), a named few-step preset that sets steps
// and shifts as the turbo LoRA cards state, or sigma lists given verbatim (HyperFlow's fixed 8-step
// video schedule, a ComfyUI schedule). Any stream without a list of its own takes the shifted grid
// with the same step count: the video and audio schedules step in lockstep.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/scheduler_h3.h"

namespace orochi::pipeline {

// A named schedule: `steps` evaluations on the grid q_i = (steps - i) / steps (diffusers'
// num_inference_steps = steps + 1), shifted per stream.
struct SamplingPreset {
  std::string name;
  int64_t steps = 0;
  double video_shift = 0, audio_shift = 0;
  std::string source;  // what it reproduces, for help and errors
};
// turbo8 (8 evaluations, shifts 6/3: lightx2v's 8-step 768p turbo LoRA) and turbo4 (4 evaluations,
// shifts 6/3: the 4-step v1.1 768p LoRA). The 544p turbo LoRAs were trained at the release's shifts
// 12/3, which --steps alone already gives.
const std::vector<SamplingPreset>& sampling_presets();

// A request's sampling. As asked, every field may be unset; as resolved (resolve_sampling), `steps`
// and both shifts are set and a list, where given, holds steps + 1 values.
struct Sampling {
  std::string preset;                              // a sampling_presets() name; empty: none
  int64_t steps = 0;                               // denoiser evaluations; 0: not given
  double video_shift = 0, audio_shift = 0;         // 0: not given (the preset's, else 12 and 3)
  // Given sigma grids, used as they are (no shift): 1 first, strictly decreasing, 0 last, so N
  // evaluations take N + 1 values. Empty: the shifted grid.
  std::vector<double> video_sigmas, audio_sigmas;
};

// The decision. `default_steps` when nothing sets the count (the engine's: demo 8, checkpoint 20).
// invalid_argument, naming the flags, for: an unknown preset (the error lists them); a preset with
// --steps, a shift or a list (it sets them); a list with its stream's shift (the list is not
// shifted); a list that is not strictly decreasing from 1 to 0 within [0, 1] (fp32 values, as the
// scheduler holds them); --steps that disagrees with a list's count; two lists of different counts;
// steps outside [1, 1000]; a shift that is not finite and > 0.
Expected<Sampling> resolve_sampling(const Sampling& asked, int64_t default_steps);

// One stream's schedule of a resolved sampling: its given list (diffusers' set_timesteps(sigmas=...))
// or the shifted grid of steps + 1 points. `flag` names the list in errors ("--sigmas").
Expected<H3Schedule> sampling_schedule(int64_t steps, double shift, const std::vector<double>& sigmas,
                                       const char* flag);

// One line for `orochi plan` and notes: "turbo8: 8 evaluations, video grid shift 6, audio grid shift 3".
std::string describe_sampling(const Sampling& resolved);

}  // namespace orochi::pipeline

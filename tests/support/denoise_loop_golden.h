// The cases of tests/data/h3_denoise_loop (scripts/golden/make_h3_denoise_loop.py) as a ready
// pipeline::DenoiseRequest: the layout the script packed, its two schedules, and the rows it
// started from (conditioning rows first). For the CPU and the GPU loop tests alike.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/denoise_loop.h"
#include "weights/checkpoint.h"

namespace orochi::testing {

inline constexpr int64_t kDenoiseLoopSteps = 3;  // num_inference_steps 4 in the script

struct DenoiseLoopCase {
  pipeline::LayoutRequest layout_request;
  pipeline::PackedLayout layout;
  pipeline::H3Schedule video_schedule, audio_schedule;
  pipeline::DenoiseRequest request;  // points at the members above: the case is not copyable
  DenoiseLoopCase() = default;
  DenoiseLoopCase(const DenoiseLoopCase&) = delete;
  DenoiseLoopCase& operator=(const DenoiseLoopCase&) = delete;
};

// The golden file itself (fails the calling test when missing).
weights::Checkpoint open_denoise_loop_golden();

// Case "t2va" or "fl2va" (one "first" keyframe). Null after a failed ASSERT inside.
std::unique_ptr<DenoiseLoopCase> load_denoise_loop_case(const weights::Checkpoint& golden, const std::string& name);
// Any case of a golden made by that script's loop (make_h3_custom_sigmas.py's too), its keyframes
// given; the schedules are the 3-step grids until the caller replaces them.
std::unique_ptr<DenoiseLoopCase> load_denoise_loop_case(const weights::Checkpoint& golden, const std::string& name,
                                                        const std::vector<pipeline::KeyframeAnchor>& keyframes);

}  // namespace orochi::testing

// A prompt's presentation to the Qwen3-VL conditioner when the request carries pictures (fl2va's
// keyframes, ref2va's images and videos), made by Engine::plan once the media are read: the token
// ids and M-RoPE positions, the pixel values the vision tower reads (the keyframes on the canvas,
// the references as the encoders take them, a video's frames sampled at 2 fps), and with them the
// exact text rows L and each row's DiT tag, which the packed layout needs. Engine::run hands the
// result to the conditioner on the CPU or the GPU (Engine::text_features).
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "engine/model_components.h"
#include "engine/run_plan.h"

namespace orochi::engine {

// For plan.workflow "fl2va" (plan.keyframes) or "ref2va" (plan.references) with a prompt: fills
// plan.conditioner, plan.prompt_ids and plan.request.text_rows. The processors are `model_dir`'s
// processor/ folder's, else H3's. Errors: the tokenizer's, the presentation's (an empty prompt, a
// video too short for two sampled frames, longer than the text encoder's `max_tokens`).
Status plan_presentation(RunPlan& plan, const ModelComponents& parts, const std::optional<std::string>& model_dir,
                         int64_t max_tokens);

}  // namespace orochi::engine

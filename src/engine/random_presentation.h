// --random-weights fl2va / ref2va: the random text rows take the length the presentation would have
// (REF2VA.md §4.3: labels, timestamps, each picture's vision tokens, then a prompt of
// request.text_rows tokens), counted as `orochi plan` counts it from the media headers (vision tokens
// exact, labels estimated: there is no tokenizer), so the denoiser runs at the real long S.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "engine/run_plan.h"

namespace orochi::engine {

// plan.request filled in (canvas, frames, text_rows as the prompt's tokens, references); L.
Expected<int64_t> random_presentation_rows(const RunPlan& plan);

}  // namespace orochi::engine

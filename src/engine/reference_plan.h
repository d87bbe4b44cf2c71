// A request's references sized from their headers alone (issue 23: `orochi plan` reads no pixel):
// what each becomes for the encoders (its encode size, frames and latents: REF2VA.md §1-§3) and for
// the Qwen3-VL conditioner (its vision grid and block timestamps: §4.1-§4.2), by the size functions
// the run applies to the decoded media (pipeline/reference/*, qwen3vl/processor.h). Frame counts and
// durations come from the containers: a reference at least as long as the target is cut to the
// target's length, exactly; a shorter one is as exact as its header (`length_from_header`).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "engine/generate_request.h"
#include "engine/reference_checks.h"
#include "pipeline/h3_presentation.h"
#include "pipeline/ref2va.h"
#include "pipeline/ref2va_layout.h"

namespace orochi::engine {

struct PlannedReference {
  CheckedReference checked;
  pipeline::ReferenceGeometry geometry;  // latents, as the packed layout takes them
  int64_t width = 0, height = 0;         // pixels the VAE encoder reads (an image's encode size, a video's canvas)
  int64_t frames = 0;                    // video: frames at 24 fps on its canvas, at most the target's
  int64_t vae_frames = 0;                // video: the ones the VAE encodes (17n + 5)
  int64_t audio_samples = 0;             // with sound: per channel at 32 kHz
  pipeline::PresentationReference vision;  // what the conditioner reads (audio: its label alone)
  bool length_from_header = false;       // frames or samples shorter than the target's, from the header
};

// ref2va's references of `request` (canvas, frames and --ref-size filled in) as `checked` lists them,
// under `rules` (reference_rules). invalid_argument for a size the rules refuse (4:1, empty).
Expected<std::vector<PlannedReference>> plan_references_from_headers(const ReferenceCheck& checked,
                                                                     const GenerateRequest& request,
                                                                     const pipeline::ReferenceRules& rules);

std::vector<pipeline::ReferenceGeometry> reference_geometry(const std::vector<PlannedReference>& references);
std::vector<pipeline::PresentationReference> presentation_references(const std::vector<PlannedReference>& references);

// The conditioner's grid of an fl2va keyframe on a W x H canvas (one per keyframe).
Expected<pipeline::VisionGrid> keyframe_vision_grid(int64_t width, int64_t height);

}  // namespace orochi::engine

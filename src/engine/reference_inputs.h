// A ref2va request's references read from their files and normalized for the run (REF2VA.md §1-§3:
// pipeline::prepare_ref2va_reference), once, by Engine::plan: the packed layout needs every
// reference's exact latent geometry, which only the decoded media give. The files were checked from
// their headers first (reference_checks.h); what can still go wrong here (a file that decodes to
// nothing, a soundtrack that is not mono or stereo) names the flag and the file.
#pragma once

#include <vector>

#include "core/status.h"
#include "engine/generate_request.h"
#include "pipeline/ref2va.h"

namespace orochi::engine {

// Where references land before the encoders: the release's rules (a video's own canvas at a 768 short
// edge up to 1344x768, images at a 2048 short edge), or the demo's, the release's scaled to its
// 320x192 canvas (192 short edge up to 320x192, images at 512); --ref-size match as the policy.
pipeline::ReferenceRules reference_rules(RefSize size, bool demo);

// Every reference of `request` (a filled-in ref2va request: canvas and frames set) read and normalized,
// in request order. A video's soundtrack joins when it has one and --ref-video-audio is on.
Expected<std::vector<pipeline::Ref2vaReference>> read_references(const GenerateRequest& request,
                                                                  const pipeline::ReferenceRules& rules);

}  // namespace orochi::engine

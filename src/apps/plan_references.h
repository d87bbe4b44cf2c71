// `orochi plan` with generate's reference flags (issue 23): the references checked from their
// headers as generate checks them (no pixel is read) and sized as the run will size them
// (engine/reference_plan.h); fl2va's keyframe rows or ref2va's reference blocks go into the planner's
// request, with the conditioner's rows (the presentation: labels, vision tokens and the prompt's
// --text-rows tokens) as L and the vision tower's patches. Printed and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/args.h"
#include "core/status.h"
#include "engine/reference_plan.h"
#include "planner/plan_memory.h"

namespace orochi::apps {

struct PlannedReferences {
  std::string workflow = "t2va";  // t2va: no reference flags
  engine::RefSize ref_size = engine::RefSize::k2048;
  std::vector<engine::CheckedReference> checked;     // request order
  std::vector<engine::PlannedReference> references;  // ref2va
  std::vector<pipeline::VisionGrid> keyframe_grids;  // fl2va, packed order
  pipeline::PresentationSize presentation;           // with references: L and the vision tower's input
  bool labels_counted = false;  // label tokens counted by --model's tokenizer; else estimated
  int64_t patch_h = 2, patch_w = 2;  // the denoiser's patch (rows per latent grid)
  int64_t merge_size = 2;            // the vision tower's (tokens per grid)
};

// Reads the reference flags and fills `input.request` (keyframes or references, text_rows = L,
// vision_patches; an fl2va canvas from the first keyframe without --res). `ref_size` overrides
// --ref-size (the other policy's cost). The checks' errors name the flag and the file.
Expected<PlannedReferences> plan_references(const Args& args, planner::PlanInput& input,
                                            std::optional<engine::RefSize> ref_size = std::nullopt);

// The lines `orochi plan` prints before the memory plan: each reference's sizes, rows and vision
// tokens, then L.
std::string references_text(const PlannedReferences& refs);
nlohmann::json references_json(const PlannedReferences& refs);

// ref2va: the request planned again under the other --ref-size, as one line ("--ref-size match
// instead: S = ..., L = ...; GPU 0 needs ... in the ... phase") and JSON; empty for other workflows.
struct RefSizeAlternative {
  std::string line;
  nlohmann::json json;
};
Expected<RefSizeAlternative> other_ref_size(const Args& args, const planner::PlanInput& input,
                                            const PlannedReferences& refs);

}  // namespace orochi::apps

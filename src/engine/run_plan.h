// A request as the engine will run it, decided once by Engine::plan before any weight moves: the
// filled-in request, its shape (layout, schedules: pipeline::plan_t2va), the memory plan per GPU
// and phase, the parallel layout, the streamed weights, and the conditioning's token ids or
// features. Engine::run executes exactly this; `orochi plan` prints the memory part; the stage
// report echoes summary_json().
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "engine/generate_request.h"
#include "engine/gpu_backend.h"
#include "io/media_in.h"
#include "pipeline/ref2va.h"
#include "pipeline/vision_prompt.h"
#include "planner/parallel_choice.h"
#include "planner/plan_memory.h"
#include "planner/request_shape.h"

namespace orochi::engine {

struct RunPlan {
  GenerateRequest request;  // every default filled in
  planner::RequestShape shape;
  std::optional<planner::MemoryPlan> memory;  // GPU runs with a full set of configs
  bool on_gpu = false;
  planner::ParallelDegrees degrees;  // how the GPUs share the denoiser (1 x 1 on the CPU)
  GpuPlacement placement;            // the denoiser's GPUs, streamed blocks, switches (GPU runs)
  TextEncoderPlacement text_placement;
  // After the denoising loop the denoiser keeps its weights for the next request when the plan
  // says the decode phase fits beside them; otherwise they go and the next request uploads again.
  bool keep_denoiser_weights = true;
  Tensor prompt_ids;     // i64 [L] when the request has a prompt (tokenized here)
  // fl2va / ref2va with a prompt: its presentation with the pictures' pixel values (prompt_ids are
  // its token ids; engine/presentation_plan.h).
  std::optional<pipeline::ConditionerInputs> conditioner;
  Tensor text_features;  // f32 [L, text_dim] when it has a features file (read here)
  std::string workflow = "t2va";  // workflow_of(request)
  // fl2va: the keyframes read and put onto the canvas (pipeline::prepare_fl2va_keyframes), in the
  // layout's packed order (shape.t2va.shape.keyframes).
  std::vector<io::RgbImage> keyframes;
  // ref2va: the references read and normalized (pipeline::prepare_ref2va_reference), in request
  // order; shape.t2va.shape.references is their latent geometry.
  std::vector<pipeline::Ref2vaReference> references;
  double media_decode_s = 0;  // reading the keyframes or references (the report's pre: media decode)
  double presentation_s = 0;  // the conditioner's inputs: tokens, the pictures' vision patches (pre: vision inputs)
  // The reference encode and the conditioner at once (the memory plan's pre_overlap: two GPUs or
  // more): the conditioner on the last GPU (text_placement.device) on a thread of its own, the
  // encoders on the others. The same bits as one after the other: they share no inputs or outputs.
  bool pre_overlap = false;
  std::vector<std::string> notes;  // what the plan chose and why, one line each

  // The plan's summary for reports: layout, rows, what streams, the notes.
  nlohmann::json summary_json() const;
};

}  // namespace orochi::engine

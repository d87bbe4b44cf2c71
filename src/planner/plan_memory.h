// plan_memory: the whole plan of one request (every phase, every GPU, every weight tier) from
// configs alone, before any weight is loaded; check_fits: the refusal a run gives before loading.
//
//   PlanInput in{.models = *load_model_configs("h3"), .request = {...}, .gpus = {2, 24 * kGiB}};
//   Expected<MemoryPlan> plan = plan_memory(in);
//   if (Status s = check_fits(*plan); !s.is_ok()) return s;   // names the shortfall and the fixes
#pragma once

#include <string>
#include <vector>

#include "planner/plan_request.h"
#include "planner/plan_types.h"
#include "planner/request_shape.h"

namespace orochi::planner {

// "N GPUs of this size behave like one GPU of `equivalent` bytes" for this request, all weights
// resident: equivalent = N·cap − (N·per_gpu − per_gpu(1)), so the request fits the N GPUs exactly
// when it would fit one GPU of that size.
struct CapacityRow {
  int gpus = 1;
  std::string layout;        // "none", "tp2", "sp2"
  uint64_t per_gpu = 0;      // the fullest GPU's need over the phases, all weights resident
  uint64_t overhead = 0;     // N·per_gpu − per_gpu(1): bytes held twice or added for communication
  int64_t equivalent = 0;    // may be negative for absurd requests
};

struct MemoryPlan {
  PlanInput input;
  RequestShape shape;
  // [reference encode, with keyframes or references,] text encoder, denoiser, decode (each frees
  // the one before); find one by name (phase()).
  std::vector<PhasePlan> phases;
  // Keyframes or references and a prompt on two GPUs or more: the reference encode (GPUs 0..N-2) and
  // the text encoder (GPU N-1) run at once, and a GPU's need is the two phases' sum (their GPUs are
  // disjoint unless the text encoder stores layers on a peer).
  bool pre_overlap = false;
  bool fits = false;
  uint64_t spare = 0;      // least free bytes over GPUs and phases, when it fits
  uint64_t shortfall = 0;  // most missing bytes over GPUs and phases, when it does not
  std::string tightest;    // "GPU 0, denoiser phase"
  uint64_t host_weight_bytes = 0;  // weights read from host RAM (host tier + streamed once), all phases
  uint64_t host_output_bytes = 0;  // decoded frames f32 and waveform on the host
  // With keyframes or references: what the encoders read (u8 pixels, f32 waveforms at 32 kHz) and
  // the f32 latents they give, on the host (encode_memory.h).
  uint64_t host_reference_media_bytes = 0, host_reference_latent_bytes = 0;
  double step_compute_s = 0;       // denoiser forward at GpuSet::tflops per computing GPU (estimate)
  double step_stream_s = 0;        // peer + host weight copies per forward per computing GPU
  std::vector<std::string> suggestions;  // when it does not fit: changes that make it fit
  std::vector<CapacityRow> capacity;     // 1..gpus.count

  // The phase named `name` ("reference encode", "text encoder", "denoiser", "decode"); nullptr when
  // the plan has none (no reference encode for t2va).
  const PhasePlan* phase(const std::string& name) const;
};

// Errors: invalid_argument for --gpus outside [1, 64], VRAM <= 0, a layout wider than the GPUs or
// not dividing the denoiser's heads, and the request's own errors (request_shape).
Expected<MemoryPlan> plan_memory(const PlanInput& input);
// The same for a request whose shape is already made (request_shape of input.models and
// input.request): it is reused, not computed again.
Expected<MemoryPlan> plan_memory(const PlanInput& input, const RequestShape& shape);

// ok when the plan fits; otherwise invalid_argument with the tightest GPU's need, its cap, the
// shortfall in GiB and the suggestions, e.g. "does not fit: GPU 0 needs 61.20 GiB in the denoiser
// phase (weights 37.44, activations 7.07, ...) but has 24.00 GiB: 37.20 GiB short; to fit: ...".
Status check_fits(const MemoryPlan& plan);

// What the GPU runtime's weight streamers take from a plan (streamed_groups.cpp).
//
// Per index of `count`: whether `phase`'s group "<stem><index>" is streamed (peer or host tier).
// Unsupported, with advice, when the phase streams a group of another name (the runtime streams
// only those); internal when an index is out of range or the plan has no such phase.
//   streamed_groups(plan, "denoiser", "block ", 50), streamed_groups(plan, "text encoder", "layer ", 50)
Expected<std::vector<bool>> streamed_groups(const MemoryPlan& plan, const std::string& phase,
                                            const std::string& stem, int64_t count);

// The denoiser's streamed blocks, per block of `num_layers`. Also refuses a plan that streams any
// decode weight (the decoders do not stream at run time); the text encoder is not looked at.
Expected<std::vector<bool>> streamed_denoiser_blocks(const MemoryPlan& plan, int64_t num_layers);

// The text encoder's streamed layers, per layer of plan.input.models.text_layers: what
// TextEncoderPlacement::streamed takes. Unsupported for a layer on a peer GPU: the text encoder
// streams from pinned host RAM only.
Expected<std::vector<bool>> streamed_text_encoder_layers(const MemoryPlan& plan);

// Per-GPU margin for the CUDA context, library handles and fragmentation.
uint64_t margin_bytes(uint64_t cap);

}  // namespace orochi::planner

// What the planner is asked: the models (their configs), the request, the GPUs and the parallel
// layout, and which weight tiers it may use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/precision.h"
#include "core/status.h"
#include "dist/parallel_options.h"
#include "models/h3/config.h"
#include "models/h3_audio_vae/config.h"
#include "models/h3_video_vae/config.h"
#include "models/qwen3vl/text_config.h"
#include "models/qwen3vl/vision_config.h"
#include "pipeline/packed_layout.h"
#include "pipeline/ref2va_layout.h"
#include "pipeline/scheduler_h3.h"
#include "planner/plan_types.h"

namespace orochi::planner {

// The four configs of an H3 pipeline; no weights.
struct ModelConfigs {
  std::string source = "h3";  // "h3" (released configs) or the folder they were read from
  h3::H3Config transformer;
  h3vae::VideoVaeConfig video_vae;
  h3_audio::AudioVaeConfig audio_vae;
  qwen3vl::TextConfig text_encoder = qwen3vl::TextConfig::qwen3vl_32b();
  qwen3vl::VisionConfig vision = qwen3vl::VisionConfig::qwen3vl_32b();  // the conditioner's vision tower
  int64_t text_layers = 50;  // H3 conditions on hidden_states[50]: layers past it are never run
  // Host RAM the transformer's weights take as a GPU run loads them (h3::host_bytes_as_loaded: the
  // checkpoint's stored bytes, FP8 weights as their bf16 copies); 0: not known (configs alone).
  uint64_t transformer_host_bytes = 0;
};

// "h3": the released configs. Otherwise a MiniMax-H3 folder of either layout (h3::model_folder_parts):
// reads only the configs of the transformer (the folder's opening partition), the video VAE (the
// release's wrapper + source/config.json), the audio VAE (the release's config.json + metadata.json)
// and text_encoder/ (not_found naming the missing file), and the headers of the transformer's
// weights when it has them (transformer_host_bytes).
Expected<ModelConfigs> load_model_configs(const std::string& model);

struct ParallelLayout {
  enum class Kind { kNone, kTensor, kSequence, kTensorSequence };
  Kind kind = Kind::kNone;
  int degree = 1;     // GPUs that compute together
  int sp_degree = 1;  // kTensorSequence: the SP part (degree = tp x sp)
  std::string name() const;  // "none", "tp2", "sp4", "tp2xsp2"
  int tp() const;  // the tensor-parallel degree (1 without TP)
  int sp() const;  // the sequence-parallel degree (1 without SP)
};
// "none", "tp2" / "tp 2" / "tp=2", "sp4" (Ulysses sequence parallel), "tp2xsp2" (both: TP groups
// of 2 inside SP groups of 2, 4 GPUs).
Expected<ParallelLayout> parse_parallel_layout(const std::string& text);
// --parallel on every command: "auto" (none: the planner decides) or a layout as above.
Expected<std::optional<ParallelLayout>> parse_parallel_choice(const std::string& text);

struct GpuSet {
  int count = 1;
  uint64_t vram_bytes = 139 * kGiB;  // usable per GPU (an H200's)
  double peer_gbps = 300.0;          // GPU -> GPU copy (NVLink 4 practical; PCIe P2P ~25)
  double host_gbps = 25.0;           // pinned host -> GPU (PCIe 4 x16 practical)
  double tflops = 580.0;             // dense bf16 per GPU, for the compute-time estimate (H200)
};

struct TierPolicy {
  bool peer = true;   // may weights live on a store GPU?
  bool host = true;   // may weights live in pinned host RAM?
  int staging_slots = 2;  // K: block-sized slots streamed weights rotate through (prefetch i+1)
};

struct PlanRequest {
  int64_t width = 1344, height = 768, frames = 124;
  int64_t text_rows = 256;  // prompt tokens L (with fl2va/ref2va: the presentation's, vision pads included)
  int64_t vision_patches = 0;  // patches of the images and video frames the tower reads (0: no tower)
  std::vector<int64_t> text_tags;  // per text row, the presentation's DiT tag (pipeline::T2vaShape); empty: all text
  int64_t steps = 8;        // denoiser evaluations
  double video_shift = pipeline::kH3VideoShift, audio_shift = pipeline::kH3AudioShift;
  std::vector<double> video_sigmas, audio_sigmas;  // given grids (pipeline/sampling.h); empty: shifted
  std::vector<pipeline::KeyframeAnchor> keyframes;  // fl2va: one conditioning frame of rows each
  std::vector<pipeline::ReferenceGeometry> references;  // ref2va: each reference's latent geometry, request order
};

// "480p" (832x480), "544p" (960x544), "768p" (1344x768) or "WxH" (e.g. "1024x576").
Expected<PlanRequest> request_for_resolution(const std::string& res, PlanRequest base = {});

struct PlanInput {
  ModelConfigs models;
  PlanRequest request;
  GpuSet gpus;
  ParallelLayout layout;
  TierPolicy tiers;
  // The text-encoder phase's own tiers when set (generate lets it stream from host RAM even when
  // several GPUs split the denoiser instead); otherwise it is placed with `tiers` as well.
  std::optional<TierPolicy> text_encoder_tiers;
  // The run's sequence-parallel switches that change memory (engine/run_switches.h).
  dist::SequenceParallelOptions sp;
  // The denoiser's linears (--precision): fp8 / int8 hold the blocks' linears as 1-byte codes and
  // per-channel scales, and the plan counts those bytes.
  Precision precision = Precision::kBf16;
  // FP8 attention (backends::KernelOptions::fp8_attention: attention-precision, auto with fp8
  // linears): its codes and scales join the attention workspace.
  bool fp8_attention = false;
  // The conditioner's text-stack linears (--set conditioner-precision; engine/run_switches.h): the
  // text-encoder phase counts their codes and scales the same way.
  Precision conditioner_precision = Precision::kBf16;
};

}  // namespace orochi::planner

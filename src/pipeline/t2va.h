// A MiniMax-H3 text-to-video-with-audio run, as diffusers' modular t2va pipeline runs it: packed
// layout -> noise -> denoising loop (video shift 12, audio shift 3, one forward per step) -> unpack ->
// video VAE decode (temporal chunks, spatial tiles) and audio VAE decode -> pixels and waveform.
// fl2va (pipeline/fl2va.h) is the same run with keyframe conditioning rows in front of the target
// video (MODELS_H3.md §1.6), ref2va (pipeline/ref2va.h) with reference blocks in front of the
// target audio and video (REF2VA.md §5): the plan's layout reserves them, the request carries their
// latents.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/denoiser.h"
#include "models/h3/request_buffers.h"
#include "models/h3/transformer.h"
#include "pipeline/decoders.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/packed_layout.h"
#include "pipeline/ref2va_layout.h"
#include "pipeline/scheduler_h3.h"
#include "pipeline/video_geometry.h"

namespace orochi::pipeline {

struct T2vaRequest {
  int64_t width = 0, height = 0, frames = 0;  // canvas multiple of 32 px; frames 17n + 5
  int64_t steps = 8;                          // denoiser evaluations (diffusers' num_inference_steps - 1)
  uint64_t seed = 0;                          // keys every noise tensor (counter-based: same on any device)
  double video_shift = kH3VideoShift, audio_shift = kH3AudioShift;
  std::vector<double> video_sigmas, audio_sigmas;  // given grids (pipeline/sampling.h); empty: the shifted grid
  Tensor text_features;                       // f32 [L, text_dim]
  // The conditions the plan reserves, in packed order: fl2va's keyframes as normalized VAE latents
  // f32 [C, 1, h, w], ref2va's images and videos as f32 [C, T_r, h_r, w_r] (h3vae::encode_condition);
  // ref2va's soundtracks and clips as normalized audio rows f32 [2a, C_a], channel-major. Empty for t2va.
  std::vector<Tensor> condition_latents;
  std::vector<Tensor> condition_audio_rows;
};

// Noise streams of a request's seed: the same (seed, stream, element) gives the same number on the
// CPU, on a GPU and on any split across GPUs.
inline constexpr uint64_t kVideoNoiseStream = 11;  // [C, T, H, W] latent layout, then patchified
inline constexpr uint64_t kAudioNoiseStream = 12;  // [2A, C] channel-major rows
// Conditioning latent i (a keyframe, or a ref2va image or video) draws its noise from stream
// kConditionNoiseStream + i.
inline constexpr uint64_t kConditionNoiseStream = 1000;

// Progress of the long stages: "denoise" (per step), "video decode" (per temporal chunk), "audio
// decode" (once). `done` of `total`, `seconds` of this unit of work.
struct T2vaProgress {
  std::string stage;
  int64_t done = 0, total = 0;
  double seconds = 0;
};
using T2vaProgressCallback = std::function<void(const T2vaProgress&)>;

struct T2vaTimes {
  double prepare_s = 0;  // layout, noise, AdaLN tables
  double condition_encode_s = 0;  // fl2va / ref2va: the keyframes or references through the VAE encoders
  std::vector<double> step_s;
  double video_decode_s = 0, audio_decode_s = 0;
};

// The packed rows of a request by what they hold (the stage report's counts).
struct RowCounts {
  int64_t text = 0, target_video = 0, target_audio = 0;
  int64_t keyframes = 0;  // fl2va conditioning rows
  // ref2va, per kind: how many references and their rows (a video's soundtrack rows apart).
  int64_t images = 0, image_rows = 0;
  int64_t videos = 0, video_rows = 0, soundtrack_rows = 0;
  int64_t audio_clips = 0, audio_clip_rows = 0;
};

struct T2vaResult {
  VideoGeometry geometry;
  int64_t packed_rows = 0, text_rows = 0, table_timesteps = 0;
  // Conditioning video rows (fl2va keyframes, ref2va images and videos) held at max(t_v, 0.999),
  // and ref2va's reference audio rows held at 1.0; all cut off before the decode.
  int64_t condition_rows = 0, condition_audio_rows = 0;
  RowCounts rows;
  Tensor frames;    // f32 [F, 3, H, W], RGB in [0, 1]
  Tensor waveform;  // f32 [2, 800·A] in [-1, 1], 32 kHz
  int sample_rate = 32000;
  T2vaTimes times;
};

// Rows of text conditioning a request may carry (a prompt's tokens, a features file's rows).
inline constexpr int64_t kMaxTextRows = 65536;

// The sizes that decide a request's work, known before any model runs (the text rows L from the
// tokenized prompt, the features file's header, or the count of random rows).
struct T2vaShape {
  int64_t width = 0, height = 0, frames = 0, steps = 8;
  double video_shift = kH3VideoShift, audio_shift = kH3AudioShift;
  int64_t text_rows = 0;
  std::vector<KeyframeAnchor> keyframes;  // fl2va: one conditioning frame per anchor, in packed order
  // ref2va: the references' latent geometry in request order (pipeline::reference_geometry).
  std::vector<ReferenceGeometry> references;
  // Per text row: 1 text, 0 a vision block's rows of the presentation (REF2VA.md §4.3); empty: all 1.
  std::vector<int64_t> text_tags;
  // Given sigma grids of steps + 1 values each (pipeline/sampling.h); empty: the shifted grid.
  std::vector<double> video_sigmas, audio_sigmas;
};

// What a request will do, before any work: sizes, layout, schedules, how many AdaLN tables. Made
// once per request (the engine's plan; the memory planner reads the same one) and never again.
struct T2vaPlan {
  h3::H3Config model;  // the transformer it is made for (patch, channels, text width)
  T2vaShape shape;
  VideoGeometry geometry;
  PackedLayout layout;
  H3Schedule video_schedule, audio_schedule;
  int64_t table_timesteps = 0;
  int64_t steps = 0;  // denoiser evaluations: the shorter schedule's (equal unless a huge shift merged sigmas)
};
// Checks the shape (geometry errors name the nearest valid values; steps in [1, 1000]; a given
// sigma grid as pipeline::sampling_schedule checks it; text rows in [1, 65536]; at most one first
// and one last keyframe, first before last; keyframes or references, not both; one tag per text row).
// With references the layout is ref2va's (build_ref2va_layout), else t2va's / fl2va's.
Expected<T2vaPlan> plan_t2va(const h3::H3Config& config, const T2vaShape& shape);
RowCounts row_counts(const T2vaPlan& plan);
T2vaShape shape_of(const T2vaRequest& request);  // text_rows from the features
// What a GPU denoiser reserves for the plan's request: rows, text, video and audio rows, timesteps.
h3::gpu::RequestSize request_size(const T2vaPlan& plan);

struct T2vaRunOptions {
  T2vaProgressCallback progress;
  // After the loop the denoiser gives back only its request memory (release_request), keeping
  // its weights for the next request; otherwise its weights go too (release), for the decoders.
  bool keep_denoiser_weights = false;
  const std::atomic<bool>* cancel = nullptr;  // set: kCancelled at the next step or stage
};

// The denoise loop's inputs of a request (the packed inputs: layout, schedules, text, and the video
// rows = the visual conditions' noised rows (keyframes or references, each drawn from its condition
// stream), then the target's noise; the audio rows = the reference audio rows, then the target's
// noise). Points into `plan`, which must outlive it. shape_mismatch when the text features or the
// conditions do not fit the plan.
Expected<DenoiseRequest> denoise_inputs(const T2vaRequest& request, const T2vaPlan& plan);

// Runs every stage of `plan` (made for this request: the text features must have its L rows and
// the denoiser's width). Non-finite outputs end the run at the stage that made them (kNonFinite).
Expected<T2vaResult> run_t2va(models::Denoiser& denoiser, VideoDecoder& video_vae, AudioDecoder& audio_vae,
                              const T2vaRequest& request, const T2vaPlan& plan, const T2vaRunOptions& options = {});

}  // namespace orochi::pipeline

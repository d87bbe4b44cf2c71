// A MiniMax-H3 reference-to-video-with-audio run (ref2va), as diffusers' modular pipeline runs it
// (../shared/docs/REF2VA.md §0-§3, §5; MODELS_H3.md §2):
//   1. prepare (D Ref2VASetupStep): each reference in request order normalized — an image resized to
//      its encode size (PIL LANCZOS), a video's frames onto 24 fps, cut to the target's frame count and
//      resized to the canvas its own aspect resolves to, a soundtrack or clip cut to the target's
//      duration at its own rate, made stereo and resampled to 32 kHz;
//   2. encode (D Ref2VAReferenceEncoderStep): images and videos through the video VAE encoder (a video
//      snapped down to 17n + 5 frames; posterior sampled with the seed-42 CPU generator, fp16-rounded,
//      normalized: h3vae::encode_condition), soundtracks and clips through the audio VAE encoder
//      (posterior mean, normalized: h3_audio::encode_reference_audio), on the CPU or a GPU (encoders.h);
//   3. t2va's run (t2va.h) on the ref2va packed layout (ref2va_layout.h): each visual reference noised
//      once to 0.999 from the request's condition stream 1000 + i (i counting visual references),
//      reference audio rows clean; all of them written once and never stepped, at max(t_v, 0.999)
//      and 1.0; cut off before the decode.
#pragma once

#include <atomic>
#include <optional>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "io/media_in.h"
#include "pipeline/encoders.h"
#include "pipeline/reference/reference_geometry.h"
#include "pipeline/ref2va_layout.h"
#include "pipeline/t2va.h"

namespace orochi::pipeline {

// Where references land before the encoders: D's configs canvas_short_edge / canvas_max_pixels (the
// canvas a video's own aspect resolves to) and reference_image_short_edge (images, 2048 released).
// `match` (ComfyUI's policy): an image at most the target's area, a video at most its own canvas's
// area, neither upscaled.
struct ReferenceRules {
  reference::CanvasRule canvas;
  int64_t image_short_edge = 2048;
  reference::ImageSizePolicy policy = reference::ImageSizePolicy::kShortEdge;
};

// One reference as read from its file (io::read_image / read_video / read_audio).
struct Ref2vaSource {
  ReferenceKind kind = ReferenceKind::kImage;
  io::RgbImage image;                     // kImage
  io::VideoFrames video;                  // kVideo: every frame as decoded
  double fps = 0;                         // kVideo: the rate its frames carry
  std::optional<io::DecodedAudio> audio;  // kVideo: its soundtrack, when it joins; kAudio: the clip
};

// One reference as the encoders take it (D's normalized reference).
struct Ref2vaReference {
  ReferenceKind kind = ReferenceKind::kImage;
  io::RgbImage image;      // kImage: at its encode size (multiples of 32)
  io::VideoFrames frames;  // kVideo: at 24 fps, at most the target's frames, on its own canvas
  Tensor waveform;         // audio-bearing: f32 [2, N] at 32 kHz, at most the target's duration

  bool has_audio() const { return waveform.defined(); }
  // The latents it encodes to: an image (H/16, W/16); a video's first min(N, 17n + 5) frames (the
  // snap down) in ceil(P / 17) clips of 5 latents less the last 3 (5n + 2 for P = 17n + 5); audio
  // ceil(N / 800) per channel.
  ReferenceGeometry geometry() const;
};

// D Ref2VASetupStep for one reference of a request of `frames` (17n + 5) frames on the `target`
// canvas (read by the match policy). invalid_argument naming what to change for an image or video
// beyond 4:1, an empty video or one with no frame on the 24 fps grid, audio that is not mono or
// stereo or has no samples, a kind without its media.
Expected<Ref2vaReference> prepare_ref2va_reference(const Ref2vaSource& source, int64_t frames, reference::Size target,
                                                   const ReferenceRules& rules = {});

// The references' latent geometry in request order (for the plan: T2vaShape::references).
std::vector<ReferenceGeometry> reference_geometry(const std::vector<Ref2vaReference>& references);

// D Ref2VAReferenceEncoderStep.
struct Ref2vaConditions {
  std::vector<Tensor> video_latents;  // per image / video in request order: normalized f32 [C, T_r, h, w]
  std::vector<Tensor> audio_rows;     // per audio-bearing reference in request order: normalized f32 [2a, C_a]
};
// `progress` sees stage "reference encode", once per reference. Errors: the encoders' (a frame too
// small for the encoder), kCancelled when `cancel` is set between references.
Expected<Ref2vaConditions> encode_ref2va_references(VideoEncoder& video_encoder, AudioEncoder& audio_encoder,
                                                    const std::vector<Ref2vaReference>& references,
                                                    const T2vaProgressCallback& progress = nullptr,
                                                    const std::atomic<bool>* cancel = nullptr);

// plan_t2va for a shape with references (invalid_argument without any).
Expected<T2vaPlan> plan_ref2va(const h3::H3Config& config, const T2vaShape& shape);

struct Ref2vaRequest {
  T2vaRequest base;                         // the target's sizes and text; its conditions left empty
  std::vector<Ref2vaReference> references;  // the plan's, in request order
};

// Encodes the references (encode_ref2va_references), then runs t2va's stages with them as the
// conditioning (run_t2va). The result's times.condition_encode_s is the encode.
Expected<T2vaResult> run_ref2va(models::Denoiser& denoiser, VideoDecoder& video_vae, AudioDecoder& audio_vae,
                                VideoEncoder& video_encoder, AudioEncoder& audio_encoder, const Ref2vaRequest& request,
                                const T2vaPlan& plan, const T2vaRunOptions& options = {});

}  // namespace orochi::pipeline

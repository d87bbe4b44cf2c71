// The packed sequence of a ref2va request, as diffusers' MiniMax-H3 pipeline builds it
// (D Ref2VAPrepareLayoutStep.build_ref2va_packed_sequence; REF2VA.md §5):
//   [text L | reference blocks in request order | target audio (channel-major) | target video]
// An image block is its one frame's rows; an audio clip is its 2a channel-major rows; a video block
// is its soundtrack's rows (if any) immediately followed by its T_r frames' rows. Every block has
// its own (h, w) grid; the rotary clock starts at L and each block advances it (image +1, clip +a,
// video + max(a, span of its T_r latents)); the target audio and video share the final origin.
// Row timesteps: assign_row_timesteps (reference visual rows max(t_v, 0.999), reference audio 1.0).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "pipeline/packed_layout.h"

namespace orochi::pipeline {

enum class ReferenceKind { kImage, kVideo, kAudio };

// One reference's encoded geometry: what the reference encoder produced for it.
struct ReferenceGeometry {
  ReferenceKind kind = ReferenceKind::kImage;
  int64_t latent_frames = 1;  // image: 1; video: T_r; audio: unused
  int64_t latent_height = 0;  // image / video latent grid (pixels / 16); audio: unused
  int64_t latent_width = 0;
  int64_t audio_latents = 0;  // audio clip: a (> 0); video: its soundtrack's a, 0 without one

  static ReferenceGeometry image(int64_t h, int64_t w) { return {ReferenceKind::kImage, 1, h, w, 0}; }
  static ReferenceGeometry video(int64_t frames, int64_t h, int64_t w, int64_t soundtrack_latents = 0) {
    return {ReferenceKind::kVideo, frames, h, w, soundtrack_latents};
  }
  static ReferenceGeometry audio(int64_t latents) { return {ReferenceKind::kAudio, 0, 0, 0, latents}; }
};

struct Ref2vaLayoutRequest {
  std::vector<int64_t> text_tags;  // per text row: 1 text, 0 a vision block's rows (§4.3); L = size
  int64_t latent_frames = 0;       // target T = 5n + 2
  int64_t latent_height = 0;       // target pixel height / 16
  int64_t latent_width = 0;
  int64_t audio_latents = 0;       // target A per channel
  int64_t audio_channels = 2;
  int64_t patch_h = 2, patch_w = 2;
  std::vector<ReferenceGeometry> references;  // request order
};

// Where one reference's rows sit. Video/audio offsets count within the video and audio index
// streams (video_indices / audio_indices), so the noise draws (one per visual reference, in
// request order) and the cut back (drop the first ncv video and nca audio rows) follow from them.
struct ReferenceRows {
  ReferenceKind kind = ReferenceKind::kImage;
  int64_t first_row = 0;     // first sequence row of the block (its soundtrack's, for a video)
  int64_t video_offset = 0;  // into video_indices
  int64_t video_rows = 0;
  int64_t audio_offset = 0;  // into audio_indices
  int64_t audio_rows = 0;
  double origin = 0.0;       // the rotary clock at the block
};

struct Ref2vaLayout {
  PackedLayout packed;          // positions f32, tags, indices, condition_{video,audio}_rows
  Tensor positions_f64;         // f64 [S, 3], the reference's own grid before the cast
  std::vector<ReferenceRows> blocks;  // request order
  double target_origin = 0.0;   // the rotary clock at the target audio and video
  int64_t target_audio_start = 0, target_video_start = 0;  // sequence rows
};

Expected<Ref2vaLayout> build_ref2va_layout(const Ref2vaLayoutRequest& request);

}  // namespace orochi::pipeline

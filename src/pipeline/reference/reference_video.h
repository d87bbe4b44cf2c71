// A reference video onto MiniMax-H3's clock and canvas, as diffusers' `_normalize_video_condition`
// does it (../shared/docs/REF2VA.md §2): whole frames dropped or repeated onto 24 fps (the slots of
// ffmpeg's `fps` filter), truncated to the target's frame count, then every frame LANCZOS-resized
// (Pillow-exact) to the canvas its own aspect ratio resolves to. The VAE's snap down to 17n + 5 is
// separate (reference_video_vae_frames), as it is in D.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/status.h"
#include "io/video_frames.h"
#include "pipeline/reference/reference_geometry.h"

namespace orochi::pipeline::reference {

inline constexpr double kModelFps = 24.0;

// For a source of `frames` frames at `fps`, the source frame shown in each 24 fps slot: frame i
// holds slots [floor(i*s + 0.5), floor((i+1)*s + 0.5)), s = 24 / fps, the last one until
// floor(frames*s + 0.5); a frame whose slot range is empty is dropped. fps == 24 is the identity.
// invalid_argument for fps <= 0 (or not finite) or a negative count.
Expected<std::vector<int64_t>> frame_indices_at_24fps(int64_t frames, double fps);

// The whole normalization: to 24 fps, the first `num_frames` (the target's aligned count), resized to
// resolve_canvas_size(own width, own height), or to `canvas` when given (a policy of its own, e.g.
// ComfyUI's `match`). invalid_argument for an empty video, a bad fps or an aspect beyond 4:1.
Expected<io::VideoFrames> normalize_reference_video(const io::VideoFrames& video, double fps, int64_t num_frames,
                                                     const CanvasRule& rule = {}, std::optional<Size> canvas = {});

}  // namespace orochi::pipeline::reference

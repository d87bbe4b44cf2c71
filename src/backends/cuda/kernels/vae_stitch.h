// Device stitching for the video VAE decode (vae_stitch.cu): tiles into a clip, clips into the video.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orochi::cuda::kernels {

// Writes the kept part [keep_h, keep_w] of one decoded tile [planes, tile_h, tile_w] (planes =
// channels x frames) into out [planes, out_h, out_w] at (y0, x0), its first n_up rows blended with
// the raw tile above (up [planes, up_h, tile_w]) and then its first n_left columns with the raw
// tile to the left (left [planes, tile_h, left_w]); up / left null at the canvas edge.
struct StitchTile {
  float* out = nullptr;
  int64_t out_h = 0, out_w = 0;
  const float* tile = nullptr;
  int64_t planes = 0, tile_h = 0, tile_w = 0, keep_h = 0, keep_w = 0, y0 = 0, x0 = 0;
  const float* up = nullptr;
  int64_t up_h = 0, n_up = 0;
  const float* left = nullptr;
  int64_t left_w = 0, n_left = 0;
};
cudaError_t launch_vae_stitch_tile(const StitchTile& t, bool f16, cudaStream_t stream);

// Writes `frames` frames of head into out [channels, out_frames, plane] at frame out_f0, the first n
// cross-faded from the last n of tail's tail_len frames (tail null for the first block). head and
// tail point at their first frame inside clips whose channels are *_stride_frames frames apart.
struct CrossFade {
  float* out = nullptr;
  int64_t out_frames = 0, out_f0 = 0;
  int64_t channels = 0, frames = 0, plane = 0;
  const float* head = nullptr;
  int64_t head_stride_frames = 0;
  const float* tail = nullptr;
  int64_t tail_stride_frames = 0, tail_len = 0, n = 0;
};
cudaError_t launch_vae_cross_fade(const CrossFade& c, bool f16, cudaStream_t stream);

}  // namespace orochi::cuda::kernels

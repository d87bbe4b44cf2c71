// The video VAE's tile stitching and chunk cross-fades on the device, with the arithmetic of the
// host code (h3vae::linear_blend): w_b = P(P(k) / n), w_a = P(1 − w_b), out = P(P(a·w_a) + P(b·w_b)),
// where P rounds to f16 (the reference's autocast blends) or keeps f32; every op is rounded
// separately (no fused multiply-add), so the device result equals the host's bit for bit.
#include <cuda_fp16.h>

#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/vae_stitch.h"

namespace orochi::cuda::kernels {
namespace {

__device__ __forceinline__ float P(float v, bool f16) { return f16 ? __half2float(__float2half_rn(v)) : v; }

// b blended with a at position k of an n-long overlap.
__device__ __forceinline__ float blend(float a, float b, int64_t k, int64_t n, bool f16) {
  const float w_b = P(__fdiv_rn(P(static_cast<float>(k), f16), static_cast<float>(n)), f16);
  const float w_a = P(__fsub_rn(1.0f, w_b), f16);
  return P(__fadd_rn(P(__fmul_rn(a, w_a), f16), P(__fmul_rn(b, w_b), f16)), f16);
}

__global__ void stitch_tile_kernel(StitchTile t, bool f16) {
  const int64_t total = t.planes * t.keep_h * t.keep_w;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t x = i % t.keep_w, y = (i / t.keep_w) % t.keep_h, k = i / (t.keep_w * t.keep_h);
    float v = t.tile[(k * t.tile_h + y) * t.tile_w + x];
    // The row blend first (with the raw tile above), then the column blend (with the raw tile to
    // the left), as the reference blends.
    if (t.up && y < t.n_up) v = blend(t.up[(k * t.up_h + t.up_h - t.n_up + y) * t.tile_w + x], v, y, t.n_up, f16);
    if (t.left && x < t.n_left)
      v = blend(t.left[(k * t.tile_h + y) * t.left_w + t.left_w - t.n_left + x], v, x, t.n_left, f16);
    t.out[(k * t.out_h + t.y0 + y) * t.out_w + t.x0 + x] = v;
  }
}

__global__ void cross_fade_kernel(CrossFade c, bool f16) {
  const int64_t total = c.channels * c.frames * c.plane;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t p = i % c.plane, f = (i / c.plane) % c.frames, ch = i / (c.plane * c.frames);
    float v = c.head[(ch * c.head_stride_frames + f) * c.plane + p];
    if (c.tail && f < c.n)
      v = blend(c.tail[(ch * c.tail_stride_frames + c.tail_len - c.n + f) * c.plane + p], v, f, c.n, f16);
    c.out[(ch * c.out_frames + c.out_f0 + f) * c.plane + p] = v;
  }
}

}  // namespace

cudaError_t launch_vae_stitch_tile(const StitchTile& t, bool f16, cudaStream_t stream) {
  const int64_t total = t.planes * t.keep_h * t.keep_w;
  if (total == 0) return cudaSuccess;
  stitch_tile_kernel<<<grid_blocks(total), 256, 0, stream>>>(t, f16);
  return cudaGetLastError();
}

cudaError_t launch_vae_cross_fade(const CrossFade& c, bool f16, cudaStream_t stream) {
  const int64_t total = c.channels * c.frames * c.plane;
  if (total == 0) return cudaSuccess;
  cross_fade_kernel<<<grid_blocks(total), 256, 0, stream>>>(c, f16);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels

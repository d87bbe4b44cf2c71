// The alias-free SnakeBeta activation fused into one kernel (the decoder's most frequent op: two per
// AMP dilation). A block owns a tile of TT output steps x TC channels: it stages the replicate-
// clamped input window in shared memory, computes every 2x-upsampled sample the tile needs once
// (transposed FIR, then SnakeBeta), and filters those down to the tile's outputs. Index arithmetic
// follows the CPU ops (backends/cpu/conv1d_resample.cpp), tap order included.
#include <algorithm>

#include "backends/cuda/kernels/audio_kernels.h"

namespace orochi::cuda::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kTaps = kAudioFilterTaps;
static_assert(kAudioFilterRatio == 2 && kTaps == 12, "the index arithmetic below assumes 12 taps, ratio 2");
// Upsampler (as cpu::upsample1d_lowpass): pad = K/ratio − 1 replicated inputs each side, output t
// is position t + crop of the transposed conv's output.
constexpr int kUpPad = kTaps / 2 - 1;                    // 5
constexpr int kUpCrop = kUpPad * 2 + (kTaps - 2) / 2;    // 15
// Downsampler (as cpu::downsample1d_lowpass): K/2 − 1 replicated samples on the left (K even).
constexpr int kDownPadLeft = kTaps / 2 - 1;              // 5
// Output t reads upsampled samples 2t − 5 .. 2t + 6; those read inputs t − 6 .. t + 5.
constexpr int kInHaloLeft = 6, kInHalo = 12;
constexpr int kUpHalo = kTaps - 2;                       // 2·TT + 10 upsampled samples per tile

__device__ __forceinline__ int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Dynamic shared memory: xs[(TT + 12)·TC] | act[(2·TT + 10)·TC] | alpha[TC] | inv_beta[TC] | fu[12] | fd[12].
__global__ void alias_free_snake_kernel(const float* __restrict__ x, const float* __restrict__ log_alpha,
                                        const float* __restrict__ log_beta, const float* __restrict__ up_filter,
                                        const float* __restrict__ down_filter, float* __restrict__ out, int64_t L,
                                        int64_t C, int TT, int TC) {
  extern __shared__ float smem[];
  float* xs = smem;
  float* act = xs + (TT + kInHalo) * TC;
  float* alpha = act + (2 * TT + kUpHalo) * TC;
  float* inv_beta = alpha + TC;
  float* fu = inv_beta + TC;
  float* fd = fu + kTaps;

  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * TT;
  const int64_t c0 = static_cast<int64_t>(blockIdx.y) * TC;
  const int64_t b = blockIdx.z;
  const int tc = static_cast<int>(C - c0 < TC ? C - c0 : TC);  // channels of this tile
  const float* xb = x + b * L * C + c0;
  float* ob = out + b * L * C + c0;

  for (int i = threadIdx.x; i < kTaps; i += blockDim.x) {
    fu[i] = up_filter[i];
    fd[i] = down_filter[i];
  }
  for (int c = threadIdx.x; c < tc; c += blockDim.x) {
    // Stored as logs; the 1e-9 guards beta -> 0, as the reference.
    alpha[c] = expf(log_alpha[c0 + c]);
    inv_beta[c] = 1.0f / (expf(log_beta[c0 + c]) + 1e-9f);
  }
  // xs[r] = x[clamp(t0 − 6 + r)]: the replicate padding of the upsampler, resolved at load.
  for (int i = threadIdx.x; i < (TT + kInHalo) * TC; i += blockDim.x) {
    const int r = i / TC, c = i % TC;
    if (c < tc) xs[i] = xb[clamp64(t0 - kInHaloLeft + r, 0, L - 1) * C + c];
  }
  __syncthreads();

  // act[v] = snake(up[clamp(2·t0 − 5 + v, 0, 2L − 1)]): the clamp is the downsampler's replicate
  // padding (of the activated signal, which equals the activation of the replicated samples).
  for (int i = threadIdx.x; i < (2 * TT + kUpHalo) * TC; i += blockDim.x) {
    const int v = i / TC, c = i % TC;
    if (c >= tc) continue;
    const int64_t u = clamp64(2 * t0 - kDownPadLeft + v, 0, 2 * L - 1);
    const int64_t full = u + kUpCrop;  // position in the transposed conv's full output
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kTaps; k += 2) {
      const int kk = k + static_cast<int>(full & 1);
      const int64_t input = (full - kk) / 2 - kUpPad;  // index into x before the replicate clamp
      acc += fu[kk] * xs[(input - (t0 - kInHaloLeft)) * TC + c];
    }
    const float up = 2.0f * acc;
    const float s = sinf(alpha[c] * up);
    act[i] = up + inv_beta[c] * (s * s);
  }
  __syncthreads();

  for (int i = threadIdx.x; i < TT * TC; i += blockDim.x) {
    const int o = i / TC, c = i % TC;
    const int64_t t = t0 + o;
    if (c >= tc || t >= L) continue;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kTaps; ++k) acc += fd[k] * act[(2 * o + k) * TC + c];
    ob[t * C + c] = acc;
  }
}

}  // namespace

cudaError_t launch_audio_alias_free_snake(const float* x, const float* log_alpha, const float* log_beta,
                                          const float* up_filter, const float* down_filter, float* out, int64_t B,
                                          int64_t L, int64_t C, cudaStream_t stream) {
  if (B == 0 || L == 0 || C == 0) return cudaSuccess;
  // About 2048 outputs per block whatever the width: 64 steps x 32 channels, 256 x 8, ...
  const int TC = static_cast<int>(std::min<int64_t>(C, 32));
  const int TT = std::max(64, 2048 / TC);
  const size_t smem = sizeof(float) * ((TT + kInHalo) * TC + (2 * TT + kUpHalo) * TC + 2 * TC + 2 * kTaps);
  const dim3 grid(static_cast<unsigned>((L + TT - 1) / TT), static_cast<unsigned>((C + TC - 1) / TC),
                  static_cast<unsigned>(B));
  alias_free_snake_kernel<<<grid, kThreads, smem, stream>>>(x, log_alpha, log_beta, up_filter, down_filter, out, L, C,
                                                            TT, TC);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels

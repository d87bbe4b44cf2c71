// RMSNorm over rows, optionally followed by the AdaLN modulation (one pass over the normalized
// row, so the norm output never goes to device memory). One block per row.
#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace orochi::cuda::kernels {
namespace {

// V: elements per access (8 = one 16-byte vector, 1 = scalar). The row is read twice (sum of
// squares, then normalize); the second read comes from L1/L2 for the widths H3 uses.
template <int V, bool kModulate>
__global__ void rms_norm_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y,
                                int64_t C, float eps, ModulationRows mod, bool round_first) {
  const int64_t row = blockIdx.x;
  const bf16* xr = x + row * C;
  bf16* yr = y + row * C;

  float sum = 0.0f;
  for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < C; c += static_cast<int64_t>(blockDim.x) * V) {
    float v[V];
    load_bf16<V>(xr + c, v);
#pragma unroll
    for (int i = 0; i < V; ++i) sum += v[i] * v[i];
  }
  sum = block_sum(sum);
  const float inv = rsqrtf(sum / static_cast<float>(C) + eps);

  const bf16* shift = nullptr;
  const bf16* scale = nullptr;
  if constexpr (kModulate) {
    const int64_t t = mod.idx[row];
    shift = mod.shift + t * mod.shift_stride;
    scale = mod.scale + t * mod.scale_stride;
  }
  for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < C; c += static_cast<int64_t>(blockDim.x) * V) {
    float v[V], wv[V];
    load_bf16<V>(xr + c, v);
    load_bf16<V>(w + c, wv);
#pragma unroll
    for (int i = 0; i < V; ++i)  // rounded by the store or below (and first, for the LLM variant)
      v[i] = round_first ? round_bf16(v[i] * inv) * wv[i] : v[i] * inv * wv[i];
    if constexpr (kModulate) {
      float sh[V], sc[V];
      load_bf16<V>(shift + c, sh);
      load_bf16<V>(scale + c, sc);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float normed = round_bf16(v[i]);
        const float one_plus_scale = round_bf16(1.0f + sc[i]);
        v[i] = round_bf16(normed * one_plus_scale) + sh[i];  // the store rounds the sum
      }
    }
    store_bf16<V>(yr + c, v);
  }
}

template <int V>
cudaError_t launch(const bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps,
                   const ModulationRows* mod, cudaStream_t stream, bool round_first) {
  const int threads = row_threads((C + V - 1) / V);
  if (mod)
    rms_norm_kernel<V, true><<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, w, y, C, eps, *mod, round_first);
  else
    rms_norm_kernel<V, false><<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, w, y, C, eps, {}, round_first);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_rms_norm(const bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps,
                            const ModulationRows* mod, cudaStream_t stream, bool round_before_weight) {
  if (rows == 0 || C == 0) return cudaSuccess;
  if (rows > kMaxGridX) return cudaErrorInvalidConfiguration;  // one block per row
  bool vec = C % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(y);
  if (mod)
    vec = vec && aligned16(mod->shift) && aligned16(mod->scale) && mod->shift_stride % 8 == 0 &&
          mod->scale_stride % 8 == 0;
  return vec ? launch<8>(x, w, y, rows, C, eps, mod, stream, round_before_weight)
             : launch<1>(x, w, y, rows, C, eps, mod, stream, round_before_weight);
}

}  // namespace orochi::cuda::kernels

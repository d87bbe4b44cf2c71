// RMSNorm over rows, optionally preceded by a gated residual update of the rows and followed by
// the AdaLN modulation, in one kernel: neither the updated rows nor the norm output make an extra
// trip through device memory. One block per row.
#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace orochi::cuda::kernels {
namespace {

// Each thread keeps up to kCachedVectors of its row's V-vectors in registers between the sum of
// squares and the normalization; wider rows read the rest again (from L1/L2).
constexpr int kCachedVectors = 4;

// The optional gated residual in front of the norm: x is updated in place first.
struct Residual {
  const bf16* gate = nullptr;  // row idx[r] of a table with rows gate_stride apart
  int64_t gate_stride = 0;
  const int64_t* idx = nullptr;
  const bf16* y = nullptr;  // [rows, C]
};

// One block per row. V: elements per access (8 = one 16-byte vector, 1 = scalar). Threads take
// the row's V-vectors strided by blockDim.x, and each sums its squares in ascending order, so every
// variant (cached or not, with or without the residual) gives the same bits.
template <int V, bool kModulate, bool kResidual>
__global__ void rms_norm_kernel(bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y, int64_t C,
                                float eps, ModulationRows mod, Residual res, bool round_first) {
  const int64_t row = blockIdx.x;
  bf16* xr = x + row * C;
  bf16* yr = y + row * C;
  const int64_t first = static_cast<int64_t>(threadIdx.x) * V, step = static_cast<int64_t>(blockDim.x) * V;
  const bf16* gate = kResidual ? res.gate + res.idx[row] * res.gate_stride : nullptr;

  // x[c..c+V), updated by the residual (stored, and rounded as stored) when there is one.
  auto load_row = [&](int64_t c, float (&v)[V]) {
    load_bf16<V>(xr + c, v);
    if constexpr (kResidual) {
      float g[V], u[V];
      load_bf16<V>(gate + c, g);
      load_bf16<V>(res.y + row * C + c, u);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = round_bf16(v[i] + round_bf16(g[i] * u[i]));
      store_bf16<V>(xr + c, v);
    }
  };
  float cached[kCachedVectors][V];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kCachedVectors; ++k) {
    const int64_t c = first + k * step;
    if (c < C) {
      load_row(c, cached[k]);
#pragma unroll
      for (int i = 0; i < V; ++i) sum += cached[k][i] * cached[k][i];
    }
  }
  for (int64_t c = first + kCachedVectors * step; c < C; c += step) {
    float v[V];
    load_row(c, v);
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
  auto normalize = [&](int64_t c, float (&v)[V]) {
    float wv[V];
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
  };
#pragma unroll
  for (int k = 0; k < kCachedVectors; ++k)
    if (first + k * step < C) normalize(first + k * step, cached[k]);
  for (int64_t c = first + kCachedVectors * step; c < C; c += step) {
    float v[V];
    load_bf16<V>(xr + c, v);  // this thread's own (updated) values
    normalize(c, v);
  }
}

template <int V, bool kResidual>
cudaError_t launch(bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps, const ModulationRows* mod,
                   const Residual& res, cudaStream_t stream, bool round_first) {
  if (rows == 0 || C == 0) return cudaSuccess;
  if (rows > kMaxGridX) return cudaErrorInvalidConfiguration;  // one block per row
  const int threads = row_threads((C + V - 1) / V);
  if (mod)
    rms_norm_kernel<V, true, kResidual>
        <<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, w, y, C, eps, *mod, res, round_first);
  else
    rms_norm_kernel<V, false, kResidual>
        <<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, w, y, C, eps, {}, res, round_first);
  return cudaGetLastError();
}

bool vectors_fit(const bf16* x, const bf16* w, const bf16* y, int64_t C, const ModulationRows* mod) {
  bool vec = C % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(y);
  if (mod)
    vec = vec && aligned16(mod->shift) && aligned16(mod->scale) && mod->shift_stride % 8 == 0 &&
          mod->scale_stride % 8 == 0;
  return vec;
}

}  // namespace

cudaError_t launch_rms_norm(const bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps,
                            const ModulationRows* mod, cudaStream_t stream, bool round_before_weight) {
  bf16* in = const_cast<bf16*>(x);  // written only by the residual variant
  return vectors_fit(x, w, y, C, mod) ? launch<8, false>(in, w, y, rows, C, eps, mod, {}, stream, round_before_weight)
                                      : launch<1, false>(in, w, y, rows, C, eps, mod, {}, stream, round_before_weight);
}

cudaError_t launch_gated_residual_rms_norm(bf16* h, const bf16* gate, int64_t gate_stride, const int64_t* idx,
                                           const bf16* y, const bf16* w, bf16* out, int64_t rows, int64_t C,
                                           float eps, const ModulationRows* mod, cudaStream_t stream) {
  const Residual res{gate, gate_stride, idx, y};
  const bool vec = vectors_fit(h, w, out, C, mod) && aligned16(gate) && gate_stride % 8 == 0 && aligned16(y);
  return vec ? launch<8, true>(h, w, out, rows, C, eps, mod, res, stream, false)
             : launch<1, true>(h, w, out, rows, C, eps, mod, res, stream, false);
}

}  // namespace orochi::cuda::kernels

// RMSNorm over rows, optionally preceded by a gated residual update of the rows and followed by
// the AdaLN modulation, and optionally quantizing its output rows per token, in one kernel: neither
// the updated rows nor the norm output make an extra trip through device memory. One block per row.
#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/quantize_device.cuh"
#include "backends/cuda/kernels/quantized_output_kernels.h"

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

// kCode of a kernel that writes no codes (else a QuantCode's value).
constexpr int kNoCodes = -1;

// One block per row. V: elements per access (8 = one 16-byte vector, 1 = scalar). Threads take
// the row's V-vectors strided by blockDim.x, and each sums its squares in ascending order, so every
// variant (cached or not, with or without the residual or the codes) gives the same bits.
// kCode != kNoCodes: the output row, rounded to bf16 as its store rounds it, is also quantized into
// codes / scales with quantize_rows' arithmetic (then y may be null: no bf16 store).
template <int V, bool kModulate, bool kResidual, int kCode>
__global__ void rms_norm_kernel(bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y, int64_t C,
                                float eps, ModulationRows mod, Residual res, bool round_first,
                                uint8_t* __restrict__ codes, float* __restrict__ scales) {
  const int64_t row = blockIdx.x;
  bf16* xr = x + row * C;
  bf16* yr = y != nullptr ? y + row * C : nullptr;  // null: codes only
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
  };
  if constexpr (kCode == kNoCodes) {
#pragma unroll
    for (int k = 0; k < kCachedVectors; ++k) {
      const int64_t c = first + k * step;
      if (c < C) {
        normalize(c, cached[k]);
        store_bf16<V>(yr + c, cached[k]);
      }
    }
    for (int64_t c = first + kCachedVectors * step; c < C; c += step) {
      float v[V];
      load_bf16<V>(xr + c, v);  // this thread's own (updated) values
      normalize(c, v);
      store_bf16<V>(yr + c, v);
    }
  } else {
    constexpr QuantCode Code = static_cast<QuantCode>(kCode);
    // The output values as bf16 holds them: what quantize_rows would read back from y.
    auto output = [&](int64_t c, float (&v)[V]) {
      normalize(c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = round_bf16(v[i]);
      if (y != nullptr) store_bf16<V>(yr + c, v);
    };
    float amax = 0.0f;
#pragma unroll
    for (int k = 0; k < kCachedVectors; ++k) {
      const int64_t c = first + k * step;
      if (c < C) {
        output(c, cached[k]);
#pragma unroll
        for (int i = 0; i < V; ++i) amax = fmaxf(amax, fabsf(cached[k][i]));
      }
    }
    for (int64_t c = first + kCachedVectors * step; c < C; c += step) {
      float v[V];
      load_bf16<V>(xr + c, v);
      output(c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) amax = fmaxf(amax, fabsf(v[i]));
    }
    const RowScale rs = row_scale<Code>(block_max(amax));
    if (threadIdx.x == 0) scales[row] = rs.scale;
    uint8_t* cr = codes + row * C;
#pragma unroll
    for (int k = 0; k < kCachedVectors; ++k)
      if (first + k * step < C) store_encoded<Code, V>(cr + first + k * step, cached[k], rs.inverse);
    for (int64_t c = first + kCachedVectors * step; c < C; c += step) {  // rows wider than the cache: again
      float v[V];
      load_bf16<V>(xr + c, v);
      normalize(c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = round_bf16(v[i]);
      store_encoded<Code, V>(cr + c, v, rs.inverse);
    }
  }
}

template <int V, bool kResidual, int kCode>
cudaError_t launch(bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps, const ModulationRows* mod,
                   const Residual& res, cudaStream_t stream, bool round_first, const RowCodes& q) {
  if (rows == 0 || C == 0) return cudaSuccess;
  if (rows > kMaxGridX) return cudaErrorInvalidConfiguration;  // one block per row
  const int threads = row_threads((C + V - 1) / V);
  if (mod)
    rms_norm_kernel<V, true, kResidual, kCode><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        x, w, y, C, eps, *mod, res, round_first, q.codes, q.scales);
  else
    rms_norm_kernel<V, false, kResidual, kCode><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        x, w, y, C, eps, {}, res, round_first, q.codes, q.scales);
  return cudaGetLastError();
}

// The kernel for `q`'s code, or the plain one without q.
template <int V, bool kResidual>
cudaError_t launch_any(bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps, const ModulationRows* mod,
                       const Residual& res, cudaStream_t stream, bool round_first, const RowCodes* q) {
  if (q == nullptr) return launch<V, kResidual, kNoCodes>(x, w, y, rows, C, eps, mod, res, stream, round_first, {});
  switch (q->code) {
    case QuantCode::kE4M3:
      return launch<V, kResidual, static_cast<int>(QuantCode::kE4M3)>(x, w, y, rows, C, eps, mod, res, stream,
                                                                      round_first, *q);
    case QuantCode::kI8:
      return launch<V, kResidual, static_cast<int>(QuantCode::kI8)>(x, w, y, rows, C, eps, mod, res, stream,
                                                                    round_first, *q);
    default: return cudaErrorInvalidValue;  // row scales are defined for e4m3 and int8 (core/quantize.h)
  }
}

bool vectors_fit(const bf16* x, const bf16* w, const bf16* y, int64_t C, const ModulationRows* mod, const RowCodes* q) {
  bool vec = C % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(y);  // y null: nothing stored
  if (mod)
    vec = vec && aligned16(mod->shift) && aligned16(mod->scale) && mod->shift_stride % 8 == 0 &&
          mod->scale_stride % 8 == 0;
  if (q) vec = vec && reinterpret_cast<uintptr_t>(q->codes) % 8 == 0;  // 8 codes: one 8-byte store
  return vec;
}

cudaError_t norm(const bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps, const ModulationRows* mod,
                 cudaStream_t stream, bool round_before_weight, const RowCodes* q) {
  bf16* in = const_cast<bf16*>(x);  // written only by the residual variant
  return vectors_fit(x, w, y, C, mod, q) ? launch_any<8, false>(in, w, y, rows, C, eps, mod, {}, stream, round_before_weight, q)
                                         : launch_any<1, false>(in, w, y, rows, C, eps, mod, {}, stream, round_before_weight, q);
}

cudaError_t residual_norm(bf16* h, const bf16* gate, int64_t gate_stride, const int64_t* idx, const bf16* y,
                          const bf16* w, bf16* out, int64_t rows, int64_t C, float eps, const ModulationRows* mod,
                          cudaStream_t stream, const RowCodes* q) {
  const Residual res{gate, gate_stride, idx, y};
  const bool vec = vectors_fit(h, w, out, C, mod, q) && aligned16(gate) && gate_stride % 8 == 0 && aligned16(y);
  return vec ? launch_any<8, true>(h, w, out, rows, C, eps, mod, res, stream, false, q)
             : launch_any<1, true>(h, w, out, rows, C, eps, mod, res, stream, false, q);
}

}  // namespace

cudaError_t launch_rms_norm(const bf16* x, const bf16* w, bf16* y, int64_t rows, int64_t C, float eps,
                            const ModulationRows* mod, cudaStream_t stream, bool round_before_weight) {
  return norm(x, w, y, rows, C, eps, mod, stream, round_before_weight, nullptr);
}

cudaError_t launch_gated_residual_rms_norm(bf16* h, const bf16* gate, int64_t gate_stride, const int64_t* idx,
                                           const bf16* y, const bf16* w, bf16* out, int64_t rows, int64_t C,
                                           float eps, const ModulationRows* mod, cudaStream_t stream) {
  return residual_norm(h, gate, gate_stride, idx, y, w, out, rows, C, eps, mod, stream, nullptr);
}

cudaError_t launch_rms_norm_quantized(const bf16* x, const bf16* w, bf16* y, const RowCodes& q, int64_t rows, int64_t C,
                                      float eps, const ModulationRows* mod, cudaStream_t stream) {
  return norm(x, w, y, rows, C, eps, mod, stream, false, &q);
}

cudaError_t launch_gated_residual_rms_norm_quantized(bf16* h, const bf16* gate, int64_t gate_stride, const int64_t* idx,
                                                     const bf16* y, const bf16* w, bf16* out, const RowCodes& q,
                                                     int64_t rows, int64_t C, float eps, const ModulationRows* mod,
                                                     cudaStream_t stream) {
  return residual_norm(h, gate, gate_stride, idx, y, w, out, rows, C, eps, mod, stream, &q);
}

}  // namespace orochi::cuda::kernels

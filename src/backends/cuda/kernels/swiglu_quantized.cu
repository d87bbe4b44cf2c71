// SwiGLU whose output rows are also quantized per token (quantized_output_kernels.h). Unlike
// launch_swiglu's row tiles, a row's amax needs the whole row, so one block takes a row: each
// thread keeps up to kCachedVectors of its products in registers between the amax and the codes
// (H3's FFN width 14336 is 7 vectors of 8 per thread at 256 threads); wider rows compute the rest
// again, which gives the same bits.
#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/quantize_device.cuh"
#include "backends/cuda/kernels/quantized_output_kernels.h"

namespace orochi::cuda::kernels {
namespace {

constexpr int kMaxThreads = 256;
constexpr int kCachedVectors = 8;

// u [M, 2I] = [value | gate] -> codes [M, I], scales [M] (and out [M, I] bf16 unless null); a block
// per row, grid-stride over rows.
template <int V, QuantCode Code>
__global__ void __launch_bounds__(kMaxThreads)
    swiglu_quantized_kernel(const bf16* __restrict__ u, bf16* __restrict__ out, uint8_t* __restrict__ codes,
                            float* __restrict__ scales, int64_t M, int64_t I) {
  const int64_t first = static_cast<int64_t>(threadIdx.x) * V, step = static_cast<int64_t>(blockDim.x) * V;
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const bf16* ur = u + r * 2 * I;
    bf16* outr = out != nullptr ? out + r * I : nullptr;
    // value · bf16(silu(gate)), rounded as launch_swiglu's bf16 store rounds it.
    auto product = [&](int64_t i, float (&v)[V]) {
      float gate[V];
      load_bf16<V>(ur + i, v);
      load_bf16<V>(ur + I + i, gate);
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] = round_bf16(v[j] * round_bf16(silu_f32(gate[j])));
    };
    float cached[kCachedVectors][V];
    float amax = 0.0f;
#pragma unroll
    for (int k = 0; k < kCachedVectors; ++k) {
      const int64_t i = first + k * step;
      if (i < I) {
        product(i, cached[k]);
        if (outr != nullptr) store_bf16<V>(outr + i, cached[k]);
#pragma unroll
        for (int j = 0; j < V; ++j) amax = fmaxf(amax, fabsf(cached[k][j]));
      }
    }
    for (int64_t i = first + kCachedVectors * step; i < I; i += step) {
      float v[V];
      product(i, v);
      if (outr != nullptr) store_bf16<V>(outr + i, v);
#pragma unroll
      for (int j = 0; j < V; ++j) amax = fmaxf(amax, fabsf(v[j]));
    }
    const RowScale rs = row_scale<Code>(block_max(amax));
    if (threadIdx.x == 0) scales[r] = rs.scale;
    uint8_t* cr = codes + r * I;
#pragma unroll
    for (int k = 0; k < kCachedVectors; ++k)
      if (first + k * step < I) store_encoded<Code, V>(cr + first + k * step, cached[k], rs.inverse);
    for (int64_t i = first + kCachedVectors * step; i < I; i += step) {
      float v[V];
      product(i, v);
      store_encoded<Code, V>(cr + i, v, rs.inverse);
    }
    __syncthreads();  // the next row's block_max reuses the shared partials
  }
}

template <int V, QuantCode Code>
void launch(const bf16* u, bf16* out, const RowCodes& q, int64_t M, int64_t I, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(M < 65535 ? M : 65535);
  swiglu_quantized_kernel<V, Code><<<blocks, row_threads((I + V - 1) / V), 0, stream>>>(u, out, q.codes, q.scales, M, I);
}

template <int V>
cudaError_t launch_any(const bf16* u, bf16* out, const RowCodes& q, int64_t M, int64_t I, cudaStream_t stream) {
  switch (q.code) {
    case QuantCode::kE4M3: launch<V, QuantCode::kE4M3>(u, out, q, M, I, stream); break;
    case QuantCode::kI8: launch<V, QuantCode::kI8>(u, out, q, M, I, stream); break;
    default: return cudaErrorInvalidValue;  // row scales are defined for e4m3 and int8 (core/quantize.h)
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_swiglu_quantized(const bf16* u, bf16* out, const RowCodes& q, int64_t M, int64_t I,
                                    cudaStream_t stream) {
  if (M == 0 || I == 0) return cudaSuccess;
  // I % 8 keeps the gate half's vectors aligned too; 8 codes are one 8-byte store.
  const bool vec = I % 8 == 0 && aligned16(u) && aligned16(out) && reinterpret_cast<uintptr_t>(q.codes) % 8 == 0;
  return vec ? launch_any<8>(u, out, q, M, I, stream) : launch_any<1>(u, out, q, M, I, stream);
}

}  // namespace orochi::cuda::kernels

// A LoRA's low-rank update merged into a weight on the GPU. The sums are those of the host merge
// (h3::merge_lora): row[i] = sum over k ascending of up[o, k] · down[k, i] from 0, then w + s · row,
// each product and sum rounded on its own (__fmul_rn / __fadd_rn: no fused multiply-add, which the
// host's x86-64 build does not use either), then bf16 round-to-nearest-even.
#include <cuda_bf16.h>

#include "backends/cuda/kernels/lora_merge.h"

namespace orochi::cuda::kernels {
namespace {

constexpr int kThreads = 256;  // columns per block
constexpr int kRows = 8;       // rows per block: each down[k, i] read serves 8 rows
constexpr int kMaxRank = 512;  // up's rows of the block live in shared memory

__global__ void lora_merge_kernel(void* __restrict__ w, bool bf16, const float* __restrict__ up,
                                  const float* __restrict__ down, int64_t O, int64_t I, int r, float s) {
  __shared__ float up_rows[kRows][kMaxRank];
  const int64_t o0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const int rows = static_cast<int>(O - o0 < kRows ? O - o0 : kRows);
  for (int idx = threadIdx.x; idx < rows * r; idx += kThreads) up_rows[idx / r][idx % r] = up[(o0 + idx / r) * r + idx % r];
  __syncthreads();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= I) return;
  float acc[kRows];
  for (int j = 0; j < kRows; ++j) acc[j] = 0.0f;
  for (int k = 0; k < r; ++k) {
    const float a = down[static_cast<int64_t>(k) * I + i];
    for (int j = 0; j < kRows; ++j) acc[j] = __fadd_rn(acc[j], __fmul_rn(up_rows[j][k], a));
  }
  for (int j = 0; j < rows; ++j) {
    const int64_t at = (o0 + j) * I + i;
    if (bf16) {
      __nv_bfloat16* wb = static_cast<__nv_bfloat16*>(w);
      wb[at] = __float2bfloat16_rn(__fadd_rn(__bfloat162float(wb[at]), __fmul_rn(s, acc[j])));
    } else {
      float* wf = static_cast<float*>(w);
      wf[at] = __fadd_rn(wf[at], __fmul_rn(s, acc[j]));
    }
  }
}

}  // namespace

cudaError_t launch_lora_merge(void* w, bool bf16, const float* up, const float* down, int64_t O, int64_t I, int64_t r,
                              float s, cudaStream_t stream) {
  if (O == 0 || I == 0 || r == 0) return cudaSuccess;
  if (r > kMaxRank || (O + kRows - 1) / kRows > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>((I + kThreads - 1) / kThreads), static_cast<unsigned>((O + kRows - 1) / kRows));
  lora_merge_kernel<<<grid, kThreads, 0, stream>>>(w, bf16, up, down, O, I, static_cast<int>(r), s);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels

// Row gather/scatter as one indexed row copy. One block per row; each thread moves the widest word
// (16, 8, 4, 2 or 1 bytes) that the row width, the strides and both base pointers allow.
#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace orochi::cuda::kernels {
namespace {

template <typename Word>
__global__ void copy_rows_kernel(char* __restrict__ dst, int64_t dst_stride, const int64_t* __restrict__ dst_idx,
                                 const char* __restrict__ src, int64_t src_stride,
                                 const int64_t* __restrict__ src_idx, int64_t row_words) {
  const int64_t i = blockIdx.x;
  const int64_t d = dst_idx ? dst_idx[i] : i, s = src_idx ? src_idx[i] : i;
  Word* out = reinterpret_cast<Word*>(dst + d * dst_stride);
  const Word* in = reinterpret_cast<const Word*>(src + s * src_stride);
  for (int64_t k = threadIdx.x; k < row_words; k += blockDim.x) out[k] = in[k];
}

template <typename Word>
cudaError_t launch(void* dst, int64_t dst_stride, const int64_t* dst_idx, const void* src, int64_t src_stride,
                   const int64_t* src_idx, int64_t n, int64_t row_bytes, cudaStream_t stream) {
  const int64_t words = row_bytes / static_cast<int64_t>(sizeof(Word));
  copy_rows_kernel<Word><<<static_cast<unsigned>(n), row_threads(words), 0, stream>>>(
      static_cast<char*>(dst), dst_stride, dst_idx, static_cast<const char*>(src), src_stride, src_idx, words);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_copy_rows(void* dst, int64_t dst_stride_bytes, const int64_t* dst_idx, const void* src,
                             int64_t src_stride_bytes, const int64_t* src_idx, int64_t n, int64_t row_bytes,
                             cudaStream_t stream) {
  if (n == 0 || row_bytes == 0) return cudaSuccess;
  if (n > kMaxGridX) return cudaErrorInvalidConfiguration;  // one block per row
  // Every address the kernel forms is a base plus multiples of these, so their common alignment decides.
  const uint64_t bits = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) |
                        static_cast<uint64_t>(dst_stride_bytes) | static_cast<uint64_t>(src_stride_bytes) |
                        static_cast<uint64_t>(row_bytes);
  const auto go = [&](auto word) {
    return launch<decltype(word)>(dst, dst_stride_bytes, dst_idx, src, src_stride_bytes, src_idx, n, row_bytes,
                                  stream);
  };
  if (bits % 16 == 0) return go(uint4{});
  if (bits % 8 == 0) return go(uint2{});
  if (bits % 4 == 0) return go(uint32_t{});
  if (bits % 2 == 0) return go(uint16_t{});
  return go(uint8_t{});
}

}  // namespace orochi::cuda::kernels

// The audio VAE encoder's kernels: DAC Snake, the strided im2col of its convolutions (one item and a
// range of output steps at a time, so the scratch stays small), an f32 LayerNorm, the causal
// attention with its head mean and adaptive pooling, and the GeGLU product. Every arithmetic step is
// an explicitly rounded intrinsic (__fmul_rn, __fadd_rn, ...) so nvcc contracts nothing into FMAs:
// the same roundings as the CPU ops, summation order aside.
#include "backends/cuda/kernels/audio_encoder_kernels.h"
#include "backends/cuda/kernels/device_helpers.cuh"

namespace orochi::cuda::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void snake_kernel(const float* x, const float* __restrict__ alpha, float* out, int64_t n, int64_t C) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float a = alpha[i % C], v = x[i];
    const float inv = __fdiv_rn(1.0f, __fadd_rn(a, 1e-9f));
    const float s = sinf(__fmul_rn(a, v));
    out[i] = __fadd_rn(v, __fmul_rn(inv, __fmul_rn(s, s)));
  }
}

__global__ void im2col_rows_kernel(const float* __restrict__ x, float* __restrict__ col, int64_t L, int64_t C,
                                   int64_t item, int64_t t_begin, int64_t rows, int64_t K, int64_t stride,
                                   int64_t dilation, int64_t padding) {
  const int64_t width = K * C, n = rows * width;
  const float* xb = x + item * L * C;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t r = i / width, w = i % width, k = w / C, c = w % C;
    const int64_t src = (t_begin + r) * stride + k * dilation - padding;
    col[i] = (src >= 0 && src < L) ? xb[src * C + c] : 0.0f;
  }
}

__device__ __forceinline__ double warp_sum_f64(double v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Block-wide fp64 sum (blockDim.x == kThreads); `partial` is 32 doubles of shared memory that no
// other reduction is using.
__device__ __forceinline__ double block_sum_f64(double v, double* partial) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum_f64(v);
  __syncthreads();  // the previous reduction's readers are done with `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  double total = lane < warps ? partial[lane] : 0.0;
  return warp_sum_f64(total);
}

// One block per row; the statistics in fp64, two passes, as the CPU op.
__global__ void layer_norm_kernel(const float* x, const float* __restrict__ weight, const float* __restrict__ bias,
                                  float* out, int64_t C, float eps) {
  __shared__ double partial[32];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * C;
  float* orow = out + static_cast<int64_t>(blockIdx.x) * C;
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += xr[c];
  const float mean = static_cast<float>(block_sum_f64(sum, partial) / static_cast<double>(C));
  double sq = 0.0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const double d = static_cast<double>(__fsub_rn(xr[c], mean));
    sq += d * d;
  }
  const double var = block_sum_f64(sq, partial) / static_cast<double>(C);
  const float inv = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    orow[c] = __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(xr[c], mean), inv), weight[c]), bias[c]);
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Block-wide max and sum in fp32 (blockDim.x == kThreads), through 32 floats of shared memory.
__device__ __forceinline__ float block_max(float v, float* partial) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return warp_max(lane < warps ? partial[lane] : -INFINITY);
}
__device__ __forceinline__ float block_sum_f32(float v, float* partial) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return warp_sum(lane < warps ? partial[lane] : 0.0f);
}

// One block per (step i, item b). Dynamic shared memory: scores[i + 1] | head_sum[D].
__global__ void causal_attention_pool_kernel(const float* __restrict__ qkv, float* __restrict__ out, int64_t A,
                                             int64_t H, int64_t D, int64_t out_dim) {
  extern __shared__ float smem[];
  __shared__ float partial[32];
  const int64_t i = blockIdx.x, b = blockIdx.y, width = 3 * H * D;
  float* scores = smem;
  float* head_sum = smem + (i + 1);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const float scale = __fdiv_rn(1.0f, sqrtf(static_cast<float>(D)));
  const float* rows = qkv + b * A * width;

  for (int64_t d = threadIdx.x; d < D; d += blockDim.x) head_sum[d] = 0.0f;
  for (int64_t h = 0; h < H; ++h) {
    const float* q = rows + i * width + h * D;
    // Scores: a warp per key row, the lanes over the head dim.
    for (int64_t j = warp; j <= i; j += warps) {
      const float* k = rows + j * width + H * D + h * D;
      float dot = 0.0f;
      for (int64_t d = lane; d < D; d += 32) dot = __fadd_rn(dot, __fmul_rn(q[d], k[d]));
      dot = warp_sum(dot);
      if (lane == 0) scores[j] = __fmul_rn(dot, scale);
    }
    __syncthreads();
    float local_max = -INFINITY;
    for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) local_max = fmaxf(local_max, scores[j]);
    const float max_score = block_max(local_max, partial);
    float local_sum = 0.0f;
    for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) {
      const float e = expf(__fsub_rn(scores[j], max_score));
      scores[j] = e;
      local_sum = __fadd_rn(local_sum, e);
    }
    const float denom = block_sum_f32(local_sum, partial);  // its barriers also publish scores[]
    // Output: a thread per head-dim column, the keys in order (as the CPU op: p = e / denom, o += p·v).
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      float o = 0.0f;
      for (int64_t j = 0; j <= i; ++j) {
        const float p = __fdiv_rn(scores[j], denom);
        o = __fadd_rn(o, __fmul_rn(p, rows[j * width + 2 * H * D + h * D + d]));
      }
      head_sum[d] = __fadd_rn(head_sum[d], o);  // heads summed in order, as torch.mean's sum
    }
    __syncthreads();  // scores[] is rewritten by the next head
  }
  // The mean over heads, then F.adaptive_avg_pool1d's windows [floor(o·D/out), ceil((o+1)·D/out)).
  for (int64_t o = threadIdx.x; o < out_dim; o += blockDim.x) {
    const int64_t begin = (o * D) / out_dim, end = ((o + 1) * D + out_dim - 1) / out_dim;
    float sum = 0.0f;
    for (int64_t d = begin; d < end; ++d) sum = __fadd_rn(sum, __fdiv_rn(head_sum[d], static_cast<float>(H)));
    out[(b * A + i) * out_dim + o] = __fdiv_rn(sum, static_cast<float>(end - begin));
  }
}

__global__ void gelu_tanh_mul_kernel(const float* gate, const float* up, float* out, int64_t n) {
  const float beta = 0.7978845608028654f;  // sqrt(2/pi), as the CPU op's M_SQRT2 · M_2_SQRTPI · 0.5 in f32
  const float kappa = 0.044715f;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float a = gate[i];
    const float cube = __fmul_rn(__fmul_rn(a, a), a);
    const float inner = __fmul_rn(beta, __fadd_rn(a, __fmul_rn(kappa, cube)));
    const float gelu = __fmul_rn(__fmul_rn(0.5f, a), __fadd_rn(1.0f, tanhf(inner)));
    out[i] = __fmul_rn(gelu, up[i]);
  }
}

}  // namespace

cudaError_t launch_audio_snake(const float* x, const float* alpha, float* out, int64_t n, int64_t C,
                               cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  snake_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(x, alpha, out, n, C);
  return cudaGetLastError();
}

cudaError_t launch_audio_im2col_rows(const float* x, float* col, int64_t L, int64_t C, int64_t item, int64_t t_begin,
                                     int64_t rows, int64_t K, int64_t stride, int64_t dilation, int64_t padding,
                                     cudaStream_t stream) {
  const int64_t n = rows * K * C;
  if (n <= 0) return cudaSuccess;
  im2col_rows_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(x, col, L, C, item, t_begin, rows, K, stride, dilation,
                                                              padding);
  return cudaGetLastError();
}

cudaError_t launch_audio_layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t rows,
                                    int64_t C, float eps, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  if (rows > kMaxGridX) return cudaErrorInvalidValue;
  layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, weight, bias, out, C, eps);
  return cudaGetLastError();
}

cudaError_t launch_audio_causal_attention_pool(const float* qkv, float* out, int64_t B, int64_t A, int64_t H, int64_t D,
                                               int64_t out_dim, cudaStream_t stream) {
  if (B <= 0 || A <= 0) return cudaSuccess;
  if (A > kAudioAttentionMaxSteps || B > 65535) return cudaErrorInvalidValue;
  const size_t smem = static_cast<size_t>(A + D) * sizeof(float);  // the last step's scores, and the head sums
  if (smem > 48 * 1024) return cudaErrorInvalidValue;
  causal_attention_pool_kernel<<<dim3(static_cast<unsigned>(A), static_cast<unsigned>(B)), kThreads, smem, stream>>>(
      qkv, out, A, H, D, out_dim);
  return cudaGetLastError();
}

cudaError_t launch_audio_gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  gelu_tanh_mul_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(gate, up, out, n);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels

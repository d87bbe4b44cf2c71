// The video VAE encoder's kernels around cuDNN's convolutions: the padded copy (reflect H/W, causal
// zero frames), the per-frame GroupNorm (+ SiLU) and the residual add. All fp32, [C, T, H, W].
#include <algorithm>

#include "backends/cuda/kernels/device_helpers.cuh"
#include "backends/cuda/kernels/vae_encoder.h"

namespace orochi::cuda::kernels {
namespace {

__device__ __forceinline__ int64_t mirror(int64_t i, int64_t n) { return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i); }

// One thread per output element; the frame index decides zero or a mirrored read.
__global__ void encoder_pad_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t C, int64_t T,
                                   int64_t H, int64_t W, int64_t front, int64_t top, int64_t left, int64_t Hp,
                                   int64_t Wp) {
  const int64_t Tp = T + front, total = C * Tp * Hp * Wp;
  for (int64_t k = first_index(); k < total; k += grid_stride()) {
    const int64_t j = k % Wp, i = (k / Wp) % Hp, t = (k / (Wp * Hp)) % Tp, c = k / (Wp * Hp * Tp);
    const int64_t ts = t - front;
    y[k] = ts < 0 ? 0.0f : x[((c * T + ts) * H + mirror(i - top, H)) * W + mirror(j - left, W)];
  }
}

// One block per (frame, group): mean, then the centred sum of squares (two passes over the group's
// channels' planes of that frame), then normalize, affine and optionally SiLU.
__global__ void group_norm_frames_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ b, float* __restrict__ y, int64_t T, int64_t HW,
                                         int64_t cg, float eps, bool silu) {
  const int64_t t = blockIdx.x, g = blockIdx.y;
  const int64_t n = cg * HW;
  auto at = [&](int64_t k) { return ((g * cg + k / HW) * T + t) * HW + k % HW; };
  float sum = 0.0f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += x[at(k)];
  const float mean = block_sum(sum) / static_cast<float>(n);
  float sq = 0.0f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const float d = x[at(k)] - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum<1>(sq) / static_cast<float>(n) + eps);
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const int64_t c = g * cg + k / HW, idx = at(k);
    const float scale = rstd * w[c], shift = b[c] - mean * scale;
    const float v = x[idx] * scale + shift;
    y[idx] = silu ? silu_f32(v) : v;
  }
}

__global__ void add_into_kernel(float* __restrict__ acc, const float* __restrict__ y, int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) acc[k] += y[k];
}

unsigned blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 65535 * 32 ? (b < 1 ? 1 : b) : 65535 * 32);
}

}  // namespace

cudaError_t launch_encoder_pad(const float* x, float* y, int64_t C, int64_t T, int64_t H, int64_t W, int64_t front,
                               int64_t top, int64_t bottom, int64_t left, int64_t right, cudaStream_t stream) {
  const int64_t Hp = H + top + bottom, Wp = W + left + right, total = C * (T + front) * Hp * Wp;
  if (total == 0) return cudaSuccess;
  encoder_pad_kernel<<<blocks_for(total, 256), 256, 0, stream>>>(x, y, C, T, H, W, front, top, left, Hp, Wp);
  return cudaGetLastError();
}

cudaError_t launch_group_norm_frames(const float* x, const float* w, const float* b, float* y, int64_t C, int64_t T,
                                     int64_t HW, int64_t groups, float eps, bool silu, cudaStream_t stream) {
  if (C == 0 || T == 0 || HW == 0) return cudaSuccess;
  if (T > kMaxGridX || groups > 65535) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(T), static_cast<unsigned>(groups));
  group_norm_frames_kernel<<<grid, 1024, 0, stream>>>(x, w, b, y, T, HW, C / groups, eps, silu);
  return cudaGetLastError();
}

cudaError_t launch_add_into(float* acc, const float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  add_into_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(acc, y, n);
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels

// ---- The fused path's layout-aware kernels (32-bit indices: element counts below 2^31).
namespace orochi::cuda::kernels {
namespace {

// The offset of logical (c, t, h, w) in a C x T x H x W tensor: [C, T, H, W] or channels last [T, H, W, C].
__device__ __forceinline__ int64_t video_offset(bool channels_last, int c, int t, int h, int w, int C, int T, int H,
                                                int W) {
  return channels_last ? ((static_cast<int64_t>(t) * H + h) * W + w) * C + c
                       : ((static_cast<int64_t>(c) * T + t) * H + h) * W + w;
}

__device__ __forceinline__ int mirror32(int i, int n) { return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i); }

// One thread per output element, in the output's memory order.
// x is read through a window: rows y0 + [0, H), columns x0 + [0, W) of frames Hs x Ws (the whole
// tensor when y0 = x0 = 0, Hs = H, Ws = W); the reflect mirrors inside the window.
__global__ void encoder_pad_to_kernel(const float* __restrict__ x, bool in_cl, const float* __restrict__ bias,
                                      float* __restrict__ y, bool out_cl, int C, int Co, int T, int H, int W, int Hs,
                                      int Ws, int y0, int x0, int front, int top, int left, int Tp, int Hp, int Wp,
                                      int total) {
  for (int64_t kk = first_index(); kk < total; kk += grid_stride()) {
    const int k = static_cast<int>(kk);
    int c, t, i, j;
    if (out_cl) {
      c = k % Co;
      int r = k / Co;
      j = r % Wp, r /= Wp;
      i = r % Hp, t = r / Hp;
    } else {
      j = k % Wp;
      int r = k / Wp;
      i = r % Hp, r /= Hp;
      t = r % Tp, c = r / Tp;
    }
    const int ts = t - front;
    float v = 0.0f;
    if (ts >= 0 && c < C) {
      v = x[video_offset(in_cl, c, ts, y0 + mirror32(i - top, H), x0 + mirror32(j - left, W), C, T, Hs, Ws)];
      if (bias) v += bias[c];
    }
    y[k] = v;
  }
}

// The rows (or columns) of the padded output a source row i lands in: i + pad, and with a reflect
// pad of 1 also row 0 when i == 1 (x[-1] = x[1]) and row n + 1 when i == n − 2 (x[n] = x[n − 2]).
__device__ __forceinline__ int mirror_targets(int i, int n, int pad, int* out) {
  int count = 0;
  out[count++] = i + pad;
  if (pad == 1) {
    if (i == 1) out[count++] = 0;
    if (i == n - 2) out[count++] = n + 1;
  }
  return count;
}

// One block per (group, frame); blockIdx.x is the group so the groups of one frame run together
// (channels last, they share cache lines). Two passes for the statistics (mean, then the centred
// sum of squares), a third normalizes and writes every padded position the value lands in.
template <bool kChannelsLast>
__global__ void group_norm_pad_kernel(const float* __restrict__ x, const float* __restrict__ in_bias,
                                      const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ y,
                                      int C, int T, int H, int W, int cg, float eps, bool silu, int front, int pad) {
  const int g = blockIdx.x, t = blockIdx.y, HW = H * W, c0 = g * cg;
  const int Tp = T + front, Hp = H + 2 * pad, Wp = W + 2 * pad;
  const float inv_n = 1.0f / (static_cast<float>(cg) * static_cast<float>(HW));
  // Every (channel cc of the group, pixel p) once, channels last pixel-major (cg contiguous floats
  // per pixel), otherwise channel-major (contiguous planes).
  auto value = [&](int cc, int p) {
    const int c = c0 + cc;
    float v = kChannelsLast ? x[(static_cast<int64_t>(t) * HW + p) * C + c] : x[(static_cast<int64_t>(c) * T + t) * HW + p];
    if (in_bias) v += in_bias[c];
    return v;
  };
  float sum = 0.0f;
  if (kChannelsLast) {
    for (int p = threadIdx.x; p < HW; p += blockDim.x)
      for (int cc = 0; cc < cg; ++cc) sum += value(cc, p);
  } else {
    for (int cc = 0; cc < cg; ++cc)
      for (int p = threadIdx.x; p < HW; p += blockDim.x) sum += value(cc, p);
  }
  const float mean = block_sum(sum) * inv_n;
  float sq = 0.0f;
  if (kChannelsLast) {
    for (int p = threadIdx.x; p < HW; p += blockDim.x)
      for (int cc = 0; cc < cg; ++cc) {
        const float d = value(cc, p) - mean;
        sq += d * d;
      }
  } else {
    for (int cc = 0; cc < cg; ++cc)
      for (int p = threadIdx.x; p < HW; p += blockDim.x) {
        const float d = value(cc, p) - mean;
        sq += d * d;
      }
  }
  const float rstd = rsqrtf(block_sum<1>(sq) * inv_n + eps);
  auto store = [&](int cc, int p) {
    const int c = c0 + cc;
    const float scale = rstd * w[c], shift = b[c] - mean * scale;
    float v = value(cc, p) * scale + shift;
    if (silu) v = silu_f32(v);
    const int i = p / W, j = p - i * W;
    int rows[3], cols[3];
    const int nr = mirror_targets(i, H, pad, rows), nc = mirror_targets(j, W, pad, cols);
    for (int a = 0; a < nr; ++a)
      for (int e = 0; e < nc; ++e) y[video_offset(kChannelsLast, c, t + front, rows[a], cols[e], C, Tp, Hp, Wp)] = v;
  };
  if (kChannelsLast) {
    for (int p = threadIdx.x; p < HW; p += blockDim.x)
      for (int cc = 0; cc < cg; ++cc) store(cc, p);
  } else {
    for (int cc = 0; cc < cg; ++cc)
      for (int p = threadIdx.x; p < HW; p += blockDim.x) store(cc, p);
  }
}

// ---- Channels-last GroupNorm + pad in three coalesced kernels (group_norm_pad's fast path).
// The block-per-(group, frame) kernel above reads a group's cg channels out of every C-float pixel
// (16 of 512 bytes at cg = 4), three times; here the statistics pass reads each frame once as
// float4 runs across the channels, and the normalize pass once more, both fully coalesced.

// Welford's running (count, mean, M2), merged with Chan et al.'s formula (order fixed: deterministic).
struct Moments {
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
};
__device__ __forceinline__ Moments merge(Moments a, const Moments& b) {
  if (b.n == 0.0f) return a;
  if (a.n == 0.0f) return b;
  const float n = a.n + b.n, d = b.mean - a.mean, wb = b.n / n;
  a.mean += d * wb;
  a.m2 += b.m2 + d * d * a.n * wb;
  a.n = n;
  return a;
}

constexpr int kStatsThreads = 256;  // x 4 floats: a thread's stride of 1024 floats keeps its channels
constexpr int kMaxStatsChunks = 256;

// Grid (chunks, T). Chunk k of frame t covers float4s [k·per, (k+1)·per) of the frame (per a
// multiple of kStatsThreads, so thread i always reads channels 4i mod C .. +3, all in group
// (4i mod C) / cg). Writes the chunk's per-group moments to parts[(t·chunks + k)·G + g].
__global__ void group_stats_cl_kernel(const float4* __restrict__ x, const float* __restrict__ in_bias,
                                      Moments* __restrict__ parts, int C, int cg, int64_t frame4, int64_t per) {
  __shared__ Moments shared[kStatsThreads];
  const int k = blockIdx.x, t = blockIdx.y, chunks = gridDim.x, G = C / cg;
  const int c = (threadIdx.x * 4) % C;
  float4 bias = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (in_bias) bias = make_float4(in_bias[c], in_bias[c + 1], in_bias[c + 2], in_bias[c + 3]);
  const float4* frame = x + static_cast<int64_t>(t) * frame4;
  const int64_t end = min(frame4, (k + 1) * per);
  Moments m;
  for (int64_t q = k * per + threadIdx.x; q < end; q += kStatsThreads) {
    float4 v = frame[q];
    v.x += bias.x, v.y += bias.y, v.z += bias.z, v.w += bias.w;
    Moments b;  // the four values' own moments, then merged
    b.n = 4.0f;
    b.mean = ((v.x + v.y) + (v.z + v.w)) * 0.25f;
    const float dx = v.x - b.mean, dy = v.y - b.mean, dz = v.z - b.mean, dw = v.w - b.mean;
    b.m2 = (dx * dx + dy * dy) + (dz * dz + dw * dw);
    m = merge(m, b);
  }
  shared[threadIdx.x] = m;
  __syncthreads();
  for (int g = threadIdx.x; g < G; g += kStatsThreads) {
    Moments total;
    for (int i = 0; i < kStatsThreads; ++i)
      if ((i * 4) % C / cg == g) total = merge(total, shared[i]);
    parts[(static_cast<int64_t>(t) * chunks + k) * G + g] = total;
  }
}

// One thread per (frame, group): the chunks merged in order into (mean, rstd).
__global__ void group_stats_finish_kernel(const Moments* __restrict__ parts, float2* __restrict__ stats, int T, int G,
                                          int chunks, float eps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= T * G) return;
  const int t = i / G, g = i % G;
  Moments m;
  for (int k = 0; k < chunks; ++k) m = merge(m, parts[(static_cast<int64_t>(t) * chunks + k) * G + g]);
  stats[i] = make_float2(m.mean, rsqrtf(m.m2 / m.n + eps));
}

// One thread per float4 of the padded output's T interior frames [T, Hp, Wp, C] (the front frames
// are the caller's): the mirrored source pixel, normalized with its group's statistics.
__global__ void group_norm_apply_pad_cl_kernel(const float4* __restrict__ x, const float* __restrict__ in_bias,
                                               const float* __restrict__ w, const float* __restrict__ b,
                                               const float2* __restrict__ stats, float4* __restrict__ y, int C, int cg,
                                               int T, int H, int W, int front, int pad, bool silu, int64_t total4) {
  const int C4 = C / 4, G = C / cg, Hp = H + 2 * pad, Wp = W + 2 * pad;
  for (int64_t k = first_index(); k < total4; k += grid_stride()) {
    const int c4 = static_cast<int>(k % C4);
    int64_t r = k / C4;
    const int j = static_cast<int>(r % Wp);
    r /= Wp;
    const int i = static_cast<int>(r % Hp), t = static_cast<int>(r / Hp);
    const int c = c4 * 4;
    const float2 s = stats[t * G + c / cg];
    float4 v = x[((static_cast<int64_t>(t) * H + mirror32(i - pad, H)) * W + mirror32(j - pad, W)) * C4 + c4];
    float* e = &v.x;
    for (int u = 0; u < 4; ++u) {
      float val = e[u];
      if (in_bias) val += in_bias[c + u];
      const float scale = s.y * w[c + u], shift = b[c + u] - s.x * scale;
      val = val * scale + shift;
      e[u] = silu ? silu_f32(val) : val;
    }
    y[((static_cast<int64_t>(t + front) * Hp + i) * Wp + j) * C4 + c4] = v;
  }
}

__global__ void bias_residual_kernel(const float* a, const float* __restrict__ a_bias,
                                     const float* __restrict__ y, const float* __restrict__ y_bias, float* out,
                                     bool channels_last, int C, int plane, int n) {
  for (int64_t kk = first_index(); kk < n; kk += grid_stride()) {
    const int k = static_cast<int>(kk);
    const int c = channels_last ? k % C : k / plane;
    float v = a[k];
    if (a_bias) v += a_bias[c];
    if (y) {
      float u = y[k];
      if (y_bias) u += y_bias[c];
      v += u;
    }
    out[k] = v;
  }
}

unsigned grid_for(int64_t n) {
  const int64_t b = (n + 255) / 256;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 16 ? 65535 * 16 : b));
}

}  // namespace

cudaError_t launch_encoder_window_pad(const float* x, bool in_channels_last, const float* bias, float* y,
                                      bool out_channels_last, int64_t C, int64_t Co, int64_t T, int64_t Hs, int64_t Ws,
                                      int64_t y0, int64_t x0, int64_t H, int64_t W, int64_t front, int64_t top,
                                      int64_t bottom, int64_t left, int64_t right, cudaStream_t stream) {
  const int64_t Tp = T + front, Hp = H + top + bottom, Wp = W + left + right, total = Co * Tp * Hp * Wp;
  if (total == 0) return cudaSuccess;
  if (total >= (int64_t{1} << 31) || C * T * Hs * Ws >= (int64_t{1} << 31) || y0 < 0 || x0 < 0 || y0 + H > Hs ||
      x0 + W > Ws)
    return cudaErrorInvalidValue;
  encoder_pad_to_kernel<<<grid_for(total), 256, 0, stream>>>(
      x, in_channels_last, bias, y, out_channels_last, static_cast<int>(C), static_cast<int>(Co), static_cast<int>(T),
      static_cast<int>(H), static_cast<int>(W), static_cast<int>(Hs), static_cast<int>(Ws), static_cast<int>(y0),
      static_cast<int>(x0), static_cast<int>(front), static_cast<int>(top), static_cast<int>(left),
      static_cast<int>(Tp), static_cast<int>(Hp), static_cast<int>(Wp), static_cast<int>(total));
  return cudaGetLastError();
}

cudaError_t launch_encoder_pad_to(const float* x, bool in_channels_last, const float* bias, float* y,
                                  bool out_channels_last, int64_t C, int64_t Co, int64_t T, int64_t H, int64_t W,
                                  int64_t front, int64_t top, int64_t bottom, int64_t left, int64_t right,
                                  cudaStream_t stream) {
  return launch_encoder_window_pad(x, in_channels_last, bias, y, out_channels_last, C, Co, T, H, W, 0, 0, H, W, front,
                                   top, bottom, left, right, stream);
}

namespace {
bool group_norm_pad_coalesced(const float* x, const float* y, bool channels_last, int64_t C, int64_t groups) {
  const int64_t cg = groups > 0 ? C / groups : 0;
  return channels_last && C % 4 == 0 && 1024 % C == 0 && cg % 4 == 0 && aligned16(x) && aligned16(y);
}
int64_t group_stats_chunks(int64_t H, int64_t W, int64_t C) {
  const int64_t frame4 = H * W * C / 4, per_min = int64_t{kStatsThreads} * 8;  // >= 8 float4s per thread
  return std::max<int64_t>(1, std::min<int64_t>(kMaxStatsChunks, (frame4 + per_min - 1) / per_min));
}
}  // namespace

size_t group_norm_pad_scratch_bytes(bool channels_last, int64_t C, int64_t T, int64_t H, int64_t W, int64_t groups) {
  if (!channels_last || groups < 1 || C % groups != 0) return 0;
  return static_cast<size_t>(T * group_stats_chunks(H, W, C) * groups) * sizeof(Moments) +
         static_cast<size_t>(T * groups) * sizeof(float2) + 256;
}

cudaError_t launch_group_norm_pad(const float* x, const float* in_bias, const float* w, const float* b, float* y,
                                  bool channels_last, int64_t C, int64_t T, int64_t H, int64_t W, int64_t groups,
                                  float eps, bool silu, int64_t front, int64_t pad, void* scratch, size_t scratch_bytes,
                                  cudaStream_t stream) {
  if (C == 0 || T == 0 || H == 0 || W == 0) return cudaSuccess;
  if (scratch && group_norm_pad_coalesced(x, y, channels_last, C, groups) && (pad == 0 || pad == 1) && T <= 65535 &&
      scratch_bytes >= group_norm_pad_scratch_bytes(channels_last, C, T, H, W, groups)) {
    const int64_t chunks = group_stats_chunks(H, W, C), frame4 = H * W * C / 4;
    const int64_t per = (frame4 + chunks * kStatsThreads - 1) / (chunks * kStatsThreads) * kStatsThreads;
    Moments* parts = static_cast<Moments*>(scratch);
    float2* stats = reinterpret_cast<float2*>(
        (reinterpret_cast<uintptr_t>(parts + T * chunks * groups) + 15) / 16 * 16);
    const int Ci = static_cast<int>(C), cg = static_cast<int>(C / groups), G = static_cast<int>(groups);
    group_stats_cl_kernel<<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(T)), kStatsThreads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), in_bias, parts, Ci, cg, frame4, per);
    const int tg = static_cast<int>(T * groups);
    group_stats_finish_kernel<<<(tg + 127) / 128, 128, 0, stream>>>(parts, stats, static_cast<int>(T), G,
                                                                     static_cast<int>(chunks), eps);
    const int64_t total4 = T * (H + 2 * pad) * (W + 2 * pad) * C / 4;
    group_norm_apply_pad_cl_kernel<<<grid_for(total4), 256, 0, stream>>>(
        reinterpret_cast<const float4*>(x), in_bias, w, b, stats, reinterpret_cast<float4*>(y), Ci, cg,
        static_cast<int>(T), static_cast<int>(H), static_cast<int>(W), static_cast<int>(front), static_cast<int>(pad),
        silu, total4);
    return cudaGetLastError();
  }
  if (groups > 65535 || T > 65535 || (pad != 0 && pad != 1) ||
      C * (T + front) * (H + 2 * pad) * (W + 2 * pad) >= (int64_t{1} << 31))
    return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(groups), static_cast<unsigned>(T));
  // Threads stride over the pixels of a frame: no more than there are pixels (small late levels).
  const int64_t HW = H * W;
  const int threads = static_cast<int>(HW >= 1024 ? 1024 : (HW + 31) / 32 * 32);
  const int Ci = static_cast<int>(C), Ti = static_cast<int>(T), Hi = static_cast<int>(H), Wi = static_cast<int>(W),
            cg = static_cast<int>(C / groups), fi = static_cast<int>(front), pi = static_cast<int>(pad);
  if (channels_last)
    group_norm_pad_kernel<true><<<grid, threads, 0, stream>>>(x, in_bias, w, b, y, Ci, Ti, Hi, Wi, cg, eps, silu, fi, pi);
  else
    group_norm_pad_kernel<false><<<grid, threads, 0, stream>>>(x, in_bias, w, b, y, Ci, Ti, Hi, Wi, cg, eps, silu, fi, pi);
  return cudaGetLastError();
}

cudaError_t launch_bias_residual(const float* a, const float* a_bias, const float* y, const float* y_bias, float* out,
                                 bool channels_last, int64_t C, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (n >= (int64_t{1} << 31) || C < 1 || n % C != 0) return cudaErrorInvalidValue;
  bias_residual_kernel<<<grid_for(n), 256, 0, stream>>>(a, a_bias, y, y_bias, out, channels_last, static_cast<int>(C),
                                                        static_cast<int>(n / C), static_cast<int>(n));
  return cudaGetLastError();
}

}  // namespace orochi::cuda::kernels

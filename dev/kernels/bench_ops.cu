// Bandwidth of the CUDA elementwise / norm kernels at H3 sizes, against a device-to-device copy.
// Memory-bound ops: the floor is bytes moved / copy bandwidth, printed as "% of copy".
// Build and run on the device machine (from the repo root):
//   nvcc -std=c++20 -O3 -arch=sm_90 -Isrc dev/kernels/bench_ops.cu src/backends/cuda/kernels/*.cu -o /tmp/bench_ops
//   /tmp/bench_ops [rows=16384]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "backends/cuda/kernels/kernels.h"

namespace {

using orochi::cuda::kernels::bf16;
namespace k = orochi::cuda::kernels;

#define CHECK(call)                                                                        \
  do {                                                                                     \
    const cudaError_t err_ = (call);                                                       \
    if (err_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

// Random-ish bf16 values in [-2, 2) from a hash of the index: never time zeros.
__global__ void fill_kernel(bf16* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    p[i] = __float2bfloat16(static_cast<float>(h & 0xffff) / 16384.0f - 2.0f);
  }
}

bf16* random_bf16(int64_t n, uint32_t seed) {
  bf16* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(bf16)));
  fill_kernel<<<1024, 256>>>(p, n, seed);
  CHECK(cudaGetLastError());
  return p;
}

// Median milliseconds of `reps` timed runs after `warmup` untimed ones.
float median_ms(const std::function<void()>& run, int warmup = 3, int reps = 30) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) run();
  std::vector<float> times;
  for (int i = 0; i < reps; ++i) {
    CHECK(cudaEventRecord(start));
    run();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t S = argc > 1 ? std::atoll(argv[1]) : 16384;
  const int64_t H = 5376, inner = 7168, ffn = 14336, R = 51;  // R: modulation rows (n_t · 3)
  bf16* x = random_bf16(S * H, 1);
  bf16* y = random_bf16(S * H, 2);
  bf16* w = random_bf16(H, 3);
  bf16* table = random_bf16(R * 6 * H, 4);
  bf16* q = random_bf16(S * inner, 5);
  bf16* cos = random_bf16(S * 96, 6);
  bf16* sin = random_bf16(S * 96, 7);
  bf16* u = random_bf16(S * 2 * ffn, 8);
  bf16* f = random_bf16(S * ffn, 9);
  float* x32 = nullptr;
  CHECK(cudaMalloc(&x32, S * H * sizeof(float)));
  std::vector<int64_t> host_idx(S);
  for (int64_t i = 0; i < S; ++i) host_idx[i] = (i * 7) % R;
  int64_t* idx = nullptr;
  CHECK(cudaMalloc(&idx, S * sizeof(int64_t)));
  CHECK(cudaMemcpy(idx, host_idx.data(), S * sizeof(int64_t), cudaMemcpyHostToDevice));
  std::vector<int64_t> host_perm(S);
  for (int64_t i = 0; i < S; ++i) host_perm[i] = (i * 40503) % S;  // a shuffle when gcd(40503, S) == 1
  int64_t* perm = nullptr;
  CHECK(cudaMalloc(&perm, S * sizeof(int64_t)));
  CHECK(cudaMemcpy(perm, host_perm.data(), S * sizeof(int64_t), cudaMemcpyHostToDevice));
  CHECK(cudaDeviceSynchronize());

  const double copy_bytes = 2.0 * S * ffn * 2;  // read + write
  const float copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(f, u, S * ffn * 2, cudaMemcpyDeviceToDevice)); });
  const double copy_gbs = copy_bytes / copy_ms / 1e6;
  std::printf("rows S=%lld; device copy %.1f GB/s (read+write)\n\n", static_cast<long long>(S), copy_gbs);
  std::printf("%-22s %10s %10s %10s\n", "op", "ms", "GB/s", "% of copy");

  auto report = [&](const char* name, double bytes, const std::function<cudaError_t()>& op) {
    const float ms = median_ms([&] { CHECK(op()); });
    const double gbs = bytes / ms / 1e6;
    std::printf("%-22s %10.4f %10.1f %9.1f%%\n", name, ms, gbs, 100.0 * gbs / copy_gbs);
  };
  const double act = 2.0 * S * H;  // bytes of one [S, H] bf16 activation
  k::ModulationRows mod{table, 6 * H, table + H, 6 * H, idx};
  report("rms_norm", 2 * act, [&] { return k::launch_rms_norm(x, w, y, S, H, 1e-5f, nullptr, nullptr); });
  report("rms_norm_modulate", 2 * act, [&] { return k::launch_rms_norm(x, w, y, S, H, 1e-5f, &mod, nullptr); });
  report("qk_norm_rope [S,56,128]", 2.0 * 2 * S * inner,
         [&] { return k::launch_qk_norm_rope(q, w, S, 56, 128, 1e-5f, cos, sin, 96, nullptr); });
  report("swiglu I=14336", 3.0 * 2 * S * ffn, [&] { return k::launch_swiglu(u, f, S, ffn, nullptr); });
  report("gated_residual", 3 * act,
         [&] { return k::launch_gated_residual(x, table + 2 * H, 6 * H, idx, y, S, H, nullptr); });
  report("add", 3 * act, [&] { return k::launch_add(x, y, S * H, nullptr); });
  report("cast bf16->f32", 3 * act, [&] { return k::launch_cast_bf16_to_f32(x, x32, S * H, nullptr); });
  report("cast f32->bf16", 3 * act, [&] { return k::launch_cast_f32_to_bf16(x32, x, S * H, nullptr); });
  report("gather_rows (perm)", 2 * act,
         [&] { return k::launch_copy_rows(y, 2 * H, nullptr, x, 2 * H, perm, S, 2 * H, nullptr); });
  report("scatter_rows (perm)", 2 * act,
         [&] { return k::launch_copy_rows(y, 2 * H, perm, x, 2 * H, nullptr, S, 2 * H, nullptr); });
  return 0;
}

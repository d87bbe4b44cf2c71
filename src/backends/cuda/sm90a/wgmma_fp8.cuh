// Hopper (sm_90a) FP8 warpgroup MMAs: e4m3 x e4m3 -> f32, k = 32, for the FP8 attention
// (flash_attention_fp8.cu). PTX ISA (wgmma.mma_async): 8-bit operands from shared memory must be
// K-major (no transpose immediates: the operand list ends with scale-d, imm-scale-a, imm-scale-b);
// A may come from registers, four .b32 holding 16 e4m3 values (the m64nNk32 A fragment,
// core/attention_fp8_layout.h). Descriptors as wgmma.cuh's sw128_descriptor.
#pragma once

#include <cstdint>

namespace orochi::cuda::sm90a {

#define OROCHI_WGMMA_FP8_D8(i)                                                                      \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),      \
      "+f"(d[i + 6]), "+f"(d[i + 7])

// D[64x128] (+)= A[64x32] (shared memory, K-major) * B[32x128] (shared memory, K-major: 128 rows of
// 32 k-bytes).
__device__ __forceinline__ void wgmma_m64n128k32_e4m3_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                                         int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
      :
      OROCHI_WGMMA_FP8_D8(0), OROCHI_WGMMA_FP8_D8(8), OROCHI_WGMMA_FP8_D8(16), OROCHI_WGMMA_FP8_D8(24),
      OROCHI_WGMMA_FP8_D8(32), OROCHI_WGMMA_FP8_D8(40), OROCHI_WGMMA_FP8_D8(48), OROCHI_WGMMA_FP8_D8(56)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// D[64x128] (+)= A[64x32] (registers: a[0] rows r cols 4q..4q+3, a[1] rows r+8 the same cols,
// a[2] and a[3] the same at cols 16+4q.., low byte first) * B[32x128] (shared memory, K-major).
__device__ __forceinline__ void wgmma_m64n128k32_e4m3_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b,
                                                         int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
      :
      OROCHI_WGMMA_FP8_D8(0), OROCHI_WGMMA_FP8_D8(8), OROCHI_WGMMA_FP8_D8(16), OROCHI_WGMMA_FP8_D8(24),
      OROCHI_WGMMA_FP8_D8(32), OROCHI_WGMMA_FP8_D8(40), OROCHI_WGMMA_FP8_D8(48), OROCHI_WGMMA_FP8_D8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

// D[64x8] (+)= A[64x32] (registers, as above) * B[32x8] (shared memory, K-major: 8 rows of 32
// k-bytes). With B all ones (e4m3 0x38) every column of D is the row sum of A: the FP8 attention's
// softmax denominators (mma row sums) without a per-element add.
__device__ __forceinline__ void wgmma_m64n8k32_e4m3_rs(float (&d)[4], const uint32_t (&a)[4], uint64_t desc_b,
                                                       int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

#undef OROCHI_WGMMA_FP8_D8

}  // namespace orochi::cuda::sm90a

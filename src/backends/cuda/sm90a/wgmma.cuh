// Hopper (sm_90a) building blocks for hand-written tensor-core kernels, as thin inline-PTX
// wrappers: mbarriers, TMA tile loads, warpgroup MMA (wgmma) and its shared-memory descriptors,
// named barriers and register reallocation. Only valid in code compiled for sm_90a (the
// arch-specific target: wgmma and setmaxnreg do not exist in plain sm_90).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace orochi::cuda::sm90a {

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// --- mbarriers ---------------------------------------------------------------------------------

__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(arrivals) : "memory");
}
// Makes initialized barriers visible to the other threads and to the TMA unit.
__device__ __forceinline__ void mbarrier_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(bar)) : "memory");
}
// One arrival that also announces `bytes` the TMA unit will deliver before the phase completes.
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}
// Blocks until the barrier's phase of the given parity (0 for its first phase) has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_AGAIN:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_AGAIN;\n}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
}

// --- TMA -----------------------------------------------------------------------------------------

// Loads the tensor map's box at coordinates (c0, c1[, c2]) (innermost first) into shared memory and
// counts its bytes on `bar`. Out-of-range elements arrive as zeros.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          smem_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_address(bar))
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
          smem_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_address(bar))
      : "memory");
}

// --- named barriers and registers --------------------------------------------------------------

__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
template <int kRegisters>
__device__ __forceinline__ void registers_grow() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void registers_shrink() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegisters));
}

// --- wgmma ---------------------------------------------------------------------------------------

// Shared-memory matrix descriptor for the 128-byte swizzle (the layout TMA writes with
// CU_TENSOR_MAP_SWIZZLE_128B: rows of 128 bytes, 16-byte chunks XOR-ed with row % 8, in 1024-byte
// atoms of 8 rows). K-major operands: `stride_bytes` = 1024 between 8-row groups, the leading
// offset is unused. MN-major operands: `leading_bytes` between 64-element blocks along MN,
// `stride_bytes` between 8-row groups along K. Addresses inside an atom (K steps of 32 bytes) are
// allowed because the hardware swizzles the computed address.
__device__ __forceinline__ uint64_t sw128_descriptor(uint32_t smem_addr, uint32_t leading_bytes, uint32_t stride_bytes) {
  uint64_t d = (smem_addr & 0x3FFFF) >> 4;
  d |= static_cast<uint64_t>((leading_bytes & 0x3FFFF) >> 4) << 16;
  d |= static_cast<uint64_t>((stride_bytes & 0x3FFFF) >> 4) << 32;
  d |= uint64_t{1} << 62;  // 128-byte swizzle
  return d;
}

// Makes this thread's ordinary shared-memory writes visible to the async proxy (wgmma, TMA) that
// reads them next (after a barrier among the writers and readers).
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Waits until at most `kPending` committed groups of this warpgroup are still running.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accesses of registers an in-flight wgmma reads or writes across
// the fence/commit/wait points.
template <typename T, int N>
__device__ __forceinline__ void pin_registers(T (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (sizeof(T) == 4 && static_cast<T>(0.5) != 0) {
      asm volatile("" : "+f"(r[i])::"memory");
    } else {
      asm volatile("" : "+r"(r[i])::"memory");
    }
  }
}

// The accumulator operands d[i..i+7] of a wgmma asm statement, read and written ("+f"): the long
// operand lists below are runs of these.
#define OROCHI_WGMMA_D8(i)                                                                          \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),      \
      "+f"(d[i + 6]), "+f"(d[i + 7])

// D[64x128] (+)= A[64x16] (shared memory, K-major) * B[16x128] (shared memory, K-major).
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      :
      OROCHI_WGMMA_D8(0), OROCHI_WGMMA_D8(8), OROCHI_WGMMA_D8(16), OROCHI_WGMMA_D8(24),
      OROCHI_WGMMA_D8(32), OROCHI_WGMMA_D8(40), OROCHI_WGMMA_D8(48), OROCHI_WGMMA_D8(56)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// D[64x176] (+)= A[64x16] (shared memory, K-major) * B[16x176] (shared memory, K-major).
__device__ __forceinline__ void wgmma_m64n176k16_ss(float (&d)[88], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
      :
      OROCHI_WGMMA_D8(0), OROCHI_WGMMA_D8(8), OROCHI_WGMMA_D8(16), OROCHI_WGMMA_D8(24),
      OROCHI_WGMMA_D8(32), OROCHI_WGMMA_D8(40), OROCHI_WGMMA_D8(48), OROCHI_WGMMA_D8(56),
      OROCHI_WGMMA_D8(64), OROCHI_WGMMA_D8(72), OROCHI_WGMMA_D8(80)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// D[64x192] (+)= A[64x16] (shared memory, K-major) * B[16x192] (shared memory, K-major).
__device__ __forceinline__ void wgmma_m64n192k16_ss(float (&d)[96], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
      :
      OROCHI_WGMMA_D8(0), OROCHI_WGMMA_D8(8), OROCHI_WGMMA_D8(16), OROCHI_WGMMA_D8(24),
      OROCHI_WGMMA_D8(32), OROCHI_WGMMA_D8(40), OROCHI_WGMMA_D8(48), OROCHI_WGMMA_D8(56),
      OROCHI_WGMMA_D8(64), OROCHI_WGMMA_D8(72), OROCHI_WGMMA_D8(80), OROCHI_WGMMA_D8(88)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// D[64x128] (+)= A[64x16] (registers, the accumulator fragment layout) * B[16x128] (shared
// memory, MN-major: B's rows are K, its columns contiguous in swizzled 64-column blocks).
__device__ __forceinline__ void wgmma_m64n128k16_rs_tb(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b,
                                                        int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      :
      OROCHI_WGMMA_D8(0), OROCHI_WGMMA_D8(8), OROCHI_WGMMA_D8(16), OROCHI_WGMMA_D8(24),
      OROCHI_WGMMA_D8(32), OROCHI_WGMMA_D8(40), OROCHI_WGMMA_D8(48), OROCHI_WGMMA_D8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

#undef OROCHI_WGMMA_D8

}  // namespace orochi::cuda::sm90a

// Quantized linear layers through cuBLASLt: y[M, N] bf16 = x[M, K] · w[N, K]^T + bias[N], with x
// quantized per token and w per output channel (core/quantize.h: codes plus one f32 scale per row),
// f32 accumulation. Three paths:
//  - fp8 e4m3, outer-vector scales: one cuBLASLt call with CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
//    on both operands (cuBLAS 12.9+; Hopper and later), bias and the bf16 rounding in its epilogue;
//  - fp8 e4m3, unit scales: the codes' product to an f32 [M, N] accumulator, then our dequantizing
//    epilogue (kernels::launch_dequantize_accumulator_f32); taken when asked, or for a shape whose
//    outer-vector plan cuBLASLt refuses (no algorithm, or the scale mode itself);
//  - int8 (W8A8): int8 x int8 -> int32 [M, N] (CUBLAS_COMPUTE_32I, exact), then the same epilogue,
//    which makes the result bit-equal to core's quantized_linear rounded to bf16.
// cuBLASLt's fp8 and int8 kernels want 16-byte rows: K a multiple of 16, N of 8, and the codes'
// data on 16-byte boundaries (anything else is refused with a Status, before any work); the
// epilogue paths take M·N·4 bytes of scratch from the arena passed in, released again before the
// call returns (so the arena's later users must run on the same stream).
// Plans (descriptors + algorithm) are cached per shape, format, options and pointer alignment, as
// GemmRunner's; large shapes time the heuristic's candidates once. One runner per GPU and stream.
#pragma once

#include <cuda_runtime_api.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "backends/cuda/device_memory.h"
#include "core/quantize.h"
#include "core/status.h"
#include "core/tensor.h"

struct cublasLtContext;

namespace orochi::cuda {

enum class QuantizedGemmPath : uint8_t { kFp8OuterVectorScales, kFp8UnitScales, kInt8 };
const char* quantized_gemm_path_name(QuantizedGemmPath path);

struct QuantizedGemmOptions {
  // fp8: CUBLASLT_MATMUL_DESC_FAST_ACCUM. Off (the default), Hopper's fp8 MMA partial sums (about
  // 14 mantissa bits kept) are promoted into f32 every few K steps; on, they are not, which is
  // faster and loses accuracy as K grows. bench gemm measures both.
  bool fast_accum = false;
  // fp8: the unit-scales path even where outer-vector scales are offered (for comparisons).
  bool fp8_unit_scales = false;
};

class QuantizedGemmRunner {
 public:
  static constexpr size_t kDefaultWorkspaceBytes = size_t{32} << 20;

  static Expected<std::unique_ptr<QuantizedGemmRunner>> create(int device_index,
                                                               size_t workspace_bytes = kDefaultWorkspaceBytes);
  ~QuantizedGemmRunner();
  QuantizedGemmRunner(const QuantizedGemmRunner&) = delete;
  QuantizedGemmRunner& operator=(const QuantizedGemmRunner&) = delete;

  // y [M, N] bf16 = x · w^T + bias. x: codes [M, K] and scales [M]; w: codes [N, K] and scales [N];
  // one format (kF8E4M3 or kI8); bias [N] bf16 or null; all contiguous CUDA tensors on this
  // runner's GPU. Shape/dtype mistakes are caller bugs (OROCHI_CHECK); K not a multiple of 16, N
  // not of 8, misaligned codes, cuBLASLt failures or too little scratch come back as a Status.
  Status linear(const RowQuantized& x, const RowQuantized& w, const Tensor* bias, const Tensor& y,
                DeviceArena& scratch, cudaStream_t stream, const QuantizedGemmOptions& options = {});
  // As above, the accumulator paths' product going to `accumulator` instead (a contiguous CUDA
  // tensor of 4-byte elements, f32 or i32, reinterpreted as needed): when it holds fewer than M·N
  // elements, the rows run in chunks of accumulator.numel() / N (at least one row must fit, else a
  // Status). A forward plans this buffer once (a denoiser's request arena) and allocates nothing.
  Status linear(const RowQuantized& x, const RowQuantized& w, const Tensor* bias, const Tensor& y,
                const Tensor& accumulator, cudaStream_t stream, const QuantizedGemmOptions& options = {});

  // The path the last linear() took (for reports and benchmarks).
  QuantizedGemmPath last_path() const { return last_path_; }
  // Why cuBLASLt last refused outer-vector fp8 scales for a shape (that shape then takes the
  // unit-scales path); empty while it never has.
  const std::string& outer_vector_refusal() const { return outer_vector_refusal_; }
  size_t cached_plans() const { return plans_.size(); }
  void set_autotune(bool on) { autotune_ = on; }

 private:
  struct Key {
    int64_t M = 0, N = 0, K = 0;
    QuantizedGemmPath path = QuantizedGemmPath::kInt8;
    bool bias = false;  // only the outer-vector path fuses the bias into cuBLASLt
    bool fast_accum = false;
    uint32_t align_x = 0, align_w = 0, align_y = 0, align_bias = 0;
    auto operator<=>(const Key&) const = default;
  };
  struct Plan;
  struct Operands {
    const void* x = nullptr;
    const void* w = nullptr;
    void* d = nullptr;  // y, or the accumulator
    const void* x_scale = nullptr;
    const void* w_scale = nullptr;
    const void* bias = nullptr;
    cudaStream_t stream = nullptr;
  };
  static constexpr int kMaxCandidates = 8;
  static constexpr double kTuneMinMacs = 1073741824.0;

  QuantizedGemmRunner() = default;
  void check_operands(const RowQuantized& x, const RowQuantized& w, const Tensor* bias, const Tensor& y) const;
  // Both linear()s: one of `scratch` (an [M, N] accumulator taken and given back) or `accumulator`
  // (given, rows in chunks that fit) serves the accumulator paths.
  Status linear_with(const RowQuantized& x, const RowQuantized& w, const Tensor* bias, const Tensor& y,
                     DeviceArena* scratch, const Tensor* accumulator, cudaStream_t stream,
                     const QuantizedGemmOptions& options);
  // The codes' product of rows [0, M) into op.d (the accumulator, M·N elements), then the epilogue
  // into y_rows.
  Status accumulate_and_dequantize(Key key, Operands op, int64_t M, bool int8, void* y_rows);
  // The plan for `key`, made on first sight; Status unsupported when cuBLASLt has no algorithm.
  Expected<Plan*> plan_for(const Key& key, const Operands& operands);
  Status run(const Plan& plan, const Operands& operands);
  // One cublasLtMatmul of `plan` with `algo` (a cublasLtMatmulAlgo_t, an anonymous struct in
  // cublasLt.h, so not named here); returns its cublasStatus_t.
  int matmul(const Plan& plan, const void* algo, size_t workspace, const Operands& operands);

  cublasLtContext* handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  int device_index_ = 0;
  bool autotune_ = true;
  std::set<Key> outer_vector_refused_;  // outer-vector keys cuBLASLt had no plan for
  std::string outer_vector_refusal_;
  QuantizedGemmPath last_path_ = QuantizedGemmPath::kFp8OuterVectorScales;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace orochi::cuda

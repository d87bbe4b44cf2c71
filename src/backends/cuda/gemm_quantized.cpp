#include "backends/cuda/gemm_quantized.h"

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <string>

#include "backends/cuda/cublaslt_util.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/quantize_kernels.h"
#include "backends/cuda/op_checks.h"

namespace orochi::cuda {

const char* quantized_gemm_path_name(QuantizedGemmPath path) {
  switch (path) {
    case QuantizedGemmPath::kFp8OuterVectorScales: return "fp8 e4m3, cuBLASLt outer-vector scales";
    case QuantizedGemmPath::kFp8UnitScales: return "fp8 e4m3 to f32, dequantize epilogue";
    case QuantizedGemmPath::kInt8: return "int8 to int32, dequantize epilogue";
  }
  return "?";
}

// As GemmRunner (gemm.cpp): row-major y [M, N] is column-major [N, M], so we ask cuBLASLt for
// y^T = w · x^T with A = w (column-major [K, N], op T), B = x (column-major [K, M], op N), D
// column-major [N, M] ld N: the TN layout cuBLASLt's fp8 and int8 kernels require. cuBLAS's rows are
// our N, so A's outer-vector scale is w's per-channel vector [N] and B's is x's per-token vector [M].
struct QuantizedGemmRunner::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool int8 = false;
  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

Expected<std::unique_ptr<QuantizedGemmRunner>> QuantizedGemmRunner::create(int device_index, size_t workspace_bytes) {
  std::unique_ptr<QuantizedGemmRunner> runner(new QuantizedGemmRunner());
  runner->device_index_ = device_index;
  OROCHI_RETURN_IF_ERROR(create_handle_and_workspace(device_index, workspace_bytes, "quantized GEMM workspace",
                                                     "free GPU memory", &runner->handle_,
                                                     &runner->workspace_));
  runner->workspace_bytes_ = workspace_bytes;
  return runner;
}

QuantizedGemmRunner::~QuantizedGemmRunner() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
  if (workspace_) {
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    cudaSetDevice(device_index_);
    cudaFree(workspace_);
    cudaSetDevice(previous);
  }
}

void QuantizedGemmRunner::check_operands(const RowQuantized& x, const RowQuantized& w, const Tensor* bias,
                                         const Tensor& y) const {
  const DType format = x.codes.defined() ? x.codes.dtype() : DType::kF32;
  OROCHI_CHECK(format == DType::kF8E4M3 || format == DType::kI8, "quantized linear: codes are f8e4m3 or i8, got ",
               detail::describe_on_device(x.codes));
  detail::require_cuda(x.codes, format, "quantized linear input codes");
  detail::require_cuda(w.codes, format, "quantized linear weight codes (same format as the input)");
  detail::require_cuda(x.scales, DType::kF32, "quantized linear input scales");
  detail::require_cuda(w.scales, DType::kF32, "quantized linear weight scales");
  detail::require_cuda(y, DType::kBF16, "quantized linear output");
  OROCHI_CHECK(x.codes.ndim() == 2 && w.codes.ndim() == 2 && x.codes.dim(1) == w.codes.dim(1),
               "quantized linear: input ", x.codes.describe(), " does not match weight ", w.codes.describe());
  const int64_t M = x.codes.dim(0), N = w.codes.dim(0);
  OROCHI_CHECK(x.scales.numel() == M && w.scales.numel() == N, "quantized linear: scales ", x.scales.describe(), " and ",
               w.scales.describe(), " for ", M, " tokens and ", N, " channels");
  OROCHI_CHECK(y.shape() == (Shape{M, N}), "quantized linear: output ", y.describe(), ", expected [", M, ", ", N, "]");
  if (bias) {
    detail::require_cuda(*bias, DType::kBF16, "quantized linear bias");
    OROCHI_CHECK(bias->numel() == N, "quantized linear bias ", bias->describe(), " for ", N, " outputs");
  }
  for (const Tensor* t : {&x.scales, &w.codes, &w.scales, &y}) detail::require_same_device(x.codes, *t, "quantized linear");
  OROCHI_CHECK(x.codes.device().index == device_index_, "quantized linear: tensors on ", device_name(x.codes.device()),
               ", runner on cuda:", device_index_);
}

Expected<QuantizedGemmRunner::Plan*> QuantizedGemmRunner::plan_for(const Key& key, const Operands& op) {
  if (auto it = plans_.find(key); it != plans_.end()) return it->second.get();
  auto plan = std::make_unique<Plan>();
  const bool int8 = key.path == QuantizedGemmPath::kInt8;
  const bool outer = key.path == QuantizedGemmPath::kFp8OuterVectorScales;
  plan->int8 = int8;
  const cudaDataType_t in_type = int8 ? CUDA_R_8I : CUDA_R_8F_E4M3;
  const cudaDataType_t d_type = int8 ? CUDA_R_32I : (outer ? CUDA_R_16BF : CUDA_R_32F);
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&plan->desc, int8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                                                         int8 ? CUDA_R_32I : CUDA_R_32F));
  OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T));
  OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N));
  if (!int8)
    OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<int8_t>(key.fast_accum)));
  if (outer) {
    const auto mode = static_cast<int32_t>(CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F);
    OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode));
    OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode));
    OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, op.w_scale));
    OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, op.x_scale));
    if (key.bias) {
      OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS));
      OROCHI_CUBLAS_RETURN_IF_ERROR(
          set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(CUDA_R_16BF)));
      OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, op.bias));
    }
  }
  const auto M = static_cast<uint64_t>(key.M), N = static_cast<uint64_t>(key.N), K = static_cast<uint64_t>(key.K);
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->a, in_type, K, N, key.K));  // w
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->b, in_type, K, M, key.K));  // x
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->d, d_type, N, M, key.N));   // y or accumulator

  cublasLtMatmulPreference_t pref = nullptr;
  OROCHI_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  std::array<cublasLtMatmulHeuristicResult_t, kMaxCandidates> results{};
  int found = 0;
  const bool tune = autotune_ && static_cast<double>(key.M) * static_cast<double>(key.N) * static_cast<double>(key.K) >= kTuneMinMacs;
  cublasStatus_t s = set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace_bytes_));
  if (s == CUBLAS_STATUS_SUCCESS) s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_w);
  if (s == CUBLAS_STATUS_SUCCESS) s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_x);
  if (s == CUBLAS_STATUS_SUCCESS) s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_y);
  if (s == CUBLAS_STATUS_SUCCESS) s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_y);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d, pref,
                                       tune ? kMaxCandidates : 1, results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  const std::string shape = "[" + std::to_string(key.M) + ", " + std::to_string(key.K) + "] x [" +
                            std::to_string(key.N) + ", " + std::to_string(key.K) + "]^T (" +
                            quantized_gemm_path_name(key.path) + (key.fast_accum ? ", fast accumulation" : "") + ")";
  if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED)
    return cublas_status(s, ("cuBLASLt heuristic for " + shape).c_str());
  if (found == 0 || s == CUBLAS_STATUS_NOT_SUPPORTED)
    return unsupported("cuBLASLt has no algorithm for the GEMM " + shape + " on cuda:" + std::to_string(device_index_));
  int best = 0;
  if (tune && found > 1) {
    OROCHI_ASSIGN_OR_RETURN(best, fastest_candidate(results.data(), found, workspace_bytes_, op.stream,
                                                    [&](const cublasLtMatmulHeuristicResult_t& r) {
                                                      return matmul(*plan, &r.algo, r.workspaceSize, op) ==
                                                             CUBLAS_STATUS_SUCCESS;
                                                    }));
  }
  plan->algo = results[best].algo;
  plan->workspace = results[best].workspaceSize;
  Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

int QuantizedGemmRunner::matmul(const Plan& plan, const void* algo, size_t workspace, const Operands& op) {
  // alpha 1, beta 0 in the plan's scale type: int32 for the int8 GEMM, f32 for fp8.
  const int32_t one_i = 1, zero_i = 0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const void* alpha = plan.int8 ? static_cast<const void*>(&one_i) : &one_f;
  const void* beta = plan.int8 ? static_cast<const void*>(&zero_i) : &zero_f;
  return cublasLtMatmul(handle_, plan.desc, alpha, op.w, plan.a, op.x, plan.b, beta, op.d, plan.d, op.d, plan.d,
                        static_cast<const cublasLtMatmulAlgo_t*>(algo), workspace_, workspace, op.stream);
}

Status QuantizedGemmRunner::run(const Plan& plan, const Operands& op) {
  return cublas_status(static_cast<cublasStatus_t>(matmul(plan, &plan.algo, plan.workspace, op)),
                       "cublasLtMatmul (quantized linear)");
}

Status QuantizedGemmRunner::linear(const RowQuantized& x, const RowQuantized& w, const Tensor* bias, const Tensor& y,
                                   DeviceArena& scratch, cudaStream_t stream, const QuantizedGemmOptions& options) {
  return linear_with(x, w, bias, y, &scratch, nullptr, stream, options);
}

Status QuantizedGemmRunner::linear(const RowQuantized& x, const RowQuantized& w, const Tensor* bias, const Tensor& y,
                                   const Tensor& accumulator, cudaStream_t stream, const QuantizedGemmOptions& options) {
  OROCHI_CHECK(accumulator.defined() && accumulator.is_contiguous() && dtype_size(accumulator.dtype()) == 4,
               "quantized linear: the accumulator must be a contiguous tensor of 4-byte elements, got ",
               detail::describe_on_device(accumulator));
  detail::require_same_device(x.codes, accumulator, "quantized linear accumulator");
  return linear_with(x, w, bias, y, nullptr, &accumulator, stream, options);
}

Status QuantizedGemmRunner::accumulate_and_dequantize(Key key, Operands op, int64_t M, bool int8, void* y_rows) {
  const int64_t N = key.N;
  key.M = M;
  key.align_x = alignment_of(op.x);
  key.align_y = alignment_of(op.d);
  OROCHI_ASSIGN_OR_RETURN(Plan * plan, plan_for(key, op));
  OROCHI_RETURN_IF_ERROR(run(*plan, op));
  const auto* xs = static_cast<const float*>(op.x_scale);
  const auto* ws = static_cast<const float*>(op.w_scale);
  const auto* b = static_cast<const __nv_bfloat16*>(op.bias);
  auto* y = static_cast<__nv_bfloat16*>(y_rows);
  const cudaError_t err =
      int8 ? kernels::launch_dequantize_accumulator_i32(static_cast<const int32_t*>(op.d), xs, ws, b, y, M, N, op.stream)
           : kernels::launch_dequantize_accumulator_f32(static_cast<const float*>(op.d), xs, ws, b, y, M, N, op.stream);
  return detail::launch_status(err, "quantized linear dequantize epilogue");
}

Status QuantizedGemmRunner::linear_with(const RowQuantized& x, const RowQuantized& w, const Tensor* bias,
                                        const Tensor& y, DeviceArena* scratch, const Tensor* accumulator,
                                        cudaStream_t stream, const QuantizedGemmOptions& options) {
  check_operands(x, w, bias, y);
  const int64_t M = x.rows(), N = w.rows(), K = x.cols();
  const bool int8 = x.codes.dtype() == DType::kI8;
  if (K % 16 != 0 || N % 8 != 0)
    return unsupported("quantized linear: [" + std::to_string(M) + ", " + std::to_string(K) + "] x [" +
                       std::to_string(N) + ", " + std::to_string(K) +
                       "]^T needs K a multiple of 16 and N of 8 (cuBLASLt's fp8/int8 kernels read and write 16-byte "
                       "rows): keep this layer in bf16 or pad it");
  if (alignment_of(x.codes.raw_data()) < 16 || alignment_of(w.codes.raw_data()) < 16)
    return unsupported("quantized linear: code tensors must start on 16-byte boundaries (input at " +
                       std::to_string(alignment_of(x.codes.raw_data())) + ", weight at " +
                       std::to_string(alignment_of(w.codes.raw_data())) + ")");
  if (M == 0 || N == 0) return Status::ok();

  Operands op{x.codes.raw_data(), w.codes.raw_data(), y.raw_data(), x.scales.raw_data(), w.scales.raw_data(),
              bias ? bias->raw_data() : nullptr, stream};
  Key key{M, N, K, QuantizedGemmPath::kInt8, false, false,
          alignment_of(x.codes.raw_data()), alignment_of(w.codes.raw_data()), alignment_of(y.raw_data()),
          bias ? alignment_of(bias->raw_data()) : 0};
  if (!int8) {
    key.fast_accum = options.fast_accum;
    key.path = QuantizedGemmPath::kFp8OuterVectorScales;
    key.bias = bias != nullptr;
    if (!options.fp8_unit_scales && !outer_vector_refused_.contains(key)) {
      Expected<Plan*> plan = plan_for(key, op);
      if (plan.has_value()) {
        // Per-call pointers: the scales and bias of this call (the plan may come from the cache).
        OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc((*plan)->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, op.w_scale));
        OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc((*plan)->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, op.x_scale));
        if (bias) OROCHI_CUBLAS_RETURN_IF_ERROR(set_desc((*plan)->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, op.bias));
        last_path_ = key.path;
        return run(**plan, op);
      }
      // No such algorithm, or a cuBLASLt / GPU that refuses the scale mode itself: this shape takes
      // the unit-scales path from now on, and the reason is kept for reports.
      outer_vector_refused_.insert(key);
      outer_vector_refusal_ = plan.status().message();
    }
    key.path = QuantizedGemmPath::kFp8UnitScales;
    key.bias = false;
  }
  last_path_ = key.path;
  // Accumulator paths: the codes' product into acc [rows, N], then our epilogue into y.
  if (accumulator != nullptr) {
    const int64_t chunk = accumulator->numel() / N;
    if (chunk < 1)
      return Status(ErrorCode::kInternal,
                    "quantized linear: the accumulator holds " + std::to_string(accumulator->numel()) +
                        " elements, fewer than one row of " + std::to_string(N) + " outputs");
    const size_t x_row = static_cast<size_t>(K), y_row = static_cast<size_t>(N) * 2;
    for (int64_t r0 = 0; r0 < M; r0 += chunk) {
      const int64_t rows = std::min(chunk, M - r0);
      Operands part = op;
      part.x = static_cast<const char*>(op.x) + static_cast<size_t>(r0) * x_row;
      part.x_scale = static_cast<const float*>(op.x_scale) + r0;
      part.d = accumulator->raw_data();
      OROCHI_RETURN_IF_ERROR(accumulate_and_dequantize(
          key, part, rows, int8, static_cast<char*>(y.raw_data()) + static_cast<size_t>(r0) * y_row));
    }
    return Status::ok();
  }
  const size_t mark = scratch->mark();
  Expected<Tensor> acc = scratch->tensor({M, N}, int8 ? DType::kI32 : DType::kF32);
  if (!acc)
    return Status(acc.status().code(), "quantized linear: the [" + std::to_string(M) + ", " + std::to_string(N) +
                                           "] accumulator of the " + quantized_gemm_path_name(key.path) +
                                           " path: " + acc.status().message());
  op.d = acc->raw_data();
  Status status = accumulate_and_dequantize(key, op, M, int8, y.raw_data());
  scratch->reset(mark);
  return status;
}

}  // namespace orochi::cuda
